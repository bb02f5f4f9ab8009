"""The crossover explorer on hand-built frames with known segments and switches.

Rows come from ``tests.factories.make_candidates`` (a successful DEP candidate of
deepseek_v4_pro NVFP4 on GB300, world size 8, decode, balanced, iteration stdev 0.5 % of
the score) unless a test says otherwise, so the within-run noise band of a pair is
100 * hypot(0.005, 0.005) = 0.707 %.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis.crossover_switches import NOT_COMPARED, ROBUST, TIE
from analysis.crossovers import (
    AXES,
    OPTION_DIMS,
    CrossoverMap,
    find_rank_one_segments,
    rank_one_segments,
)
from analysis.identity import configuration_frame
from tests.factories import make_candidates

BAND = 100 * math.hypot(0.005, 0.005)


def sweep(
    scores: Mapping[str, Sequence[float | None]],
    xs: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
    col: str = C.BACKEND,
    **defaults: Any,
) -> pd.DataFrame:
    """One row per option x num_tokens (None: not measured there)."""
    rows = [
        {col: name, C.NUM_TOKENS: x, C.SCORE_MS: s, C.CANDIDATE_INDEX: i * 100 + j}
        for i, (name, values) in enumerate(scores.items())
        for j, (x, s) in enumerate(zip(xs, values, strict=True))
        if s is not None
    ]
    return make_candidates(rows, **defaults)


def only(res: CrossoverMap) -> pd.DataFrame:
    assert len(res.series) == 1, res.series
    return res.switches


def test_a_window_in_the_middle_is_two_switches() -> None:
    # A wins at 1, 2; B at 4..16 (the window); A again at 32, 64
    df = sweep(
        {
            "A": [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 60.0],
            "B": [1.5, 2.5, 3.0, 6.0, 12.0, 33.0, 70.0],
        }
    )
    res = find_rank_one_segments(df)
    sw = only(res)
    assert sw[["before", "after", "bracket_lo", "bracket_hi"]].values.tolist() == [
        ["A", "B", 2.0, 4.0],
        ["B", "A", 16.0, 32.0],
    ]
    assert sw["n_before"].tolist() == [2, 3] and sw["n_after"].tolist() == [3, 2]
    assert sw["switch"].tolist() == [1, 2]
    # at bracket_lo the old winner leads by (after - before) / before
    assert sw["margin_lo_pct"].tolist() == pytest.approx([25.0, 100 * (16 - 12) / 12])
    assert sw["margin_hi_pct"].tolist() == pytest.approx([100 * (4 - 3) / 3, 10.0])
    assert sw["noise_lo_pct"].tolist() == pytest.approx([BAND, BAND])
    assert (sw["verdict"] == ROBUST).all() and (sw["noise_source"] == "iteration_spread").all()
    assert res.segments["option"].tolist() == ["A", "B", "A"]
    assert res.segments["n_points"].tolist() == [2, 3, 2]
    series = res.series.iloc[0]
    assert series["rank1_sequence"] == "A → B → A"
    assert (series["n_switches"], series["n_robust"], series["n_axis_points"]) == (2, 2, 7)


def test_three_backends_the_guide_does_not_know_on_one_gpu() -> None:
    df = sweep(
        {
            "GEMM_ALPHA": [1.0, 2.0, 4.0, 8.0, 16.0],
            "GEMM_BETA": [1.5, 1.5, 3.0, 9.0, 20.0],
            "GEMM_GAMMA": [2.0, 3.0, 5.0, 7.0, 14.0],
        },
        xs=(1, 2, 4, 8, 16),
        world_size=1,
        parallel_mode="DEP",
    )
    res = find_rank_one_segments(df)
    sw = only(res)
    assert sw[["before", "after", "bracket_lo", "bracket_hi"]].values.tolist() == [
        ["GEMM_ALPHA", "GEMM_BETA", 1.0, 2.0],
        ["GEMM_BETA", "GEMM_GAMMA", 4.0, 8.0],
    ]
    assert res.series["world_size"].tolist() == [1]
    assert res.series["n_options"].tolist() == [3]
    assert "ws 1" in res.series["series_label"].iat[0]
    # the curves: every option at every axis value, ranked
    pts = res.points
    assert len(pts) == 15 and set(pts["n_options"]) == {3}
    at8 = pts[pts["axis_value"] == 8].sort_values("rank")
    assert at8["option"].tolist() == ["GEMM_GAMMA", "GEMM_ALPHA", "GEMM_BETA"]


def test_margins_inside_the_noise_band_are_ties() -> None:
    # 2 % iteration stdev each: band 2.83 %; A->B margins 1 % (tie) and 10 % (robust)
    df = sweep({"A": [1.0, 1.0, 10.0, 10.0], "B": [1.1, 1.01, 9.9, 9.0]}, xs=(1, 2, 4, 8))
    df[C.ITER_STDEV_MS] = df[C.SCORE_MS] * 0.02
    sw = only(find_rank_one_segments(df))
    assert sw[["bracket_lo", "bracket_hi"]].values.tolist() == [[2.0, 4.0]]
    assert sw["margin_lo_pct"].iat[0] == pytest.approx(1.0)
    assert sw["noise_lo_pct"].iat[0] == pytest.approx(100 * math.hypot(0.02, 0.02))
    assert sw["verdict"].iat[0] == TIE


def test_unknown_spread_uses_the_default_band() -> None:
    df = sweep({"A": [1.0, 2.0], "B": [1.02, 1.9]}, xs=(1, 2))
    df[C.ITER_STDEV_MS] = np.nan
    sw = only(find_rank_one_segments(df))
    assert sw["noise_lo_pct"].iat[0] == 3.0 and sw["noise_source"].iat[0] == "default"
    assert sw["margin_hi_pct"].iat[0] == pytest.approx(100 * 0.1 / 1.9)
    assert sw["verdict"].iat[0] == TIE  # 2 % at the low end is within 3 %


def _repeats(b_runs: Sequence[Sequence[float]], a_runs: Sequence[Sequence[float]]) -> pd.DataFrame:
    """Three runs of one sweep at num_tokens 1, 2, 4, 8: per run the scores of A and B."""
    rows = []
    for run in range(3):
        for j, x in enumerate((1, 2, 4, 8)):
            for name, runs in (("A", a_runs), ("B", b_runs)):
                rows.append(
                    {
                        C.RUN_ID: run + 1,
                        C.CANDIDATE_INDEX: j * 2 + (name == "B"),
                        C.BACKEND: name,
                        C.NUM_TOKENS: x,
                        C.SCORE_MS: runs[j][run],
                    }
                )
    return make_candidates(rows)


A_RUNS = [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [1.00, 0.97, 1.03], [2.0, 2.0, 2.0]]


def test_repeats_that_flip_are_a_tie_within_run_to_run_noise() -> None:
    # at 4 tokens B wins the median (0.96 vs 1.00) but loses run 2 (1.02 vs 0.97)
    b_flip = [[1.5, 1.5, 1.5], [2.5, 2.5, 2.5], [0.95, 1.02, 0.96], [1.5, 1.5, 1.5]]
    res = find_rank_one_segments(_repeats(b_flip, A_RUNS))
    sw = only(res)
    assert sw[["before", "after", "bracket_lo", "bracket_hi"]].values.tolist() == [
        ["A", "B", 2.0, 4.0]
    ]
    assert sw["after_at_hi_ms"].iat[0] == pytest.approx(0.96)  # the median of three runs
    spread_a, spread_b = np.std([1.0, 0.97, 1.03], ddof=1), np.std([0.95, 1.02, 0.96], ddof=1)
    band = 100 * math.hypot(spread_a / 1.0, spread_b / 0.96)
    assert sw["noise_hi_pct"].iat[0] == pytest.approx(band)
    assert sw["margin_hi_pct"].iat[0] < band
    assert sw["verdict"].iat[0] == TIE
    assert sw["noise_source"].iat[0] == "run_to_run"
    assert set(res.points["n_repeats"]) == {3}


def test_repeats_that_agree_make_a_robust_switch() -> None:
    a_runs = [[1.0, 1.0, 1.0], [2.0, 2.02, 1.98], [1.00, 1.01, 0.99], [2.0, 2.0, 2.0]]
    b_agree = [[1.5, 1.5, 1.5], [2.5, 2.52, 2.48], [0.90, 0.91, 0.89], [1.5, 1.5, 1.5]]
    sw = only(find_rank_one_segments(_repeats(b_agree, a_runs)))
    assert sw["verdict"].tolist() == [ROBUST]
    assert sw["margin_hi_pct"].iat[0] == pytest.approx(100 * (1.0 - 0.9) / 0.9)


def test_exact_ties_go_to_the_first_label_and_are_never_robust() -> None:
    df = sweep({"B": [1.0, 1.0, 2.0], "A": [2.0, 1.0, 1.0]}, xs=(1, 2, 4))
    res = find_rank_one_segments(df)
    # at 2 both score 1.0: A (alphabetically first) is rank 1 there
    assert res.segments[["option", "axis_lo", "axis_hi"]].values.tolist() == [
        ["B", 1.0, 1.0],
        ["A", 2.0, 4.0],
    ]
    sw = res.switches
    assert sw["margin_hi_pct"].iat[0] == 0.0 and sw["verdict"].iat[0] == TIE


def test_an_option_missing_at_a_bracket_is_not_compared() -> None:
    # B measured only from 4 tokens on (e.g. top-3-only data): rank 1 still switches
    df = sweep({"A": [1.0, 2.0, 8.0, 16.0], "B": [None, None, 4.0, 6.0]}, xs=(1, 2, 4, 8))
    res = find_rank_one_segments(df)
    sw = only(res)
    assert sw[["before", "after", "bracket_lo", "bracket_hi"]].values.tolist() == [
        ["A", "B", 2.0, 4.0]
    ]
    assert math.isnan(sw["margin_lo_pct"].iat[0]) and sw["verdict"].iat[0] == NOT_COMPARED
    assert res.points[res.points["axis_value"] == 1]["n_options"].tolist() == [1]


def test_best_configuration_per_option_and_one_series_per_group() -> None:
    rows = [
        # world size 8: TRTLLM's best comm decides its score; MEGAMOE wins from 256 on
        {C.NUM_TOKENS: 64, C.BACKEND: "TRTLLM", C.COMM: "NVLINK_ONE_SIDED", C.SCORE_MS: 0.5},
        {C.NUM_TOKENS: 64, C.BACKEND: "TRTLLM", C.COMM: "DEEPEP", C.SCORE_MS: 0.4},
        {C.NUM_TOKENS: 64, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 0.6},
        {C.NUM_TOKENS: 256, C.BACKEND: "TRTLLM", C.COMM: "DEEPEP", C.SCORE_MS: 1.2},
        {C.NUM_TOKENS: 256, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 0.9},
        # prefill (CUDA graph off) is its own series; one option only: no switch
        {C.NUM_TOKENS: 64, C.CUDA_GRAPH: False, C.SCORE_MS: 2.0},
        {C.NUM_TOKENS: 256, C.CUDA_GRAPH: False, C.SCORE_MS: 3.0},
        # attention TP: its own series
        {C.NUM_TOKENS: 64, C.PARALLEL_MODE: "TEP", C.SCORE_MS: 0.3},
    ]
    df = make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)])
    res = find_rank_one_segments(df)
    assert len(res.series) == 3
    assert res.series["n_switches"].tolist() == [0, 1, 0]  # TP, decode DP, prefill DP
    sw = res.switches
    assert sw["before_at_lo_ms"].iat[0] == 0.4  # TRTLLM's best comm at 64 tokens
    assert sw[["cuda_graph", "attn"]].values.tolist() == [[True, "D"]]
    by_comm = find_rank_one_segments(df, option="comm")
    assert "DEEPEP → NONE" in by_comm.series["rank1_sequence"].tolist()
    both = find_rank_one_segments(df, option="backend+comm")
    assert both.switches["after"].tolist() == ["MEGAMOE_CUTEDSL + NONE"]
    modes = find_rank_one_segments(df, option="parallel_mode")
    assert set(modes.points["option"]) == {"DEP", "TEP"}  # DEP and TEP never meet


def test_other_axes_and_positive_values_only() -> None:
    df = sweep({"A": [1.0, 2.0, 4.0], "B": [2.0, 2.5, 3.0]}, xs=(8, 16, 32))
    res = find_rank_one_segments(df, axis=C.ACTIVATED_TOKENS_PER_RANK)
    # DEP on 8 GPUs, top_k 6: num_tokens * 6 / 8 tokens per rank
    assert res.switches[["bracket_lo", "bracket_hi"]].values.tolist() == [[12.0, 24.0]]
    kb = find_rank_one_segments(df, axis=C.DISPATCH_KB)
    # NVFP4: 0.5 byte per element of hidden size 7168
    assert kb.switches["bracket_lo"].iat[0] == pytest.approx(12 * 7168 * 0.5 / 1024)
    unknown_quant = df.assign(**{C.QUANT: "MYSTERY"})
    empty = find_rank_one_segments(unknown_quant, axis=C.DISPATCH_KB)  # dispatch_kb NaN
    assert empty.series.empty and empty.switches.empty and empty.points.empty
    assert {"before", "after", "bracket_lo", "verdict"} <= set(empty.switches.columns)


def test_bad_option_or_missing_columns_raise() -> None:
    df = sweep({"A": [1.0]}, xs=(1,))
    with pytest.raises(ValueError, match="'backend', 'comm'"):
        find_rank_one_segments(df, option="kernel")
    with pytest.raises(KeyError, match="score_ms"):
        rank_one_segments(pd.DataFrame({C.BACKEND: ["A"], C.NUM_TOKENS: [1]}))
    assert list(OPTION_DIMS) == ["backend", "comm", "backend+comm", "parallel_mode"]
    assert AXES == (C.NUM_TOKENS, C.ACTIVATED_TOKENS_PER_RANK, C.DISPATCH_KB)


def test_failed_rows_and_missing_options_take_no_part() -> None:
    df = sweep({"A": [1.0, 2.0], "B": [2.0, 1.0]}, xs=(1, 2))
    broken = make_candidates(
        [
            {C.BACKEND: "C", C.NUM_TOKENS: 1, C.STATUS: "failed", C.CANDIDATE_INDEX: 50},
            {C.BACKEND: None, C.NUM_TOKENS: 2, C.SCORE_MS: 0.1, C.CANDIDATE_INDEX: 51},
        ]
    )
    res = find_rank_one_segments(pd.concat([df, broken], ignore_index=True))
    assert set(res.points["option"]) == {"A", "B"}
    assert res.switches[["before", "after"]].values.tolist() == [["A", "B"]]


def test_a_configuration_frame_is_accepted_as_it_is() -> None:
    df = sweep({"A": [1.0, 2.0], "B": [2.0, 1.0]}, xs=(1, 2))
    direct = rank_one_segments(configuration_frame(df))
    pd.testing.assert_frame_equal(direct.switches, find_rank_one_segments(df).switches)
