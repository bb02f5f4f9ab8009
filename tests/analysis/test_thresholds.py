"""The pairwise crossover fit (``analysis.threshold_pairwise``, re-exported by
``analysis.thresholds``): two named options, points where both were measured."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.thresholds import find_crossovers, fit_split
from tests.factories import make_candidates

GRID = [2**i for i in range(4, 16)]  # 16 .. 32768
A, B = {C.BACKEND: "TRTLLM"}, {C.BACKEND: "MEGAMOE_CUTEDSL"}


def sweep(
    cross: float, models: tuple[str, ...] = ("m1", "m2"), grid: list[int] = GRID, **kw: object
) -> pd.DataFrame:
    """TRTLLM wins where num_tokens < cross, MEGAMOE_CUTEDSL above (10 % margins)."""
    rows = []
    for m in models:
        for n in grid:
            a_wins = n < cross
            rows += [
                {
                    C.MODEL: m,
                    C.NUM_TOKENS: n,
                    C.BACKEND: "TRTLLM",
                    C.SCORE_MS: 1.0 if a_wins else 1.1,
                },
                {
                    C.MODEL: m,
                    C.NUM_TOKENS: n,
                    C.BACKEND: "MEGAMOE_CUTEDSL",
                    C.COMM: "NONE",
                    C.SCORE_MS: 1.1 if a_wins else 1.0,
                },
            ]
    return make_candidates(rows, **kw)


def test_known_crossover_and_it_moves() -> None:
    res = find_crossovers(sweep(700), A, B, C.NUM_TOKENS).crossovers.iloc[0]
    assert res["status"] == "crossover" and res["orientation"] == "a_below"
    assert (res["bracket_lo"], res["bracket_hi"]) == (512, 1024)
    assert res["crossover"] == pytest.approx(math.sqrt(512 * 1024))
    assert res["n_workloads"] == 2 * len(GRID) and res["n_models"] == 2
    assert res["frac_models_agree"] == 1.0 and res["model_spread"] == pytest.approx(1.0)
    moved = find_crossovers(sweep(2000), A, B, C.NUM_TOKENS).crossovers.iloc[0]
    assert (moved["bracket_lo"], moved["bracket_hi"]) == (1024, 2048)


def test_linear_axis_uses_arithmetic_mean() -> None:
    res = find_crossovers(sweep(700), A, B, C.NUM_TOKENS, log_axis=False).crossovers
    assert res["crossover"].iat[0] == 768


def test_reversed_orientation_and_labels() -> None:
    res = find_crossovers(sweep(700), B, A, C.NUM_TOKENS, labels=("fused", "trt"))
    row = res.crossovers.iloc[0]
    assert row["orientation"] == "b_below" and row["label_below"] == "trt"
    assert set(res.evidence["winner"]) == {"fused", "trt"}


def test_no_crossover_and_insufficient() -> None:
    res = find_crossovers(sweep(10**9), A, B, C.NUM_TOKENS).crossovers.iloc[0]
    assert res["status"] == "no_crossover" and res["dominant"] == "A"
    assert math.isnan(res["crossover"])
    tiny = find_crossovers(sweep(700, models=("m1",), grid=[256, 1024]), A, B, C.NUM_TOKENS)
    assert tiny.crossovers["status"].iat[0] == "insufficient"
    only_a = sweep(700)
    only_a = only_a[only_a[C.BACKEND] == "TRTLLM"]
    assert find_crossovers(only_a, A, B, C.NUM_TOKENS).crossovers["n_workloads"].iat[0] == 0


def test_noise_minimises_misclassification() -> None:
    # One flipped point below the true split (A..A B A A | B B ...) keeps the split.
    x = np.array([16, 32, 64, 128, 256, 512, 1024, 2048, 4096])
    a = np.array([1, 1, 0, 1, 1, 1, 0, 0, 0], dtype=bool)
    fit = fit_split(x, a)
    assert (fit["bracket_lo"], fit["bracket_hi"]) == (512, 1024)
    assert fit["n_misclassified"] == 1 and fit["status"] == "crossover"


def test_all_noise_is_not_a_clean_crossover() -> None:
    x = np.arange(1, 21, dtype=float)
    fit = fit_split(x, np.arange(20) % 2 == 0)
    assert fit["status"] in ("noisy", "no_crossover")


def test_groups_and_per_group_brackets() -> None:
    df = pd.concat([sweep(700, hardware="GB300"), sweep(5000, hardware="B300")], ignore_index=True)
    res = find_crossovers(df, A, B, C.NUM_TOKENS, group_cols=[C.HARDWARE]).crossovers
    got = dict(
        zip(res[C.HARDWARE], zip(res["bracket_lo"], res["bracket_hi"], strict=True), strict=True)
    )
    assert got == {"B300": (4096, 8192), "GB300": (512, 1024)}


def test_model_inconsistency_is_reported() -> None:
    df = pd.concat([sweep(700, models=("m1",)), sweep(20000, models=("m2",))], ignore_index=True)
    res = find_crossovers(df, A, B, C.NUM_TOKENS).crossovers.iloc[0]
    assert res["model_spread"] == pytest.approx(32.0)
    assert res["frac_models_agree"] < 1.0


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(GRID[1:]), st.integers(0, 10**6))
def test_order_independent_and_not_mutating(cross: int, seed: int) -> None:
    df = sweep(cross * 0.9)
    before = df.copy()
    res = find_crossovers(df, A, B, C.NUM_TOKENS)
    pd.testing.assert_frame_equal(df, before)
    perm = np.random.default_rng(seed).permutation(len(df))
    again = find_crossovers(df.iloc[perm], A, B, C.NUM_TOKENS)
    pd.testing.assert_frame_equal(again.crossovers, res.crossovers)
    pd.testing.assert_frame_equal(again.evidence, res.evidence)
    assert res.crossovers["bracket_hi"].iat[0] == cross
