"""Pareto frontiers of one cell frame under any filter, fast enough to follow a slider.

A *cell frame* holds every candidate of one model x hardware x quant (any status). The
Pareto page filters it (world size, phase, attention, dispatch, parallel mode, backend,
comm) and draws the frontier of two of :data:`AXES`. Sorting the cell again for every
filter change is too slow on million-row cells, so :class:`ParetoIndex` keeps, per
axis, the rows ordered by (atomic group, value best first) and each value's dense rank.
An *atomic group* is one combination of every filterable column (:data:`ATOMIC`): any
filter selects a union of atomic groups, so the frontier of a filtered frame is the
frontier of the union of the atomic groups' frontiers. Those come from one linear pass
(a running minimum of the y rank along the x order) plus one ``pareto_frontier`` call
over the few rows that pass, and they are reused by every filter change.

Frontier semantics are exactly ``analysis.pareto.pareto_frontier`` (dominance, the
deterministic pick among exact duplicates, rankable rows only); tests compare the two.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import rankable_mask
from analysis.pareto import RECIPE_COLS, TIE_BREAK_COLS, pareto_frontier

# Axes a frontier can be drawn on, and which direction is better on each.
AXES: dict[str, str] = {
    C.SCORE_MS: "min",
    C.TOKENS_PER_S_PER_GPU: "max",
    C.ACTIVATED_TOKENS_PER_RANK: "min",
}
KEY = "_key"  # a row's position in the cell frame (click-through from a figure)
RANKABLE = "_rankable"  # optional bool column on cell frames: derived.rankable_mask
PHASES = ("decode", "prefill", "all")
# filter name -> column; each filter keeps rows whose value is one of those given
MULTI_COLUMNS: dict[str, str] = {
    "dispatch": C.DISPATCH,
    "mode": C.PARALLEL_MODE,
    "backend": C.BACKEND,
    "comm": C.COMM,
}
# Every column a filter can select on: a frontier of rows picked by any filter is a
# subset of the union of the frontiers of these atomic groups.
ATOMIC: tuple[str, ...] = (
    C.WORLD_SIZE,
    C.PHASE,
    C.ATTN,
    C.DISPATCH,
    C.PARALLEL_MODE,
    C.BACKEND,
    C.COMM,
)
# Columns every cloud / frontier row carries (recipe, status, filters, axes).
POINT_COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            *TIE_BREAK_COLS,
            *RECIPE_COLS,
            C.STATUS,
            C.SCORE_MS,
            C.FAILURE_CATEGORY,
            C.AUTOTUNE_STATUS,
            C.PHASE,
            C.NUM_TOKENS,
            C.WORLD_SIZE,
            C.ATTN,
            C.DISPATCH,
            *AXES,
        )
    )
)


@dataclass(frozen=True)
class FrontierFilter:
    """Which rows of a cell take part. ``ws`` None = every world size; ``phase`` one of
    :data:`PHASES`; ``attn`` "D", "T" or "all"; an empty tuple = every value."""

    ws: int | None = None
    phase: str = "decode"
    attn: str = "all"
    dispatch: tuple[str, ...] = ()
    mode: tuple[str, ...] = ()
    backend: tuple[str, ...] = ()
    comm: tuple[str, ...] = ()


@dataclass(frozen=True)
class FrontierAxes:
    """The two axes (names from :data:`AXES`) and whether each is logarithmic (a log
    axis drops values <= 0)."""

    x: str = C.SCORE_MS
    y: str = C.TOKENS_PER_S_PER_GPU
    logx: bool = True
    logy: bool = True


@dataclass(frozen=True)
class FrontierView:
    """What a Pareto view shows: ``cloud`` (matching plottable rows, downsampled),
    ``frontier`` (per phase, over every matching plottable row), ``n_matching`` (rows
    passing the filter, any status) and ``n_cloud`` (plottable ones before
    downsampling). Both frames carry :data:`POINT_COLUMNS` and :data:`KEY`."""

    cloud: pd.DataFrame
    frontier: pd.DataFrame
    n_matching: int
    n_cloud: int


def _rankable(frame: pd.DataFrame) -> np.ndarray:
    if RANKABLE in frame:
        flags: np.ndarray = frame[RANKABLE].to_numpy(dtype=bool)
        return flags
    return rankable_mask(frame)


def filter_mask(frame: pd.DataFrame, flt: FrontierFilter) -> np.ndarray:
    """Rows of ``frame`` that pass ``flt`` (any status); missing values never match a
    filter that names values."""
    mask = np.ones(len(frame), dtype=bool)
    if flt.ws is not None:
        mask &= frame[C.WORLD_SIZE].to_numpy(dtype=np.float64, na_value=np.nan) == flt.ws
    if flt.phase != "all":
        mask &= (frame[C.PHASE] == flt.phase).to_numpy(dtype=bool, na_value=False)
    if flt.attn != "all":
        mask &= (frame[C.ATTN] == flt.attn).to_numpy(dtype=bool, na_value=False)
    for name, col in MULTI_COLUMNS.items():
        values = getattr(flt, name)
        if values:
            mask &= frame[col].isin(values).to_numpy(dtype=bool, na_value=False)
    return mask


def plottable_mask(frame: pd.DataFrame, axes: FrontierAxes) -> np.ndarray:
    """Rankable rows with finite x and y (and > 0 on a log axis)."""
    mask = _rankable(frame).copy()
    for axis, log in ((axes.x, axes.logx), (axes.y, axes.logy)):
        v = frame[axis].to_numpy(np.float64, na_value=np.nan)
        mask &= np.isfinite(v) & ((v > 0) if log else True)
    return mask


def point_rows(frame: pd.DataFrame, idx: np.ndarray) -> pd.DataFrame:
    """The rows at positions ``idx`` with :data:`POINT_COLUMNS` and their position in
    :data:`KEY` (first column)."""
    cols = [c for c in POINT_COLUMNS if c in frame]
    sub = frame[cols].take(idx)
    sub.insert(0, KEY, idx)
    return sub


def group_ids(frame: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, int]:
    """(dense int64 id per row for the value combination of ``cols``, number of ids).
    Missing values are a value of their own; ids ascend with the combined codes."""
    key = np.zeros(len(frame), dtype=np.int64)
    for col in cols:
        s = frame[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            codes, card = s.cat.codes.to_numpy().astype(np.int64), len(s.cat.categories)
        else:
            raw, uniq = pd.factorize(s, use_na_sentinel=True)
            codes, card = np.asarray(raw, dtype=np.int64), len(uniq)
        key = key * (card + 1) + (codes + 1)
        if key.max(initial=0) > 1 << 40:  # keep the combined key small
            _, inverse = np.unique(key, return_inverse=True)
            key = inverse.astype(np.int64)
    if len(key) and key.max() < 1 << 26:
        present = np.zeros(int(key.max()) + 1, dtype=bool)
        present[key] = True
        dense = np.cumsum(present) - 1
        return dense[key], int(present.sum())
    uniq_keys, inv = np.unique(key, return_inverse=True)
    return inv.astype(np.int64), len(uniq_keys)


class ParetoIndex:
    """Per-cell orderings that make a frontier over any filter a linear pass.

    ``groups``: one int id per row for its atomic group (:data:`ATOMIC` values). Per
    axis (computed on first use, then kept): the rows ordered by (group, value best
    first) and the dense rank of each value (0 = best). Atomic frontiers are kept per
    (axes, scales that change the rows). Thread-safe: concurrent callers asking for
    the same axis or axes wait for one computation instead of repeating it.
    """

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.n = len(frame)
        self.groups, self.n_groups = group_ids(frame, [c for c in ATOMIC if c in frame])
        self._axes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._locks = {axis: threading.Lock() for axis in AXES}
        self._pos: dict[str, bool] = {}
        self._pos_lock = threading.Lock()
        self._atomic: dict[tuple[str, str, bool, bool], pd.DataFrame] = {}
        self._atomic_locks: dict[tuple[str, str, bool, bool], threading.Lock] = {}
        self._atomic_lock = threading.Lock()

    def axis(self, axis: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows by (group, value best first), dense rank of the value, 0 = best)."""
        with self._locks[axis]:
            if axis not in self._axes:
                self._axes[axis] = self._axis(axis)
            return self._axes[axis]

    def _axis(self, axis: str) -> tuple[np.ndarray, np.ndarray]:
        v = self.frame[axis].to_numpy(np.float64, na_value=np.nan)
        bad = v if AXES[axis] == "min" else -v  # ascending = best first; NaN last
        order = np.argsort(bad)
        sv = bad[order]
        new = np.ones(len(sv), dtype=bool)
        new[1:] = sv[1:] != sv[:-1]  # NaNs never compare equal: each its own rank
        rank = np.empty(len(sv), dtype=np.int64)
        rank[order] = np.cumsum(new) - 1
        g = self.groups[order]
        if self.n_groups <= np.iinfo(np.int16).max:  # stable radix sort on int16
            by_group = order[np.argsort(g.astype(np.int16), kind="stable")]
        else:
            by_group = order[np.lexsort((np.arange(len(g)), g))]
        return by_group, rank

    def _positive(self, axis: str) -> bool:
        """True when every rankable finite value of ``axis`` is > 0 (then the log and
        the linear scale keep the same rows and share one atomic result)."""
        with self._pos_lock:
            if axis not in self._pos:
                v = self.frame[axis].to_numpy(np.float64, na_value=np.nan)
                v = v[_rankable(self.frame) & np.isfinite(v)]
                self._pos[axis] = bool((v > 0).all())
            return self._pos[axis]

    def atomic(self, axes: FrontierAxes) -> pd.DataFrame:
        """``atomic_frontiers(self.frame, axes, self)``, computed once per axes and per
        scales that change the rows."""
        key = (
            axes.x,
            axes.y,
            axes.logx and not self._positive(axes.x),
            axes.logy and not self._positive(axes.y),
        )
        with self._atomic_lock:
            lock = self._atomic_locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._atomic:
                self._atomic[key] = atomic_frontiers(self.frame, axes, self)
            return self._atomic[key]

    def frontier_rows(self, axes: FrontierAxes) -> np.ndarray:
        """Sorted row positions holding every atomic-group frontier point of ``axes``
        (a superset: exact duplicates and equal-y points may stay; the exact frontier
        is ``pareto_frontier`` over these rows)."""
        plot = plottable_mask(self.frame, axes)
        # y first: when a background thread is computing x of the default view, the two
        # sorts run in parallel (numpy sorts release the GIL)
        _, y_rank = self.axis(axes.y)
        by_x, x_rank = self.axis(axes.x)
        seq: np.ndarray = by_x[plot[by_x]]
        if not len(seq):
            return seq
        # Along seq the groups ascend and x gets worse; offsetting each group's y ranks
        # below the previous group's makes one running minimum restart per group.
        vals = y_rank[seq] - self.groups[seq] * (self.n + 1)
        best = np.minimum.accumulate(vals)
        keep = np.ones(len(seq), dtype=bool)
        keep[1:] = vals[1:] < best[:-1]  # strictly better y than every better-x point
        # ... or an exact duplicate (same x and y) of the point that set that best y
        setter = np.maximum.accumulate(np.where(keep, np.arange(len(seq)), 0))
        xr = x_rank[seq]
        keep[1:] |= (vals[1:] == best[:-1]) & (xr[1:] == xr[setter[:-1]])
        rows: np.ndarray = np.sort(seq[keep])
        return rows


def atomic_frontiers(
    frame: pd.DataFrame, axes: FrontierAxes, index: ParetoIndex | None = None
) -> pd.DataFrame:
    """Frontier rows (:func:`point_rows`) of every atomic group of ``frame`` for
    ``axes``. With ``index`` (built on the same frame) only its
    :meth:`ParetoIndex.frontier_rows` take part -- the same result, faster."""
    rows = (
        index.frontier_rows(axes)
        if index is not None
        else np.flatnonzero(plottable_mask(frame, axes))
    )
    sub = point_rows(frame, rows)
    return pareto_frontier(
        sub,
        axes.x,
        axes.y,
        minimize_x=AXES[axes.x] == "min",
        maximize_y=AXES[axes.y] == "max",
        group_cols=[c for c in ATOMIC if c in sub],
    )


def frontier_view(
    frame: pd.DataFrame,
    flt: FrontierFilter,
    axes: FrontierAxes,
    max_points: int,
    atomic: pd.DataFrame | None = None,
) -> FrontierView:
    """The filtered cloud (at most ``max_points`` rows, see :func:`downsample`) and the
    frontier per phase over every matching plottable row.

    ``atomic`` is ``atomic_frontiers(frame, axes)`` (e.g. from a cached
    :class:`ParetoIndex`); it is computed here when not given.
    """
    mask = filter_mask(frame, flt)
    idx = np.flatnonzero(mask & plottable_mask(frame, axes))
    n_cloud = len(idx)
    atomic = atomic_frontiers(frame, axes) if atomic is None else atomic
    frontier = pareto_frontier(
        atomic[filter_mask(atomic, flt)],
        axes.x,
        axes.y,
        minimize_x=AXES[axes.x] == "min",
        maximize_y=AXES[axes.y] == "max",
        group_cols=[C.PHASE],
    )
    if len(idx) > 4 * max_points:
        # Thin uniformly first so the grid pass below stays cheap on huge cells.
        idx = np.sort(np.random.default_rng(0).choice(idx, 4 * max_points, replace=False))
    xy = pd.DataFrame(
        {
            "x": frame[axes.x].to_numpy(np.float64)[idx],
            "y": frame[axes.y].to_numpy(np.float64)[idx],
        }
    )
    keep = downsample(xy, "x", "y", max_points, logx=axes.logx, logy=axes.logy).index
    cloud = point_rows(frame, idx[keep.to_numpy()])
    return FrontierView(cloud, frontier, int(mask.sum()), n_cloud)


def downsample(
    df: pd.DataFrame,
    x: str,
    y: str,
    max_points: int,
    *,
    logx: bool = False,
    logy: bool = False,
    grid: tuple[int, int] = (900, 600),
    seed: int = 0,
) -> pd.DataFrame:
    """At most ``max_points`` rows of ``df`` that look like ``df`` when plotted.

    First one row per cell of a ``grid`` over the (log-)axes (points drawn on the same
    pixel add nothing), then a seeded uniform sample if that is still too many. Rows
    with non-finite x or y (or <= 0 on a log axis) are dropped. Deterministic; ``df``
    is not modified; the result keeps ``df``'s index.
    """
    xs = df[x].to_numpy(np.float64, na_value=np.nan)
    ys = df[y].to_numpy(np.float64, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        if logx:
            xs = np.where(xs > 0, np.log10(xs), np.nan)
        if logy:
            ys = np.where(ys > 0, np.log10(ys), np.nan)
    ok = np.isfinite(xs) & np.isfinite(ys)
    if ok.sum() <= max_points:
        return df.loc[ok]
    idx = np.flatnonzero(ok)
    xs, ys = xs[ok], ys[ok]

    def bins(v: np.ndarray, n: int) -> np.ndarray:
        lo, hi = float(v.min()), float(v.max())
        span = hi - lo if hi > lo else 1.0
        out: np.ndarray = np.minimum(((v - lo) / span * n).astype(np.int64), n - 1)
        return out

    cell = bins(xs, grid[0]) * (grid[1] + 1) + bins(ys, grid[1])
    _, first = np.unique(cell, return_index=True)
    idx = idx[np.sort(first)]
    if len(idx) > max_points:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(idx, size=max_points, replace=False))
    return df.iloc[idx]
