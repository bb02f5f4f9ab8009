"""The co-located baseline pays the same modelled costs as the disaggregated plan
(issue 27): a split expert pays the TP cost an expert node pays, a fitted Te is held to
the same range, and the list of shared costs is what the page states."""

from __future__ import annotations

import pytest

from analysis.planner import GPUS, MODELS, Fit, Workload, colocated_plan, search_plans
from analysis.planner.colocated import SHARED_COSTS
from analysis.planner.perf_model import expert_node_time_ms, expert_time_roofline

MIX = MODELS["mixtral_8x22b"]  # 8 experts
A800 = GPUS["A800"]


def test_an_expert_split_over_two_gpus_pays_the_expert_nodes_tp_cost() -> None:
    """16 GPUs, 8 experts: each expert on 2 GPUs, charged like an expert node of TP 2
    (all-reduce + narrow shards), not as half an expert for free."""
    plan = colocated_plan(MIX, Workload(), A800, 16)
    assert plan is not None
    efit = expert_time_roofline(MIX, A800)
    be = plan.batch * MIX.top_k / MIX.num_experts
    assert plan.be == pytest.approx(be)
    assert plan.te_ms == pytest.approx(expert_node_time_ms(efit, be, 1, 2, model=MIX, gpu=A800))
    assert plan.te_ms > 0.5 * efit.predict(be) + efit.overhead_ms


def test_a_fitted_te_holds_the_baseline_to_twice_its_range() -> None:
    """The roofline's slope and intercept, but "fitted" over 4..40 tokens per expert:
    the co-located batch is capped at be = 80 (it reaches ~440 unbounded) and marked
    extrapolated, as the plan would be."""
    roof = expert_time_roofline(MIX, A800)
    free = colocated_plan(MIX, Workload(), A800, 8)
    fit = Fit(roof.slope_ms, roof.intercept_ms, "fit", n_points=9, r2=1.0, x_min=4, x_max=40)
    held = colocated_plan(MIX, Workload(), A800, 8, expert_fit=fit)
    assert free is not None and held is not None
    assert free.be > 400 and not free.extrapolated
    assert 40 < held.be <= 80 and held.extrapolated
    r = search_plans(MIX, Workload(), A800, expert_fits={"A800": fit})
    assert r.best is not None and r.best.be <= 80
    assert r.colocated is not None and r.colocated.be <= 80


def test_the_stated_costs_name_each_shared_term() -> None:
    text = " ".join(SHARED_COSTS)
    for term in ("Ta law", "Te law", "TP all-reduce", "2x beyond", "utilisation", "SLO"):
        assert term in text
