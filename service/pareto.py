"""Pareto answers: the frontier table of a scope (API) and the view of one cell (page).

Both come from ``analysis`` and compare **configurations** of **one routing pattern**:
the rows are ``analysis.identity.configuration_frame`` (repeat runs of a workload x
configuration x TensorRT-LLM version collapsed to their median, or to the latest run:
``repeats``), and a frontier never mixes two dispatch patterns (the asked one; by
default balanced where present, else the most-measured -- ``service.scope``).

:func:`pareto_table` is ``pareto_frontier`` per model x hardware x quant x world size x
phase x dispatch over :func:`~service.scope.routed_frame`; :func:`cell_pareto` is
``analysis.frontier.frontier_view`` over the cell's cached configuration frame
(:func:`cell_config_frame`), pruned by its cached :class:`~analysis.frontier.ParetoIndex`.
On one world size and phase of one cell the two give the same frontier points (a parity
test checks). A point's ``_key`` is always its row position in ``data.cell_frame(cell)``
(the representative candidate of its configuration), whatever ``repeats`` is, so
:func:`point_at` resolves a click the same way in both modes.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import rankable_mask
from analysis.frontier import (
    AXES,
    KEY,
    RANKABLE,
    FrontierAxes,
    FrontierFilter,
    FrontierView,
    ParetoIndex,
    filter_mask,
    frontier_view,
)
from analysis.identity import (
    AGGREGATE_COLUMNS,
    N_REPEATS,
    REPEAT_RUN_IDS,
    SCORE_SPREAD,
    SPREAD_SOURCE,
    Repeats,
    configuration_frame,
)
from analysis.pareto import FRONTIER_GROUP_COLS, pareto_frontier
from service.best import row_positions
from service.frames import Cell, DashData
from service.scope import Routing, Scope, provenance, resolve_dispatch, routed_rows
from service.shared_answers import shareable

CLOUD_MAX_POINTS = 20_000  # keeps the figure payload under ~500 KB (see bench/dashboard.py)
PARETO_X = (C.SCORE_MS, C.ACTIVATED_TOKENS_PER_RANK)  # x axes of the API's frontier
_TABLE_TAIL = (
    C.TOKENS_PER_S_PER_GPU,
    C.SCORE_MS,
    C.NUM_TOKENS,
    C.ACTIVATED_TOKENS_PER_RANK,
    C.BACKEND,
    C.COMM,
    C.PARALLEL_MODE,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.CUDA_GRAPH,
    C.RUN_ID,
    C.CANDIDATE_INDEX,
    C.DISPATCH,
    N_REPEATS,
    REPEAT_RUN_IDS,
    SCORE_SPREAD,
    SPREAD_SOURCE,
)
GROUP_COLS: tuple[str, ...] = (*FRONTIER_GROUP_COLS, C.DISPATCH)  # one frontier each


@shareable
@dataclass(frozen=True)
class ParetoTable:
    """Frontier rows of a scope (``items``), the axes, where the rows came from, the
    routing pattern they cover and how repeats were combined."""

    items: pd.DataFrame
    x: str
    y: str
    provenance: dict[str, Any]
    routing: Routing | None = None
    repeats: str = "median"


def pareto_table(
    data: DashData, scope: Scope, x: str = C.SCORE_MS, repeats: Repeats = "median"
) -> ParetoTable:
    """Frontier of tokens_per_s_per_gpu (higher is better) against ``x`` (score_ms or
    activated_tokens_per_rank, lower is better) per model x hardware x quant x world
    size x phase x dispatch, over the configurations of the scope's successful
    candidates of one routing pattern (see module docstring). Columns: the group,
    ``x``, then :data:`_TABLE_TAIL` (recipe, identity, repeats and their spread);
    sorted by group then x. An unknown ``dispatch`` raises InvalidQuery."""
    group = list(GROUP_COLS)
    cols = list(dict.fromkeys([*group, x, *_TABLE_TAIL]))

    def compute() -> ParetoTable:
        # the scope's rows as a mask over the (cached) cell frame: no copy of them
        frame, rows, routing = routed_rows(data, scope)
        prov = provenance(frame, rows)
        if not rows.any():
            empty = pd.DataFrame(columns=cols)
            return ParetoTable(empty, x, C.TOKENS_PER_S_PER_GPU, prov, routing, repeats)
        configs = configuration_frame(frame, repeats, rows=rows)
        front = pareto_frontier(
            configs, x=x, y=C.TOKENS_PER_S_PER_GPU, minimize_x=x == C.SCORE_MS, group_cols=group
        )
        out = front[cols] if not front.empty else pd.DataFrame(columns=cols)
        return ParetoTable(out, x, C.TOKENS_PER_S_PER_GPU, prov, routing, repeats)

    # cached per scope and the versions of its cells (the page's view is cached too)
    key = ("pareto-table", scope.key(), x, repeats)
    return data.cached(key, compute, where=scope.filters(), share=True)


@dataclass(frozen=True)
class ParetoFilter(FrontierFilter):
    """The Pareto page's filter: ``analysis.frontier.FrontierFilter`` (``dispatch``
    holds at most one pattern; empty = the default) plus how repeats are combined."""

    repeats: Repeats = "median"


CELL_POS = "_cell_pos"  # a configuration row's representative's position in the cell frame


def cell_config_frame(data: DashData, cell: Cell, repeats: Repeats = "median") -> pd.DataFrame:
    """The cell's candidates as the Pareto page plots them: one row per configuration
    (``configuration_frame`` of the rankable rows, with :data:`CELL_POS`) beside the
    cell's non-rankable rows as they are (counted as "matching", never plotted); in
    (run_id, candidate_index) order. Cached per cell, repeats and store version."""

    def build() -> pd.DataFrame:
        frame = data.cell_frame(cell)
        configs = configuration_frame(frame, repeats)
        rest = (
            frame.loc[~frame[RANKABLE].to_numpy(dtype=bool)]
            if RANKABLE in frame
            else (frame.loc[~rankable_mask(frame)])
        )
        rest = rest.assign(
            **{N_REPEATS: 1, REPEAT_RUN_IDS: None, SCORE_SPREAD: np.nan, SPREAD_SOURCE: "unknown"}
        )
        out = pd.concat([configs, rest], ignore_index=True)
        for col in frame.columns:  # keep the cell frame's categoricals (fast filters)
            if isinstance(frame[col].dtype, pd.CategoricalDtype):
                out[col] = out[col].astype(frame[col].dtype)
        out = out.sort_values([C.RUN_ID, C.CANDIDATE_INDEX], kind="mergesort")
        out = out.reset_index(drop=True)
        pos = row_positions(
            frame, out[C.RUN_ID].to_numpy(np.int64), out[C.CANDIDATE_INDEX].to_numpy(np.int64)
        )
        out[CELL_POS] = pos
        out[RANKABLE] = rankable_mask(out)
        return out

    return data.cached(("pareto-configs", cell, repeats), build, where=cell)


def _prepare_rest(index: ParetoIndex, done: Callable[[], None]) -> threading.Thread:
    """In a daemon thread: every axis of ``index`` not computed yet (the default view's
    first), then the atomic frontiers of every pair of axes at the default scales, then
    ``done()`` (the cache weighs the filled index again). A later change of axes is
    then a cache hit; a request meanwhile waits only for what it needs, or computes it
    itself when the thread is elsewhere."""
    default = FrontierAxes()
    # pairs that keep the default y (one dropdown change) come first
    pairs = sorted(
        itertools.permutations(AXES, 2),
        key=lambda p: (p != (default.x, default.y), p[1] != default.y),
    )

    def run() -> None:
        try:
            for axis in AXES:
                index.axis(axis)
            for x, y in pairs:
                index.atomic(FrontierAxes(x=x, y=y))
        finally:
            done()

    thread = threading.Thread(target=run, name="moedash-pareto-index", daemon=True)
    thread.start()
    return thread


def pareto_index(data: DashData, cell: Cell, frame: pd.DataFrame | None = None) -> ParetoIndex:
    """The cached :class:`ParetoIndex` of the cell's frame (``frame``, default the
    current one), kept per frame object (``DashData.frame_cached``): an index always
    belongs to the frame it is used with, also when the store changes meanwhile. Its
    first use starts the background work of :func:`_prepare_rest`."""
    frame = data.cell_frame(cell) if frame is None else frame

    key = ("pareto-index", cell)

    def build() -> ParetoIndex:
        index = ParetoIndex(frame)
        _prepare_rest(index, lambda: data.frame_reweigh(key, frame))
        return index

    return data.frame_cached(key, frame, build)


@dataclass(frozen=True)
class CellPareto:
    """The Pareto view of one cell (``view``), whether the cell holds demo data, the
    routing pattern drawn (``routing``: one pattern) and how repeats were combined."""

    cell: Cell
    view: FrontierView
    synthetic: bool
    routing: Routing | None = None
    repeats: str = "median"


def cell_routing(data: DashData, cell: Cell, flt: FrontierFilter) -> Routing:
    """The one routing pattern a Pareto view of ``cell`` under ``flt`` draws: the first
    of ``flt.dispatch``, else the default over the rankable rows the other filters keep
    (what ``/api/v1/pareto`` with the same world size / phase / attention resolves)."""
    frame = data.cell_frame(cell)
    asked = flt.dispatch[0] if flt.dispatch else None
    others = dataclasses.replace(flt, dispatch=())
    keep = filter_mask(frame, others) & rankable_mask(frame)
    return resolve_dispatch(frame[C.DISPATCH][keep], asked)


def cell_pareto(
    data: DashData,
    cell: Cell,
    flt: FrontierFilter,
    axes: FrontierAxes,
    max_points: int = CLOUD_MAX_POINTS,
    repeats: Repeats | None = None,
) -> CellPareto:
    """The cloud and frontier of ``cell`` under ``flt`` on ``axes`` (see
    ``analysis.frontier.frontier_view``) over :func:`cell_config_frame`, for the one
    routing pattern of :func:`cell_routing`; ``repeats`` defaults to ``flt.repeats``
    for a :class:`ParetoFilter`, else "median". The ``_key`` of cloud and frontier rows
    is the representative candidate's position in ``data.cell_frame(cell)``. An
    unknown dispatch raises InvalidQuery."""
    mode: Repeats = repeats or ("latest" if getattr(flt, "repeats", None) == "latest" else "median")
    routing = cell_routing(data, cell, flt)
    flt = dataclasses.replace(flt, dispatch=routing.used[:1])
    frame = cell_config_frame(data, cell, mode)
    atomic = pareto_index(data, cell, frame).atomic(axes)
    view = frontier_view(frame, flt, axes, max_points, atomic=atomic)
    cell_pos = frame[CELL_POS].to_numpy(np.int64)

    def remap(points: pd.DataFrame) -> pd.DataFrame:
        if points.empty:
            return points
        out = points.copy()
        out[KEY] = cell_pos[out[KEY].to_numpy(np.int64)]
        extra = [c for c in AGGREGATE_COLUMNS if c in frame and c not in out]
        for col in extra:
            out[col] = frame[col].to_numpy()[points[KEY].to_numpy(np.int64)]
        return out

    view = dataclasses.replace(view, cloud=remap(view.cloud), frontier=remap(view.frontier))
    return CellPareto(cell, view, data.is_synthetic(cell), routing, mode)


def filter_values(data: DashData, cell: Cell) -> dict[str, list[Any]]:
    """The values each filter can take in ``cell``: world sizes (ints, ascending) and
    dispatch, parallel mode, backend and comm (strings, sorted); ``dispatch_default``
    is a one-item list, the pattern drawn when none is chosen (empty when no row has
    a label)."""
    frame = data.cell_frame(cell)

    def vals(col: str) -> list[Any]:
        return sorted(str(v) for v in frame[col].dropna().unique())

    default = cell_routing(data, cell, FrontierFilter(phase="all")).used
    return {
        "ws": sorted(int(v) for v in frame[C.WORLD_SIZE].dropna().unique()),
        "dispatch": vals(C.DISPATCH),
        "dispatch_default": list(default[:1]),
        "mode": vals(C.PARALLEL_MODE),
        "backend": vals(C.BACKEND),
        "comm": vals(C.COMM),
    }


def parse_point(point: str | None) -> tuple[int, int] | None:
    """``"<run_id>:<candidate_index>"`` -> (run_id, candidate_index), None if malformed."""
    if not point or ":" not in point:
        return None
    run, _, cand = point.partition(":")
    try:
        return int(run), int(cand)
    except ValueError:
        return None


def cell_point(
    data: DashData, cell: Cell, point: str | None, repeats: Repeats = "median"
) -> pd.Series | None:
    """The row of candidate ``point`` (``"<run_id>:<candidate_index>"``) as the Pareto
    page plots it: its configuration's row (:func:`cell_config_frame`: aggregate
    score, n_repeats, spread) when the candidate represents one, else its own
    cell-frame row; None when malformed or not in the cell."""
    ids = parse_point(point)
    if ids is None:
        return None
    for frame in (cell_config_frame(data, cell, repeats), data.cell_frame(cell)):
        hit = frame.index[
            (frame[C.RUN_ID].to_numpy() == ids[0]) & (frame[C.CANDIDATE_INDEX].to_numpy() == ids[1])
        ]
        if len(hit):
            return frame.loc[hit[0]].drop(labels=[CELL_POS], errors="ignore")
    return None


def point_at(data: DashData, cell: Cell, key: int | None) -> str | None:
    """``"<run_id>:<candidate_index>"`` of the row at position ``key`` of the cell frame
    (the ``_key`` a figure sends back on click); None when out of range."""
    frame = data.cell_frame(cell)
    if key is None or not 0 <= key < len(frame):
        return None
    row = frame.iloc[key]
    return f"{int(row[C.RUN_ID])}:{int(row[C.CANDIDATE_INDEX])}"
