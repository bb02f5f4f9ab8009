from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis import columns as C
from analysis.agreement import agreement_report
from analysis.tree import Thresholds
from tests.factories import make_candidates


def frame() -> pd.DataFrame:
    # GB300 ws 8 decode. n=256 (192 tokens/rank): tree says TRTLLM, TRTLLM best -> agree.
    # n=2048 (1536/rank): tree says MEGAMOE_CUTEDSL, but TRTLLM best (regret 25 %).
    # n=4096: tree says MEGAMOE_CUTEDSL, never measured -> unmeasured.
    return make_candidates(
        [
            {C.NUM_TOKENS: 256, C.BACKEND: "TRTLLM", C.SCORE_MS: 1.0},
            {C.NUM_TOKENS: 256, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 1.3},
            {C.NUM_TOKENS: 2048, C.BACKEND: "TRTLLM", C.SCORE_MS: 2.0},
            {C.NUM_TOKENS: 2048, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 2.5},
            {C.NUM_TOKENS: 4096, C.BACKEND: "TRTLLM", C.SCORE_MS: 3.0},
            {C.NUM_TOKENS: 4096, C.BACKEND: "CUTEDSL", C.SCORE_MS: 3.5, C.MODEL: "other"},
        ]
    )


def test_detail_and_summary() -> None:
    detail, summary = agreement_report(frame())
    d = detail.set_index([C.MODEL, C.NUM_TOKENS])
    assert d.loc[("deepseek_v4_pro", 256), "agrees"]
    assert d.loc[("deepseek_v4_pro", 256), "regret"] == 0
    assert not d.loc[("deepseek_v4_pro", 2048), "agrees"]
    assert d.loc[("deepseek_v4_pro", 2048), "regret"] == pytest.approx(0.25)
    assert math.isnan(d.loc[("deepseek_v4_pro", 4096), "regret"])
    s = summary.set_index(C.MODEL).loc["deepseek_v4_pro"]
    assert (s["n_workloads"], s["n_agree"], s["n_pick_unmeasured"]) == (3, 1, 1)
    # % of measured picks: the 4096 workload's pick was never measured, so 1 of 2
    assert s["agreement_pct"] == pytest.approx(50.0)
    assert s["max_regret_pct"] == pytest.approx(25.0) and s["phase"] == "decode"


def test_nothing_compared_is_na_not_zero() -> None:
    _, summary = agreement_report(frame())
    other = summary.set_index(C.MODEL).loc["other"]
    # the tree's pick for "other" was never measured: N/A (NaN), not 0 %
    assert other["n_pick_measured"] == 0 and math.isnan(other["agreement_pct"])
    assert math.isnan(other["median_regret_pct"])


def test_forced_comm_must_match() -> None:
    df = make_candidates(
        [
            {C.COMM: "ALLGATHER", C.SCORE_MS: 1.0},
            {C.COMM: "DEEPEPLOWLATENCY", C.SCORE_MS: 1.1},
        ],
        hardware="B300",
        world_size=16,
        backend="CUTEDSL",
        num_tokens=256,
    )
    detail, _ = agreement_report(df)
    r = detail.iloc[0]
    assert (r["tree_comm"], bool(r["tree_force_comm"])) == ("DEEPEPLOWLATENCY", True)
    assert not r["agrees"] and r["regret"] == pytest.approx(0.1)


def test_thresholds_change_the_verdict() -> None:
    detail, _ = agreement_report(frame(), Thresholds(decode_megamoe_tokens_per_rank=4096))
    assert detail.set_index(C.NUM_TOKENS).loc[2048, "agrees"].all()


def test_overall_summary_and_empty() -> None:
    _, overall = agreement_report(frame(), group_cols=())
    assert overall["n_workloads"].iat[0] == 4
    detail, summary = agreement_report(make_candidates([{C.STATUS: "failed"}]))
    assert detail.empty and summary.empty


def test_comm_counts_when_the_tree_leaves_auto() -> None:
    """GB300 ws 8 decode, 256 tokens: the tree says TRTLLM with AUTO, which picks
    NVLINK_ONE_SIDED there. A best TRTLLM row that needed NVLINK_TWO_SIDED forced
    disagrees on the comm (the backend agrees); the regret is against the AUTO row."""
    df = make_candidates(
        [
            {C.COMM: "NVLINK_TWO_SIDED", C.COMM_REQUESTED: "NVLINK_TWO_SIDED", C.SCORE_MS: 1.0},
            {C.COMM: "NVLINK_ONE_SIDED", C.COMM_REQUESTED: "AUTO", C.SCORE_MS: 1.1},
        ]
    )
    r = agreement_report(df)[0].iloc[0]
    assert (r["tree_backend"], r["tree_expected_comm"]) == ("TRTLLM", "NVLINK_ONE_SIDED")
    assert r["backend_agrees"] and not r["comm_agrees"] and not r["agrees"]
    assert r["regret_pct"] == pytest.approx(10.0)
    same = agreement_report(df.assign(**{C.SCORE_MS: [1.2, 1.1]}))[0].iloc[0]
    assert same["agrees"] and same["regret"] == 0


def test_repeats_are_compared_as_configurations() -> None:
    df = make_candidates(
        [
            {C.RUN_ID: 1, C.SCORE_MS: 1.00},
            {C.RUN_ID: 2, C.SCORE_MS: 1.30},
            {C.RUN_ID: 1, C.BACKEND: "CUTEDSL", C.SCORE_MS: 1.10, C.CANDIDATE_INDEX: 1},
        ]
    )
    r = agreement_report(df)[0].iloc[0]  # TRTLLM median 1.15 > CUTEDSL 1.10
    assert (r["best_backend"], r["best_n_repeats"]) == ("CUTEDSL", 1)
    assert r["pick_score_ms"] == pytest.approx(1.15)
    latest = agreement_report(df, repeats="latest")[0].iloc[0]  # TRTLLM latest 1.30
    assert latest["best_backend"] == "CUTEDSL"


def test_a_model_without_a_recorded_shape_is_left_out_not_an_error() -> None:
    # NVIDIA's dashboard rows of a model it does not describe carry no expert count
    df = frame()
    shapeless = make_candidates([{C.NUM_TOKENS: 512, C.SCORE_MS: 1.0, C.MODEL: "unknown"}])
    shapeless[C.NUM_EXPERTS] = None
    detail, summary = agreement_report(pd.concat([df, shapeless], ignore_index=True))
    assert "unknown" not in set(detail[C.MODEL]) and "unknown" not in set(summary[C.MODEL])
    assert len(detail) == len(agreement_report(df)[0])
