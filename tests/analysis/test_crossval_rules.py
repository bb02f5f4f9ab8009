"""analysis.crossval_rules / crossval_guide / crossval_sweeps on hand-built ledgers: each
rule, each cause, the reason text, the guide's numbers, and the sweep plan's grouping."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.crossval import layout_family, ledger
from analysis.crossval_guide import GUIDE_TABLE, compare, guide_summary
from analysis.crossval_rules import RULES, apply_rule, causes, check_rule, match_flags
from analysis.crossval_sweeps import (
    coverage,
    family_modes,
    row_command,
    script_name,
    sweep_plan,
    sweep_script,
)
from tests.analysis.test_crossval import cand, workload


def hyb(backend: str, score: float, tp: int, ep: int) -> dict[str, Any]:
    """A hybrid DTP<tp>EP<ep> candidate at world size 8."""
    return cand(backend, score, **{c.MOE_EP_SIZE: ep, c.MOE_TP_SIZE: tp,
                                   c.PARALLEL_MODE: f"DTP{tp}EP{ep}"})  # fmt: skip


def four_cases() -> pd.DataFrame:
    """Deployed CUTLASS DEP8 everywhere; the candidates make one workload per cause.

    w_layout: a hybrid TRTLLM layout wins (0.8), CUTLASS DEP8 (1.0) best of the EP family
              -> Mismatch under exact, Match under same_layout; cause "rule".
    w_tie:    TRTLLM DEP8 0.98 beats CUTLASS DEP8 1.0 by 2.04 % -> within the 3 % band.
    w_win:    TRTLLM DEP8 0.5 beats CUTLASS 1.0 by 100 % -> different winner.
    w_hybk:   CUTLASS DTP2EP4 0.9 beats CUTLASS DEP8 1.0: same backend, other layout.
    w_none:   a world size 16 workload: no data.
    """
    ws = [workload("w_layout", **{c.NUM_TOKENS: 64}), workload("w_tie", **{c.NUM_TOKENS: 128}),
          workload("w_win", **{c.NUM_TOKENS: 256}), workload("w_hybk", **{c.NUM_TOKENS: 512}),
          workload("w_none", **{c.WORLD_SIZE: 16, c.MOE_EP_SIZE: 16})]  # fmt: skip
    cs = [
        hyb("TRTLLM", 0.8, 2, 4) | {c.NUM_TOKENS: 64}, cand("CUTLASS", 1.0, **{c.NUM_TOKENS: 64}),
        cand("TRTLLM", 0.98, **{c.NUM_TOKENS: 128}), cand("CUTLASS", 1.0, **{c.NUM_TOKENS: 128}),
        cand("TRTLLM", 0.5, **{c.NUM_TOKENS: 256}), cand("CUTLASS", 1.0, **{c.NUM_TOKENS: 256}),
        hyb("CUTLASS", 0.9, 2, 4) | {c.NUM_TOKENS: 512},
        cand("CUTLASS", 1.0, **{c.NUM_TOKENS: 512}),
    ]  # fmt: skip
    return ledger(pd.DataFrame(ws), pd.DataFrame(cs))


def by_id(frame: pd.DataFrame, col: str) -> dict[str, Any]:
    return dict(zip(frame[cc.WORKLOAD_ID], frame[col], strict=True))


def test_layout_family() -> None:
    assert [layout_family(8, 1), layout_family(1, 8), layout_family(4, 2)] == ["EP", "TP", "hybrid"]
    assert layout_family(1, 1) == "EP" and layout_family(None, 1) is None


def test_each_rule_decides_its_own_way() -> None:
    lg = four_cases()
    got = {r: by_id(apply_rule(lg, r), cc.STATUS) for r in RULES}
    assert got["exact"] == {"w_layout": "Mismatch", "w_tie": "Mismatch", "w_win": "Mismatch",
                            "w_hybk": "Mismatch", "w_none": "no data"}  # fmt: skip
    assert got["backend"] == {**got["exact"], "w_hybk": "Match"}
    assert got["within_noise"] == {**got["exact"], "w_tie": "Match"}
    assert got["same_layout"] == {**got["exact"], "w_layout": "Match", "w_hybk": "Match"}
    # A wider noise band turns the 100 % winner into a Match too; gap 100 % is inclusive.
    wide = by_id(apply_rule(lg, "within_noise", noise_pct=100), cc.STATUS)
    assert wide["w_win"] == "Match" and wide["w_layout"] == "Match"  # 25 % gap
    flags = match_flags(lg)
    assert list(flags.columns) == list(RULES) and not flags.loc[4].any()


def test_causes_in_priority_order() -> None:
    lg = four_cases()
    assert by_id(lg.assign(cause=causes(lg)), "cause") == {
        "w_layout": "rule", "w_tie": "tie within noise", "w_win": "different winner",
        "w_hybk": "rule", "w_none": "no data",
    }  # fmt: skip


def test_reason_on_every_row_and_command_for_no_data() -> None:
    lg = four_cases()
    ruled = apply_rule(lg, "exact", command=row_command)
    reasons = by_id(ruled, cc.REASON)
    assert reasons["w_win"] == (
        "Mismatch (exact): differs backend: CUTLASS->TRTLLM; deployed config rank 2 of 2, "
        "100.0 % slower than the best"
    )
    assert "moe_ep_size: 8->4; moe_tp_size: 1->2" in reasons["w_hybk"]
    cmd = by_id(ruled, cc.SWEEP_COMMAND)["w_none"]
    assert reasons["w_none"].endswith("; run: " + cmd)
    # 16 ranks on 8-GPU H200 nodes: two hosts under srun, not a single-host mpirun
    assert (
        "--world_size 16" in cmd and "srun --mpi=pmix -N 2 --ntasks 16 --ntasks-per-node 8" in cmd
    )
    assert "mpirun" not in cmd
    assert "--parallel_mode DEP DTP DTP4EP4" in cmd and "--balanced_total_num_tokens 192" in cmd
    assert "--no_cuda_graph" not in cmd  # decode: CUDA graph on
    assert ruled[cc.SWEEP_COMMAND].notna().sum() == 1
    ok = apply_rule(lg, "same_layout")
    assert by_id(ok, cc.REASON)["w_layout"] == (
        "Match (same_layout): best of the deployed layout family = deployed config; "
        "deployed config rank 2 of 2, 25.0 % slower than the best"
    )
    # Deployed config never measured: said so.
    lone = ledger(pd.DataFrame([workload()]), pd.DataFrame([cand("TRTLLM", 1.0)]))
    text = apply_rule(lone, "within_noise")[cc.REASON].iloc[0]
    assert text.startswith("Mismatch (within_noise)") and "deployed config not measured" in text


def test_unknown_rule_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match="rule: must be one of exact, backend"):
        check_rule("loose")


def test_guide_table_carries_the_published_numbers() -> None:
    dsv4 = GUIDE_TABLE[0]
    assert (dsv4.model, dsv4.hardware) == ("deepseek_v4_pro", "GB300")
    assert (dsv4.prefill_match + dsv4.decode_match, dsv4.prefill_n + dsv4.decode_n) == (92, 108)
    pub = guide_summary()
    assert pub.iloc[0]["Match"] == "92/108 (85.19%, prefill 54/54, decode 38/54)"
    assert pub.iloc[4]["Mismatch"] == "54/90" and pub.iloc[4]["Flat"] == "49/54"
    assert len(pub) == 6


def test_compare_breaks_the_difference_down() -> None:
    ws = [workload(f"d{i}", **{c.MODEL: "glm_5", c.HARDWARE: "GB300"}) for i in range(3)]
    cs = [cand("CUTLASS", 1.0, **{c.MODEL: "glm_5", c.HARDWARE: "GB300"})]
    ws[2] = {**ws[2], c.WORLD_SIZE: 4}  # no data
    out = compare(ledger(pd.DataFrame(ws), pd.DataFrame(cs)))
    row = out[
        (out[c.MODEL] == "glm_5") & (out[c.HARDWARE] == "GB300") & (out[cc.PHASE] == "decode")
    ]
    r = row.iloc[0]
    assert (r["guide_match"], r["guide_n"], r["ours_match"], r["ours_n"]) == (35, 45, 2, 2)
    assert (r["match_delta"], r["n_no_data"], r["n_rule"]) == (33, 1, 0)
    assert len(out) == 12 and out["ours_n"].sum() == 2


def test_sweep_plan_merges_rows_sharing_a_command() -> None:
    ws = [
        workload("a", **{c.NUM_TOKENS: 256}),
        workload("b", **{c.NUM_TOKENS: 64}),
        workload("c", **{c.NUM_TOKENS: 256}),  # same tokens as a: listed once
        workload("p", phase="prefill", **{c.NUM_TOKENS: 16384}),  # graph off: own command
        workload("t", **{c.ATTENTION_DP: False, c.PARALLEL_MODE: "TEP", c.NUM_TOKENS: 8}),
    ]
    ruled = apply_rule(ledger(pd.DataFrame(ws), pd.DataFrame()), "exact", command=row_command)
    plan = sweep_plan(ruled)
    assert len(plan) == 3 and plan["n_rows"].tolist() == [1, 1, 3]  # T, D eager, D graph
    dgraph = plan.iloc[2]
    assert dgraph["num_tokens_list"] == "64 256"
    assert "--balanced_total_num_tokens 64 256" in dgraph["command"]
    assert "--no_cuda_graph" in plan.iloc[1]["command"]
    assert "--parallel_mode TEP TTP TTP2EP4 TTP4EP2" in plan.iloc[0]["command"]
    script = sweep_script(plan, "all-h200-all")
    assert script.startswith("#!/bin/sh") and script.count("python3 -m bench_moe") == 3
    assert script_name("glm_5", "GB300", None) == "crossval-sweeps-glm_5-gb300-all.sh"
    cov = coverage(ruled)
    assert cov["n_covered"].sum() == 0 and cov.iloc[2]["missing_num_tokens"] == "64 256"
    assert sweep_plan(ruled.iloc[0:0]).empty


def test_family_modes_add_a_deployed_mode_outside_the_defaults() -> None:
    assert family_modes(16, True) == ["DEP", "DTP", "DTP4EP4"]
    assert family_modes(16, True, "DTP2EP8") == ["DEP", "DTP", "DTP4EP4", "DTP2EP8"]
    assert family_modes(2, False) == ["TEP", "TTP"]
