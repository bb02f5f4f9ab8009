from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.best import best_by_workload, relative_spread, top_by_workload
from tests.factories import make_candidates


def test_winner_runner_up_margin() -> None:
    df = make_candidates(
        [
            {C.BACKEND: "TRTLLM", C.SCORE_MS: 1.0, C.CANDIDATE_INDEX: 0},
            {C.BACKEND: "CUTEDSL", C.SCORE_MS: 1.2, C.CANDIDATE_INDEX: 1},
            {
                C.BACKEND: "MEGAMOE_CUTEDSL",
                C.SCORE_MS: 0.5,
                C.CANDIDATE_INDEX: 2,
                C.STATUS: "failed",
            },
            {
                C.BACKEND: "CUTLASS",
                C.SCORE_MS: 0.4,
                C.CANDIDATE_INDEX: 3,
                C.AUTOTUNE_STATUS: "failed:RuntimeError",
            },
            {
                C.BACKEND: "DEEPGEMM",
                C.SCORE_MS: 0.4,
                C.CANDIDATE_INDEX: 4,
                C.FAILURE_CATEGORY: "autotune_failed",
            },
        ],
        iter_stdev_ms=0.0,
    )
    out = best_by_workload(df)
    assert len(out) == 1
    r = out.iloc[0]
    assert (r["best_backend"], r["runner_up_backend"]) == ("TRTLLM", "CUTEDSL")
    assert r["margin_pct"] == pytest.approx(20.0)
    assert r["n_candidates"] == 2
    assert r["noise_source"] == "iteration_spread" and not r["is_tie"]


def test_tie_from_iteration_spread() -> None:
    # 2 % relative stdev each -> band = 2.83 %; margin 2 % -> tie; margin 4 % -> not.
    rows = [
        {C.SCORE_MS: 1.0, C.ITER_STDEV_MS: 0.02, C.CANDIDATE_INDEX: 0},
        {C.SCORE_MS: 1.02, C.ITER_STDEV_MS: 0.0204, C.BACKEND: "CUTEDSL", C.CANDIDATE_INDEX: 1},
    ]
    out = best_by_workload(make_candidates(rows))
    assert out["noise_band_pct"].iat[0] == pytest.approx(100 * np.hypot(0.02, 0.02))
    assert bool(out["is_tie"].iat[0])
    rows[1][C.SCORE_MS], rows[1][C.ITER_STDEV_MS] = 1.04, 0.0208
    assert not bool(best_by_workload(make_candidates(rows))["is_tie"].iat[0])


def test_default_band_without_spread_and_single_candidate() -> None:
    df = make_candidates(
        [
            {C.SCORE_MS: 1.0, C.NUM_TOKENS: 64},
            {C.SCORE_MS: 1.025, C.NUM_TOKENS: 64, C.BACKEND: "CUTEDSL"},
            {C.SCORE_MS: 1.0, C.NUM_TOKENS: 128},
        ],
        iter_stdev_ms=None,
        source_format="nvidia_dashboard",
    )
    out = best_by_workload(df, "dashboard")
    assert list(out[C.NUM_TOKENS]) == [64, 128]
    assert list(out["noise_band_pct"]) == [3.0, 3.0]
    assert list(out["is_tie"]) == [True, False]
    assert np.isnan(out["margin_pct"].iat[1])
    assert pd.isna(out["runner_up_backend"].iat[1])


def test_outliers_use_robust_spread() -> None:
    df = make_candidates(
        [
            {
                C.SCORE_MS: 1.0,
                C.ITER_STDEV_MS: 0.5,
                C.OUTLIER_COUNT: 2,
                C.ITER_MEDIAN_MS: 1.0,
                C.ITER_P90_MS: 1.012816,
            }
        ]
    )
    assert relative_spread(df)[0] == pytest.approx(0.01)


def test_groupings_differ() -> None:
    # Two runs of the same workload: bench_moe groups per run, dashboard pools them.
    df = make_candidates(
        [{C.RUN_ID: 1, C.SCORE_MS: 1.0}, {C.RUN_ID: 2, C.SCORE_MS: 0.9, C.BACKEND: "CUTEDSL"}]
    )
    assert len(best_by_workload(df, "bench_moe")) == 2
    dash = best_by_workload(df, "dashboard")
    assert len(dash) == 1 and dash["best_backend"].iat[0] == "CUTEDSL"


def test_dashboard_top3_and_cuda_graph_split() -> None:
    df = make_candidates(
        [
            # one distinct configuration per row (a pooled ranking compares configurations)
            {C.SCORE_MS: s, C.CANDIDATE_INDEX: i, C.CUDA_GRAPH: i % 2 == 0, C.BACKEND: f"B{i}"}
            for i, s in enumerate([5, 4, 3, 2, 1, 0.5, 7, 8])
        ]
    )
    top = top_by_workload(df, "dashboard", n=3)
    assert list(top[C.CUDA_GRAPH]) == [False] * 3 + [True] * 3
    assert list(top["rank"]) == [1, 2, 3] * 2
    assert list(top[C.SCORE_MS]) == [0.5, 2.0, 4.0, 1.0, 3.0, 5.0]
    with pytest.raises(ValueError):
        top_by_workload(df, "nope")


def test_equal_scores_resolve_by_candidate_index() -> None:
    df = make_candidates(
        [
            {C.SCORE_MS: 1.0, C.CANDIDATE_INDEX: 5, C.BACKEND: "A"},
            {C.SCORE_MS: 1.0, C.CANDIDATE_INDEX: 2, C.BACKEND: "B"},
        ]
    )
    assert best_by_workload(df)["best_backend"].iat[0] == "B"
    assert best_by_workload(df.iloc[::-1])["best_backend"].iat[0] == "B"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([64, 128]),
            st.sampled_from(["DEP", "TEP"]),
            st.integers(1, 20),
            st.sampled_from(["success", "failed"]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_best_properties(rows: list[tuple[int, str, int, str]]) -> None:
    df = make_candidates(
        [
            {
                C.NUM_TOKENS: n,
                C.PARALLEL_MODE: m,
                C.SCORE_MS: s / 10,
                C.STATUS: st_,
                C.CANDIDATE_INDEX: i,
            }
            for i, (n, m, s, st_) in enumerate(rows)
        ]
    )
    before = df.copy()
    out = best_by_workload(df)
    pd.testing.assert_frame_equal(df, before)
    ok = df[df[C.STATUS] == "success"]
    expected = ok.groupby([C.NUM_TOKENS, C.PARALLEL_MODE])[C.SCORE_MS].min()
    got = out.set_index([C.NUM_TOKENS, C.PARALLEL_MODE])["best_score_ms"]
    assert sorted(got.items()) == sorted(expected.items())
    assert (out["margin_pct"].dropna() >= 0).all()
    perm = np.random.default_rng(len(rows)).permutation(len(df))
    pd.testing.assert_frame_equal(best_by_workload(df.iloc[perm]), out)


def test_tie_state_names_no_runner_up_as_its_own_state() -> None:
    from analysis.best import NO_RUNNER_UP, NO_TIE, TIE_STATE, TIE_STATE_ORDER, best_by_workload

    df = make_candidates(
        [
            {C.NUM_TOKENS: 64, C.BACKEND: "TRTLLM", C.SCORE_MS: 1.0},
            {C.NUM_TOKENS: 64, C.BACKEND: "CUTLASS", C.SCORE_MS: 2.0},
            {C.NUM_TOKENS: 128, C.BACKEND: "TRTLLM", C.SCORE_MS: 1.0},
        ]
    )
    out = best_by_workload(df, [C.NUM_TOKENS]).set_index(C.NUM_TOKENS)
    assert out.loc[64, TIE_STATE] == NO_TIE
    assert out.loc[128, TIE_STATE] == NO_RUNNER_UP  # one candidate: nothing compared
    assert TIE_STATE_ORDER[-1] == NO_RUNNER_UP
