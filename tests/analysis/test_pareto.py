from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.pareto import pareto_frontier, throughput_latency_frontier
from tests.factories import make_candidates


def _frame(points: list[tuple[float, float]], **kw: object) -> pd.DataFrame:
    return make_candidates(
        [
            {C.SCORE_MS: x, C.RAW_SCORE_MS: y, C.CANDIDATE_INDEX: i}
            for i, (x, y) in enumerate(points)
        ],
        **kw,
    )


def test_known_frontier() -> None:
    # (x, y): minimise x, maximise y. (2, 5) dominated by (1, 6); (3, 6) by (1, 6).
    df = _frame([(1, 6), (2, 5), (3, 6), (4, 9), (0.5, 1), (5, 9)])
    front = pareto_frontier(df, C.SCORE_MS, C.RAW_SCORE_MS)
    assert list(zip(front[C.SCORE_MS], front[C.RAW_SCORE_MS], strict=True)) == [
        (0.5, 1),
        (1, 6),
        (4, 9),
    ]
    assert set(front.columns) == set(df.columns)


def test_orientation_flags() -> None:
    df = _frame([(1, 6), (2, 5), (3, 7)])
    front = pareto_frontier(df, C.SCORE_MS, C.RAW_SCORE_MS, minimize_x=False, maximize_y=False)
    assert list(front[C.SCORE_MS]) == [2.0, 3.0]


def test_groups_are_independent_and_failed_rows_ignored() -> None:
    df = pd.concat(
        [
            _frame([(1, 1), (2, 2)], hardware="GB300"),
            _frame([(1, 5)], hardware="B300"),
            _frame([(0.1, 100)], hardware="GB300", status="failed", score_ms=0.1),
            _frame([(0.1, 100)], hardware="GB300", autotune_status="failed:Boom"),
        ],
        ignore_index=True,
    )
    front = pareto_frontier(df, C.SCORE_MS, C.RAW_SCORE_MS, group_cols=[C.HARDWARE])
    assert list(front[C.HARDWARE]) == ["B300", "GB300", "GB300"]
    assert list(front[C.RAW_SCORE_MS]) == [5.0, 1.0, 2.0]


def test_exact_duplicates_keep_one_by_recipe_order() -> None:
    df = make_candidates(
        [{C.BACKEND: "TRTLLM", C.SCORE_MS: 1.0}, {C.BACKEND: "CUTEDSL", C.SCORE_MS: 1.0}]
    )
    front = pareto_frontier(df, C.SCORE_MS, C.WORLD_SIZE)
    assert list(front[C.BACKEND]) == ["CUTEDSL"]
    front2 = pareto_frontier(df.iloc[::-1], C.SCORE_MS, C.WORLD_SIZE)
    assert list(front2[C.BACKEND]) == ["CUTEDSL"]


def test_throughput_latency_convenience_keeps_recipe() -> None:
    df = make_candidates(
        [
            {C.NUM_TOKENS: 64, C.SCORE_MS: 0.1, C.BACKEND: "TRTLLM"},
            {C.NUM_TOKENS: 1024, C.SCORE_MS: 0.5, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE"},
            {C.NUM_TOKENS: 1024, C.SCORE_MS: 0.6, C.BACKEND: "TRTLLM"},
        ]
    )
    front = throughput_latency_frontier(df)
    assert list(front[C.BACKEND]) == ["TRTLLM", "MEGAMOE_CUTEDSL"]
    assert front[C.PHASE].tolist() == ["decode", "decode"]
    assert {C.COMM, C.MOE_EP_SIZE, C.CUDA_GRAPH} <= set(front.columns)


def test_empty_and_missing_columns() -> None:
    assert pareto_frontier(make_candidates(), C.SCORE_MS, C.RAW_SCORE_MS).empty
    try:
        pareto_frontier(make_candidates(), C.SCORE_MS, "nope")
    except KeyError:
        pass
    else:
        raise AssertionError("expected KeyError")


points = st.lists(
    st.tuples(st.integers(1, 8), st.integers(1, 8), st.sampled_from("AB")), min_size=1, max_size=40
)


@settings(max_examples=80, deadline=None)
@given(points, st.booleans(), st.booleans(), st.randoms(use_true_random=False))
def test_frontier_properties(
    pts: list[tuple[int, int, str]], min_x: bool, max_y: bool, rnd: object
) -> None:
    df = make_candidates(
        [
            {C.SCORE_MS: float(x), C.RAW_SCORE_MS: float(y), C.HARDWARE: h, C.CANDIDATE_INDEX: i}
            for i, (x, y, h) in enumerate(pts)
        ]
    )
    before = df.copy()
    front = pareto_frontier(df, C.SCORE_MS, C.RAW_SCORE_MS, min_x, max_y, [C.HARDWARE])
    pd.testing.assert_frame_equal(df, before)  # not mutated
    sx, sy = (1 if min_x else -1), (1 if max_y else -1)
    for h, grp in df.groupby(C.HARDWARE):
        all_pts = {
            (sx * x, sy * y) for x, y in zip(grp[C.SCORE_MS], grp[C.RAW_SCORE_MS], strict=True)
        }
        f = front[front[C.HARDWARE] == h]
        fpts = [(sx * x, sy * y) for x, y in zip(f[C.SCORE_MS], f[C.RAW_SCORE_MS], strict=True)]
        assert len(fpts) == len(set(fpts))
        for fx, fy in fpts:  # no frontier point dominated
            assert not any(ax <= fx and ay >= fy and (ax, ay) != (fx, fy) for ax, ay in all_pts)
        for ax, ay in all_pts:  # every point dominated by or equal to a frontier point
            assert any(fx <= ax and fy >= ay for fx, fy in fpts)
    perm = np.random.default_rng(len(pts)).permutation(len(df))
    again = pareto_frontier(df.iloc[perm], C.SCORE_MS, C.RAW_SCORE_MS, min_x, max_y, [C.HARDWARE])
    pd.testing.assert_frame_equal(again, front)
