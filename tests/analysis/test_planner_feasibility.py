"""Only feasible plans are offered (issue 27): plans that break a ping-pong pipeline
constraint are listed apart naming what they break, and "nothing fits" names what binds
(TP choice, memory, GPU count, SLO, Te fit range, pipeline constraints)."""

from __future__ import annotations

import dataclasses

import pytest

from analysis.planner import GPUS, MODELS, Fit, SearchOptions, Workload, search_plans
from analysis.planner.feasibility import CONSTRAINT_LABELS

DSV4 = MODELS["deepseek_v4_pro"]
GB300 = GPUS["GB300"]


def test_offered_plans_meet_every_constraint_and_the_rest_are_listed_apart() -> None:
    r = search_plans(MODELS["dbrx"], Workload(), GPUS["A800"])
    assert r.best is not None and r.best.constraints_met
    assert len(r.alternatives) and r.alternatives["constraints_met"].all()
    assert len(r.broken) and not r.broken["constraints_met"].any()
    for _, row in r.broken.iterrows():
        named = set(str(row["broken"]).split("; "))
        flags = {
            CONSTRAINT_LABELS["balance"]: row["balance_met"],
            CONSTRAINT_LABELS["comm_hidden"]: row["comm_hidden_met"],
            CONSTRAINT_LABELS["pipeline_depth"]: row["depth_met"],
        }
        assert named == {label for label, met in flags.items() if not met}


def test_nothing_offered_when_every_plan_breaks_a_constraint() -> None:
    """kimi_k2 on GB300 (roofline Te): plans fit memory and the SLO, but M2N over the NIC
    is slower than the compute it should hide, so none meets all three constraints."""
    r = search_plans(MODELS["kimi_k2"], Workload(), GB300)
    assert r.best is None and r.alternatives.empty and len(r.broken) > 100
    assert r.binding is not None and r.binding[0] == "pipeline"
    assert "Tc < Tf" in r.binding[1] and f"{len(r.broken)} plan(s)" in r.binding[1]
    assert r.colocated is not None  # the fallback the verdict points to


@pytest.mark.parametrize(
    ("model", "workload", "options", "code", "words"),
    [
        # issue 27: both answered "nothing fits the memory and the SLO"
        (DSV4, Workload(), SearchOptions(max_gpus=2), "gpu_count", "needs 7 GPUs"),
        (DSV4, Workload(), SearchOptions(tp_choices=(72,)), "tp_choice", "GB300 node (4 GPUs"),
        (DSV4, Workload(slo_tbt_ms=1.0), SearchOptions(), "slo", "1 ms TBT SLO"),
        (
            dataclasses.replace(DSV4, attention_param_bytes=2e12),
            Workload(),
            SearchOptions(),
            "memory",
            "attention-side weights (2000 GB)",
        ),
        (DSV4, Workload(seq_len=5e6), SearchOptions(), "memory", "KV cache of one sequence"),
    ],
)
def test_nothing_fits_names_the_binding_reason(
    model: object, workload: Workload, options: SearchOptions, code: str, words: str
) -> None:
    r = search_plans(model, workload, GB300, options=options)  # type: ignore[arg-type]
    assert r.best is None and r.binding is not None
    assert r.binding[0] == code and words in r.binding[1], r.binding
    assert any(r.binding[1] in n for n in r.notes)


def test_a_te_fit_range_no_plan_can_reach_is_the_binding_reason() -> None:
    far = Fit(4e-5, 9e-3, "fit", n_points=20, r2=0.99, x_min=1e6, x_max=2e6)
    r = search_plans(DSV4, Workload(), GB300, expert_fits={"GB300": far})
    assert r.best is None and r.binding is not None and r.binding[0] == "te_range"
    assert "half the fitted low end" in r.binding[1]
