"""The per-cell frontier engine: filters, the Pareto index and the view it feeds."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.derived import add_derived
from analysis.frontier import (
    AXES,
    KEY,
    FrontierAxes,
    FrontierFilter,
    ParetoIndex,
    atomic_frontiers,
    downsample,
    filter_mask,
    frontier_view,
)
from analysis.pareto import pareto_frontier
from tests.factories import make_candidates


def _cell(rows: list[dict[str, object]]) -> pd.DataFrame:
    return add_derived(make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)]))


def _keys(frame: pd.DataFrame) -> set[tuple[int, int]]:
    return {
        (int(r), int(c)) for r, c in zip(frame[C.RUN_ID], frame[C.CANDIDATE_INDEX], strict=True)
    }


def test_known_frontier_and_filters() -> None:
    # decode: 0 (1.0 ms, 256 tok), 1 (0.8 ms, 256 tok) and 2 (2.0 ms, 1024 tok);
    # 1 dominates 0 (faster, same tokens); 3 is prefill; 4 failed.
    cell = _cell(
        [
            {C.NUM_TOKENS: 256, C.SCORE_MS: 1.0},
            {C.NUM_TOKENS: 256, C.BACKEND: "CUTEDSL", C.SCORE_MS: 0.8},
            {C.NUM_TOKENS: 1024, C.SCORE_MS: 2.0},
            {C.NUM_TOKENS: 256, C.CUDA_GRAPH: False, C.SCORE_MS: 0.1},
            {C.NUM_TOKENS: 9999, C.STATUS: "failed"},
        ]
    )
    view = frontier_view(cell, FrontierFilter(), FrontierAxes(), max_points=100)
    assert set(view.frontier[C.CANDIDATE_INDEX]) == {1, 2}
    assert (view.n_matching, view.n_cloud) == (4, 3)  # the failed decode row matches
    assert set(view.cloud[KEY]) == {0, 1, 2}
    trtllm = frontier_view(cell, FrontierFilter(backend=("TRTLLM",)), FrontierAxes(), 100)
    assert set(trtllm.frontier[C.CANDIDATE_INDEX]) == {0, 2}
    both = frontier_view(cell, FrontierFilter(phase="all"), FrontierAxes(), 100)
    # one frontier per phase: the lone prefill point is its own
    assert set(both.frontier[C.CANDIDATE_INDEX]) == {1, 2, 3}


def test_filter_mask_never_matches_missing_values() -> None:
    cell = _cell([{C.DISPATCH: "balanced"}, {C.DISPATCH: None}, {C.WORLD_SIZE: 4}])
    assert list(filter_mask(cell, FrontierFilter(phase="all", dispatch=("balanced",)))) == [
        True,
        False,
        True,
    ]
    assert list(filter_mask(cell, FrontierFilter(phase="all", ws=4))) == [False, False, True]
    assert list(filter_mask(cell, FrontierFilter(phase="all", attn="T"))) == [False] * 3


def _random_cell(seed: int, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [
        {
            C.CANDIDATE_INDEX: i,
            C.RUN_ID: 1 + i % 3,
            C.WORLD_SIZE: int(rng.choice([4, 8])),
            C.NUM_TOKENS: int(2 ** rng.integers(0, 6)),
            C.BACKEND: str(rng.choice(["TRTLLM", "CUTEDSL", "CUTLASS"])),
            C.CUDA_GRAPH: bool(rng.random() < 0.5),
            C.PARALLEL_MODE: str(rng.choice(["DEP", "TEP"])),
            C.SCORE_MS: float(rng.choice([0.5, 1.0, 1.5, 2.0, 3.0, 0.0, np.nan])),
        }
        for i in range(n)
    ]
    return add_derived(make_candidates(rows))


def test_index_frontiers_equal_the_direct_computation() -> None:
    """The index only prunes: atomic frontiers and every filtered frontier are the same
    as ``pareto_frontier`` over the whole cell (ties and duplicates included)."""
    frame = _random_cell(3)
    index = ParetoIndex(frame)
    for x, y in itertools.permutations(AXES, 2):
        for logx, logy in ((True, True), (False, True), (False, False)):
            axes = FrontierAxes(x=x, y=y, logx=logx, logy=logy)
            pd.testing.assert_frame_equal(index.atomic(axes), atomic_frontiers(frame, axes))
            for flt in (
                FrontierFilter(phase="all"),
                FrontierFilter(ws=8, phase="decode", backend=("TRTLLM",)),
                FrontierFilter(ws=4, phase="prefill", backend=("CUTEDSL", "CUTLASS")),
            ):
                fast = frontier_view(frame, flt, axes, 100, atomic=index.atomic(axes)).frontier
                slow = frontier_view(frame, flt, axes, 100).frontier
                pd.testing.assert_frame_equal(fast, slow)


def test_index_computes_each_axis_once_across_threads() -> None:
    index = ParetoIndex(_random_cell(5))
    results: list[pd.DataFrame] = []
    threads = [
        threading.Thread(target=lambda: results.append(index.atomic(FrontierAxes())))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r is results[0] for r in results)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    ws=st.sampled_from([None, 4, 8]),
    phase=st.sampled_from(["decode", "prefill", "all"]),
    axes=st.sampled_from(list(itertools.permutations(AXES, 2))),
)
def test_view_frontier_properties(
    seed: int, ws: int | None, phase: str, axes: tuple[str, str]
) -> None:
    """Equal to ``pareto_frontier`` over the filtered rows, no point dominated, the same
    whatever the row order, and the input frame untouched."""
    frame = _random_cell(seed, n=120)
    before = frame.copy()
    flt, ax = FrontierFilter(ws=ws, phase=phase), FrontierAxes(x=axes[0], y=axes[1])
    front = frontier_view(frame, flt, ax, 50, atomic=ParetoIndex(frame).atomic(ax)).frontier
    pd.testing.assert_frame_equal(frame, before)
    # log axes drop values <= 0 before the frontier is taken
    positive = (frame[ax.x] > 0).to_numpy(bool, na_value=False) & (frame[ax.y] > 0).to_numpy(
        bool, na_value=False
    )
    direct = pareto_frontier(
        frame[filter_mask(frame, flt) & positive],
        ax.x,
        ax.y,
        minimize_x=AXES[ax.x] == "min",
        maximize_y=AXES[ax.y] == "max",
        group_cols=[C.PHASE],
    )
    assert _keys(front) <= _keys(frame) and len(front) == len(_keys(front))
    sign_x = 1 if AXES[ax.x] == "min" else -1
    sign_y = 1 if AXES[ax.y] == "max" else -1
    for _, part in front.groupby(C.PHASE, observed=True):
        xs, ys = sign_x * part[ax.x].to_numpy(), sign_y * part[ax.y].to_numpy()
        for i in range(len(part)):
            better = (xs <= xs[i]) & (ys >= ys[i]) & ((xs < xs[i]) | (ys > ys[i]))
            assert not better.any()
    shuffled = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    again = frontier_view(shuffled, flt, ax, 50).frontier
    assert _keys(again) == _keys(front)
    assert _keys(direct) == _keys(front)


def test_downsample_caps_is_deterministic_and_keeps_small_frames() -> None:
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": rng.lognormal(size=100_000), "y": rng.lognormal(size=100_000)})
    a = downsample(df, "x", "y", 5_000, logx=True, logy=True)
    b = downsample(df, "x", "y", 5_000, logx=True, logy=True)
    assert len(a) == 5_000 and a.index.equals(b.index)
    small = df.iloc[:100]
    assert downsample(small, "x", "y", 5_000).index.equals(small.index)


def test_downsample_drops_non_positive_on_log_axes_and_keeps_extremes_cells() -> None:
    df = pd.DataFrame(
        {"x": [0.0, -1.0, 1.0, 1000.0] + [10.0] * 50, "y": [1.0, 1.0, 1.0, 1.0] + [2.0] * 50}
    )
    out = downsample(df, "x", "y", 10, logx=True)
    assert (out["x"] > 0).all()
    # 50 identical points collapse to one grid cell; both extremes survive
    assert {1.0, 1000.0} <= set(out["x"]) and len(out) == 3
