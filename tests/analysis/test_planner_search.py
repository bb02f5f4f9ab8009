"""Plan search: a hand-checked case, memory, constraint flags, heterogeneity, co-location,
the na sweep, JSON export and the ping-pong timeline."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from analysis.planner import (
    GPUS,
    MODELS,
    Fit,
    SearchOptions,
    Workload,
    search_heterogeneous,
    search_plans,
    timeline,
    user_fit,
)
from analysis.planner.catalog import GPUSpec, ModelSpec

# A toy where everything is exact in binary floating point: Ta = ba/16, Te = be/16 per
# expert, L = 1, E = 4, K = 1, a NIC so fast that Tc is ~1e-13 ms, and memory to spare.
TOY = ModelSpec("toy", 4, 1, 8, 8, 1, 1.0, 1e6, 1e6)
BIG = GPUSpec("big", 1000, 1000, 1000, 1.0, 100, 1e9, 1e9)
K = 0.0625
TOY_OPTIONS = SearchOptions(tp_choices=(1,), experts_per_node=(1,))


def toy_search(slo_ms: float = 6.25, **opt: object) -> object:
    return search_plans(
        TOY,
        Workload(seq_len=1, slo_tbt_ms=slo_ms),
        BIG,
        options=dataclasses.replace(TOY_OPTIONS, **opt),
        expert_fits={"big": user_fit(K, 0.0)},
        attention_fits={("big", 1): user_fit(K, 0.0)},
    )


def test_hand_checked_plan() -> None:
    # na = k1*E/(k3*K) = 4 balances Ta and Te. For na <= 4 tput/cost ~ m*na/((m+na/4)(na+4)),
    # for na >= 4 ~ m*na/((1+m*na/4)(na+4)); both peak at na = 4, m = 4. The SLO
    # m*L*Tf = 4 * ba/16 <= 6.25 gives ba = 25, B = ba*m*na = 400,
    # Ttotal = Ta+Te + Tf*(m*L-1) = 3.125 + 3*1.5625 = 7.8125 ms -> 51200 tokens/s, cost 8.
    r = toy_search()
    b = r.best
    assert (b.na, b.m, b.ba, b.batch, b.tpa, b.tpe) == (4, 4, 25, 400, 1, 1)
    assert b.ta_ms == b.te_ms == 1.5625
    assert b.t_total_ms == pytest.approx(7.8125)
    assert b.throughput == pytest.approx(51200, rel=1e-9)
    assert (b.gpus, b.cost) == (8, 8.0)
    assert b.tput_per_cost == pytest.approx(6400, rel=1e-9)
    assert b.tput_per_watt == pytest.approx(51200 / 800, rel=1e-9)
    assert b.na_balance == pytest.approx(4.0)
    assert all(c.met for c in b.constraints)


def test_na_sweep_peaks_at_the_balance_point() -> None:
    sweep = toy_search().na_sweep
    assert list(sweep["na"]) == list(range(1, len(sweep) + 1))
    assert int(sweep.loc[sweep["tput_per_gpu"].idxmax(), "na"]) == 4
    rising = sweep[sweep["na"] <= 4]["tput_per_gpu"].tolist()
    falling = sweep[sweep["na"] >= 4]["tput_per_gpu"].tolist()
    assert rising == sorted(rising) and falling == sorted(falling, reverse=True)


def test_tighter_slo_means_smaller_batch_same_shape() -> None:
    b = toy_search(slo_ms=3.0).best  # 4 * ba/16 <= 3 -> ba = 12
    assert (b.na, b.m, b.ba, b.batch) == (4, 4, 12, 192)
    assert b.tbt_ms <= 3.0


def test_no_plan_when_slo_is_below_one_token() -> None:
    r = toy_search(slo_ms=0.1)
    assert r.best is None and r.alternatives.empty
    assert any("no disaggregated plan" in n for n in r.notes)


def test_alternatives_are_feasible_and_sorted() -> None:
    r = toy_search()
    alts = r.alternatives
    assert (alts["tbt_ms"] <= 6.25).all()
    assert alts["tput_per_cost"].is_monotonic_decreasing
    assert alts["constraints_met"].all() and not r.broken["constraints_met"].any()
    assert len(alts) + len(r.broken) > 10


def test_memory_constraint_rules_out_small_attention_nodes() -> None:
    # 45 GB of attention weights: tpa=1 (0.9 * 48 GB) cannot hold them, tpa=2 can.
    model = dataclasses.replace(MODELS["mixtral_8x22b"], attention_param_bytes=45e9)
    r = search_plans(model, Workload(730, 150), GPUS["L40S"], options=SearchOptions(max_gpus=64))
    assert r.best is not None
    assert (r.alternatives["tpa"] >= 2).all()
    # and the KV cache of every plan fits its attention node
    b = r.best
    assert b.attention_mem_gb < b.attention_cap_gb
    assert b.expert_mem_gb < b.expert_cap_gb


def test_kv_capacity_caps_the_batch_when_the_slo_is_loose() -> None:
    r = search_plans(
        TOY,
        Workload(seq_len=1e6, slo_tbt_ms=1e6),
        BIG,
        options=TOY_OPTIONS,
        expert_fits={"big": user_fit(K, 0.0)},
        attention_fits={("big", 1): user_fit(K, 0.0)},
    )
    b = r.best
    kv_per_seq = 1e6 * TOY.kv_bytes_per_token_layer * TOY.kv_layers
    assert b.ba * b.m * kv_per_seq + TOY.attention_param_bytes < 0.9 * BIG.memory_bytes
    assert (b.ba + 1) * b.m * kv_per_seq + TOY.attention_param_bytes >= 0.9 * BIG.memory_bytes


def test_constraint_flags_match_their_numbers() -> None:
    r = search_plans(MODELS["dbrx"], Workload(730, 150), GPUS["A800"])
    alts = pd.concat([r.alternatives, r.broken.drop(columns="broken")], ignore_index=True)
    tf = alts[["ta_ms", "te_ms"]].astype(float).max(axis=1)
    assert (alts["comm_hidden_met"] == (alts["tc_ms"] < tf)).all()
    assert (alts["depth_met"] == (alts["m"] >= 2 * (1 + alts["tc_ms"] / tf) - 1e-9)).all()
    assert (alts["balance_met"] == ((alts["ta_ms"] - alts["te_ms"]).abs() <= 0.25 * tf)).all()
    assert alts["depth_met"].any() and not alts["depth_met"].all()
    names = [c.name for c in r.best.constraints]
    assert names == ["balance", "comm_hidden", "pipeline_depth"]


@pytest.mark.parametrize(
    ("h20_price", "l40s_price", "expected"),
    [
        (1.85, 1.08, ("H20", "L40S")),  # paper prices: bandwidth-rich attention
        (4.00, 1.08, ("L40S", "L40S")),  # H20 bandwidth no longer cheap: attention moves
        (1.85, 8.00, ("H20", "H20")),  # L40S compute no longer cheap: experts move
    ],
)
def test_heterogeneous_assignment_follows_prices(
    h20_price: float, l40s_price: float, expected: tuple[str, str]
) -> None:
    gpus = [
        dataclasses.replace(GPUS["H20"], price=h20_price),
        dataclasses.replace(GPUS["L40S"], price=l40s_price),
    ]
    r = search_heterogeneous(MODELS["mixtral_8x22b"], Workload(730, 150), gpus)
    assert (r.best.attention_gpu, r.best.expert_gpu) == expected
    pairs = set(zip(r.alternatives["attention_gpu"], r.alternatives["expert_gpu"], strict=True))
    assert len(pairs) == 4


def test_small_deployments_do_not_pay_against_the_paper_baseline() -> None:
    model, wl = MODELS["mixtral_8x22b"], Workload(730, 150)
    small = search_plans(model, wl, GPUS["A800"], options=SearchOptions(max_gpus=16))
    assert small.best.gpus <= 16
    # the paper's baseline: the fewest whole 8-GPU nodes that hold the model
    assert small.colocated.gpus == 8 and small.colocated.tbt_ms <= 150
    assert small.disaggregation_gain < 1.0


def test_colocated_baseline_size_can_be_pinned() -> None:
    model, wl = MODELS["mixtral_8x22b"], Workload(730, 150)
    r = search_plans(model, wl, GPUS["A800"], options=SearchOptions(colocated_gpus=16))
    assert r.colocated.gpus == 16


def test_tight_slo_leaves_no_disaggregated_plan_on_a_small_budget() -> None:
    model, opt = MODELS["mixtral_8x22b"], SearchOptions(max_gpus=24)
    tight = search_plans(model, Workload(730, 30), GPUS["A800"], options=opt)
    loose = search_plans(model, Workload(730, 80), GPUS["A800"], options=opt)
    # m >= 3 micro-batches over 56 layers cannot meet 30 ms; co-located still can
    assert tight.best is None and tight.colocated is not None
    assert loose.best is not None and loose.disaggregation_gain < 1.0


def test_to_json_round_trips_the_headline_numbers() -> None:
    r = toy_search()
    data = json.loads(r.to_json())
    assert data["best"]["na"] == 4 and data["best"]["batch"] == 400
    assert len(data["alternatives"]) == len(r.alternatives)
    assert data["best"]["constraints"][2]["name"] == "pipeline_depth"
    assert "NaN" not in r.to_json()


# --- timeline -----------------------------------------------------------------------------


def test_timeline_of_one_layer_follows_the_dependencies() -> None:
    plan = toy_search().best
    tl = timeline(plan)
    assert set(tl["lane"]) == {"attention", "M2N", "expert", "N2M"}
    assert len(tl) == 4 * plan.m
    for _mb, g in tl.groupby("micro_batch"):
        order = g.set_index("lane")
        assert order.loc["M2N", "start_ms"] >= order.loc["attention", "end_ms"]
        assert order.loc["expert", "start_ms"] >= order.loc["M2N", "end_ms"]
        assert order.loc["N2M", "start_ms"] >= order.loc["expert", "end_ms"]
    for _, lane in tl.groupby("lane"):
        lane = lane.sort_values("start_ms")
        assert (lane["start_ms"].iloc[1:].to_numpy() >= lane["end_ms"].iloc[:-1].to_numpy()).all()


def _attention_idle(plan: object, layers: int) -> float:
    att = timeline(plan, layers=layers).query("lane == 'attention'")
    span = att["end_ms"].max() - att["start_ms"].min()
    return float(span - (att["end_ms"] - att["start_ms"]).sum())


def test_pipeline_is_full_when_constraints_hold_and_has_bubbles_when_depth_fails() -> None:
    plan = toy_search().best  # Ta = Te, Tc ~ 0, m = 4: all three constraints met
    assert _attention_idle(plan, 3) == pytest.approx(0.0, abs=1e-9)
    slow = dataclasses.replace(plan, m=2, tc_ms=plan.ta_ms * 0.75)  # needs m >= 3.5
    assert _attention_idle(slow, 3) > 0.5 * plan.ta_ms
    deep = dataclasses.replace(plan, m=4, tc_ms=plan.ta_ms * 0.75)
    assert _attention_idle(deep, 3) == pytest.approx(0.0, abs=1e-9)


def _fitted(x_min: float, x_max: float) -> object:
    """The toy with its Te "fitted on stored sweeps" over be in [x_min, x_max]."""
    return search_plans(
        TOY,
        Workload(seq_len=1, slo_tbt_ms=6.25),
        BIG,
        options=TOY_OPTIONS,
        expert_fits={"big": Fit(K, 0.0, "fit", n_points=5, r2=1.0, x_min=x_min, x_max=x_max)},
        attention_fits={("big", 1): user_fit(K, 0.0)},
    )


def test_a_fitted_te_is_not_extrapolated_more_than_twice_its_range() -> None:
    """Issue 27: the hand-checked plan needs be = 25 tokens per expert. Fitted over
    4..100 it is inside the range; fitted over 2..10 the batch is capped at 2 x 10 = 20
    and the plan says it is extrapolated; no plan anywhere goes past 20."""
    inside = _fitted(4, 100)
    assert inside.best.be == 25 and not inside.best.extrapolated
    capped = _fitted(2, 10)
    assert capped.best is not None and capped.best.be <= 20 and capped.best.extrapolated
    assert (capped.best.te_be_min, capped.best.te_be_max) == (2, 10)
    assert capped.alternatives["be"].max() <= 20
    assert capped.alternatives["extrapolated"].any()
    assert capped.best.tput_per_cost < inside.best.tput_per_cost
