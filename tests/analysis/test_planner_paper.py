"""The MegaScale-Infer paper's own results, recomputed by the planner (paper preset).

Preset: s = 650 (median input 571 + half the median output 159), TBT SLO 150 ms, m in
3..4, the co-located baseline on the fewest whole 8-GPU nodes paying the same modelled
costs as the plan (issue 27: ``colocated.SHARED_COSTS``), catalogue prices (L20 = 1)
and roofline Ta/Te with the TP cost model. Each figure's qualitative result is pinned:
who wins, where the peak lies (within a stated band). Which hold and why one does not:
docs/planner.md, "Paper vs planner". Numbers are the paper's (seed
003_98839054d58de874: Figures 9, 14, 15, Table 3); tolerances are stated per test and in
docs/planner.md ("Paper vs planner"), with the known differences tested as such so the
docs table cannot drift from the code.
"""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.planner import GPUS, MODELS, PlanResult, Workload, search_heterogeneous, search_plans
from analysis.planner.colocated import colocated_plan
from analysis.planner.paper import (
    PAPER_DBRX_PEAK_DP,
    PAPER_M1_TO_M2,
    PAPER_M2_TO_M3,
    micro_batch_ablation,
)

PAPER_MODELS = ("mixtral_8x22b", "dbrx", "scaled_moe")
PRESET = Workload()  # s = 650, SLO 150 ms


def _hetero(model: str) -> PlanResult:
    return search_heterogeneous(MODELS[model], PRESET, [GPUS["H20"], GPUS["L40S"]])


def test_preset_is_the_papers_workload() -> None:
    assert (PRESET.seq_len, PRESET.slo_tbt_ms) == (650.0, 150.0)


@pytest.mark.parametrize("model", PAPER_MODELS)
def test_micro_batch_ablation_figure_14(model: str) -> None:
    """m 1 -> 2 ≈ 1.9x (tolerance ±0.1), m 2 -> 3 within ±0.2 of the paper's ratio,
    m 3 -> 4 marginal (< 1.1x); micro-batch size fixed at the A800 best plan's."""
    best = search_plans(MODELS[model], PRESET, GPUS["A800"]).best
    assert best is not None
    ratios = micro_batch_ablation(best, MODELS[model].num_layers)["ratio_to_previous"].tolist()
    assert ratios[1] == pytest.approx(PAPER_M1_TO_M2, abs=0.1)
    assert ratios[2] == pytest.approx(PAPER_M2_TO_M3[model], abs=0.2)
    assert 1.0 <= ratios[3] < 1.1


def test_m2_to_m3_gain_grows_with_model_size() -> None:
    """The paper: the third micro-batch helps larger models more (1.10 < 1.28 < 1.38)."""
    gains = []
    for model in PAPER_MODELS:
        best = search_plans(MODELS[model], PRESET, GPUS["A800"]).best
        assert best is not None
        gains.append(micro_batch_ablation(best, MODELS[model].num_layers)["ratio_to_previous"][2])
    assert gains == sorted(gains)


@pytest.mark.parametrize("model", PAPER_MODELS)
def test_h20_attention_and_l40s_experts_are_chosen(model: str) -> None:
    """Figure 9: the heterogeneous plan puts attention on H20 and experts on L40S, and it
    meets all three pipeline constraints. TP is not free: no TP-8 expert node over PCIe."""
    best = _hetero(model).best
    assert best is not None
    assert (best.attention_gpu, best.expert_gpu) == ("H20", "L40S")
    assert best.constraints_met
    assert best.tpe <= 4


@pytest.mark.parametrize("model", PAPER_MODELS)
def test_heterogeneous_beats_colocated_h20_per_cost(model: str) -> None:
    """Figure 9a: 1.86x over TensorRT-LLM (co-located) on H20 per cost. We reproduce the
    direction (> 1x); the size differs per model (docs: 1.2x / 1.7x / 2.1x)."""
    r = _hetero(model)
    colo_h20 = colocated_plan(MODELS[model], PRESET, GPUS["H20"], 8)
    assert r.best is not None and colo_h20 is not None
    assert 1.0 < r.best.tput_per_cost / colo_h20.tput_per_cost < 3.0


@pytest.mark.parametrize("model", ["mixtral_8x22b", "scaled_moe"])
def test_colocated_on_l40s_is_worse_per_cost_than_on_h20(model: str) -> None:
    """The paper's baselines on L40S "perform worse" than on H20 (48 GB forces more
    GPUs, PCIe is slow). Issue 16 had co-located L40S 2.2x *better*; not any more."""
    spec = MODELS[model]
    h20 = search_plans(spec, PRESET, GPUS["H20"]).colocated
    l40s = search_plans(spec, PRESET, GPUS["L40S"]).colocated
    assert h20 is not None and l40s is not None
    assert h20.tput_per_cost > l40s.tput_per_cost


def test_known_difference_dbrx_colocated_l40s_edges_h20() -> None:
    """Documented difference: for DBRX our co-located L40S node is slightly better per
    cost than H20 (within 15 %), the paper says worse; see docs/planner.md."""
    h20 = search_plans(MODELS["dbrx"], PRESET, GPUS["H20"]).colocated
    l40s = search_plans(MODELS["dbrx"], PRESET, GPUS["L40S"]).colocated
    assert h20 is not None and l40s is not None
    assert 1.0 < l40s.tput_per_cost / h20.tput_per_cost < 1.15


def _dbrx_sweep() -> pd.DataFrame:
    r = search_plans(MODELS["dbrx"], PRESET, GPUS["A800"])
    assert r.best is not None and r.best.m == 3  # Figure 15 fixes m = 3
    sweep = r.na_sweep
    return sweep.loc[(sweep["na"] <= 16) & sweep["feasible"].astype(bool)].set_index("na")


def test_dbrx_throughput_per_gpu_peaks_inside_and_falls_on_both_sides() -> None:
    """Figure 15 (DBRX, m = 3, DP 1..16): per-GPU throughput rises with DP, peaks, then
    falls. Paper peak DP = 8; the stated band is 8 ± 6 (ours: 13 for the A800 best plan's
    tpa = 1, tpe = 2, and the fall after it is weak, 3 % by DP 16). DP = 4 gives about
    half the peak (paper ~50 %; ours 0.3-0.7)."""
    tpg = _dbrx_sweep()["tput_per_gpu"].astype(float)
    peak = int(tpg.idxmax())
    assert 1 < peak < 16
    assert PAPER_DBRX_PEAK_DP - 6 <= peak <= PAPER_DBRX_PEAK_DP + 6
    assert tpg[1] < 0.5 * tpg[peak] and tpg[16] < tpg[peak]
    assert 0.3 < tpg[4] / tpg[peak] < 0.7
    rising = tpg.loc[:peak].diff().dropna()
    assert (rising > 0).all()


def test_disaggregation_beats_colocated_per_gpu_for_scaled_moe_on_ampere() -> None:
    """Figure 8a on 80 GB Ampere (A800 in our catalogue), against the fair baseline:
    disaggregation wins for Scaled-MoE, whose co-located baseline needs two nodes (its
    all-to-all crosses the NIC), by less than the paper's 1.90x."""
    r = search_plans(MODELS["scaled_moe"], PRESET, GPUS["A800"])
    assert r.best is not None and r.colocated is not None
    assert r.colocated.gpus == 16
    assert 1.0 < r.best.tput_per_gpu / r.colocated.tput_per_gpu < 1.9


@pytest.mark.parametrize("model", ["mixtral_8x22b", "dbrx"])
def test_known_difference_colocated_wins_per_gpu_for_one_node_models(model: str) -> None:
    """Documented difference (Fig. 8a does not hold for one-node models): with both sides
    paying the same modelled costs, one 8 x A800 node (experts already compute-bound at
    ~440-590 tokens each) beats the disaggregated plan per GPU by < 25 %; the paper
    measured 1.28x the other way against a TensorRT-LLM ~17 % below this model."""
    r = search_plans(MODELS[model], PRESET, GPUS["A800"])
    assert r.best is not None and r.colocated is not None and r.colocated.gpus == 8
    assert 0.75 < r.best.tput_per_gpu / r.colocated.tput_per_gpu < 1.0
