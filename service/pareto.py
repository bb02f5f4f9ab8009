"""Pareto answers: the frontier table of a scope (API) and the view of one cell (page).

Both come from ``analysis``: :func:`pareto_table` is ``pareto_frontier`` per model x
hardware x quant x world size x phase over :func:`~service.scope.scoped_frame`;
:func:`cell_pareto` is ``analysis.frontier.frontier_view`` over the cached cell frame,
pruned by that frame's cached :class:`~analysis.frontier.ParetoIndex`. On one world
size and phase of one cell the two give the same frontier points (a parity test checks).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis.frontier import (
    AXES,
    FrontierAxes,
    FrontierFilter,
    FrontierView,
    ParetoIndex,
    frontier_view,
)
from analysis.pareto import FRONTIER_GROUP_COLS, pareto_frontier
from service.frames import Cell, DashData
from service.scope import Scope, provenance, scoped_frame

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
)


@dataclass(frozen=True)
class ParetoTable:
    """Frontier rows of a scope (``items``), the axes and where the rows came from."""

    items: pd.DataFrame
    x: str
    y: str
    provenance: dict[str, Any]


def pareto_table(data: DashData, scope: Scope, x: str = C.SCORE_MS) -> ParetoTable:
    """Frontier of tokens_per_s_per_gpu (higher is better) against ``x`` (score_ms or
    activated_tokens_per_rank, lower is better) per model x hardware x quant x world
    size x phase, over the scope's successful candidates. Columns: the group, ``x``,
    then :data:`_TABLE_TAIL` (recipe and identity); sorted by group then x."""
    df = scoped_frame(data, scope)
    group = list(FRONTIER_GROUP_COLS)
    cols = list(dict.fromkeys([*group, x, *_TABLE_TAIL]))
    if df.empty:
        return ParetoTable(pd.DataFrame(columns=cols), x, C.TOKENS_PER_S_PER_GPU, provenance(df))
    front = pareto_frontier(
        df, x=x, y=C.TOKENS_PER_S_PER_GPU, minimize_x=x == C.SCORE_MS, group_cols=group
    )
    out = front[cols] if not front.empty else pd.DataFrame(columns=cols)
    return ParetoTable(out, x, C.TOKENS_PER_S_PER_GPU, provenance(df))


def _prepare_rest(index: ParetoIndex) -> threading.Thread:
    """In a daemon thread: every axis of ``index`` not computed yet (the default view's
    first), then the atomic frontiers of every pair of axes at the default scales. A
    later change of axes is then a cache hit; a request meanwhile waits only for what
    it needs, or computes it itself when the thread is elsewhere."""
    default = FrontierAxes()
    # pairs that keep the default y (one dropdown change) come first
    pairs = sorted(
        itertools.permutations(AXES, 2),
        key=lambda p: (p != (default.x, default.y), p[1] != default.y),
    )

    def run() -> None:
        for axis in AXES:
            index.axis(axis)
        for x, y in pairs:
            index.atomic(FrontierAxes(x=x, y=y))

    thread = threading.Thread(target=run, name="moedash-pareto-index", daemon=True)
    thread.start()
    return thread


def pareto_index(data: DashData, cell: Cell, frame: pd.DataFrame | None = None) -> ParetoIndex:
    """The cached :class:`ParetoIndex` of the cell's frame (``frame``, default the
    current one), kept per frame object (``DashData.frame_cached``): an index always
    belongs to the frame it is used with, also when the store changes meanwhile. Its
    first use starts the background work of :func:`_prepare_rest`."""
    frame = data.cell_frame(cell) if frame is None else frame

    def build() -> ParetoIndex:
        index = ParetoIndex(frame)
        _prepare_rest(index)
        return index

    return data.frame_cached(("pareto-index", cell), frame, build)


@dataclass(frozen=True)
class CellPareto:
    """The Pareto view of one cell (``view``), and whether the cell holds demo data."""

    cell: Cell
    view: FrontierView
    synthetic: bool


def cell_pareto(
    data: DashData,
    cell: Cell,
    flt: FrontierFilter,
    axes: FrontierAxes,
    max_points: int = CLOUD_MAX_POINTS,
) -> CellPareto:
    """The cloud and frontier of ``cell`` under ``flt`` on ``axes`` (see
    ``analysis.frontier.frontier_view``); the cloud's ``_key`` is the row's position in
    ``data.cell_frame(cell)``."""
    frame = data.cell_frame(cell)
    atomic = pareto_index(data, cell, frame).atomic(axes)
    view = frontier_view(frame, flt, axes, max_points, atomic=atomic)
    return CellPareto(cell, view, data.is_synthetic(cell))


def filter_values(data: DashData, cell: Cell) -> dict[str, list[Any]]:
    """The values each filter can take in ``cell``: world sizes (ints, ascending) and
    dispatch, parallel mode, backend and comm (strings, sorted)."""
    frame = data.cell_frame(cell)

    def vals(col: str) -> list[Any]:
        return sorted(str(v) for v in frame[col].dropna().unique())

    return {
        "ws": sorted(int(v) for v in frame[C.WORLD_SIZE].dropna().unique()),
        "dispatch": vals(C.DISPATCH),
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


def cell_point(data: DashData, cell: Cell, point: str | None) -> pd.Series | None:
    """The cell-frame row of candidate ``point`` (``"<run_id>:<candidate_index>"``), or
    None when malformed or not in the cell."""
    ids = parse_point(point)
    if ids is None:
        return None
    frame = data.cell_frame(cell)
    hit = frame.index[
        (frame[C.RUN_ID].to_numpy() == ids[0]) & (frame[C.CANDIDATE_INDEX].to_numpy() == ids[1])
    ]
    return frame.loc[hit[0]] if len(hit) else None


def point_at(data: DashData, cell: Cell, key: int | None) -> str | None:
    """``"<run_id>:<candidate_index>"`` of the row at position ``key`` of the cell frame
    (the ``_key`` a figure sends back on click); None when out of range."""
    frame = data.cell_frame(cell)
    if key is None or not 0 <= key < len(frame):
        return None
    row = frame.iloc[key]
    return f"{int(row[C.RUN_ID])}:{int(row[C.CANDIDATE_INDEX])}"
