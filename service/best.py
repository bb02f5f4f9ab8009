"""Best configuration per workload: the API's table of a scope and the page's of a cell.

Both are ``analysis.best.best_by_workload`` over the successful candidates of one
routing pattern (``service.scope.routed_rows``: the asked ``dispatch``, by default
balanced where present), ranking configurations (median over repeat runs, or the
latest run: ``repeats``), with columns of each winner's own row attached
(:func:`with_winner_columns`); they differ only in the slice and in which columns are
attached, so the winners agree (a parity test checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.best import GROUPINGS, best_by_workload
from analysis.confidence import TOP3_SOURCES, with_evidence
from analysis.identity import REPEATS, Repeats
from analysis.noise import estimate_noise
from service.frames import Cell, DashData
from service.noise_model import cell_noise
from service.scope import Routing, Scope, provenance, routed_rows
from service.shared_answers import shareable

Grouping = Literal["bench_moe", "dashboard"]
# winner columns the API attaches per grouping (its response shape)
API_WINNER_COLUMNS: dict[str, tuple[str, ...]] = {
    "bench_moe": (C.DISPATCH,),
    "dashboard": (C.ACTIVATED_TOKENS_PER_RANK, C.DISPATCH_KB),
}
# winner columns the Best page shows next to every workload
PAGE_WINNER_COLUMNS: tuple[str, ...] = (
    C.DISPATCH,
    C.WORLD_SIZE,
    C.PHASE,
    C.ACTIVATED_TOKENS_PER_RANK,
    C.DISPATCH_KB,
    C.TOKENS_PER_S_PER_GPU,
)


def row_positions(frame: pd.DataFrame, run_ids: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """Row positions of (run_id, candidate_index) pairs in ``frame`` (-1 when absent).
    Frames sorted by that pair (cell frames are) take a binary search; others an index."""
    runs = frame[C.RUN_ID].to_numpy()
    idx = frame[C.CANDIDATE_INDEX].to_numpy()
    if (
        len(runs)
        and runs.dtype.kind == idx.dtype.kind == "i"
        and idx.min() >= 0
        and run_ids.min(initial=0) >= 0
        and cand.min(initial=0) >= 0
    ):
        width = int(max(idx.max(), cand.max(initial=0))) + 1
        if max(int(runs.max()), int(run_ids.max(initial=0))) < np.iinfo(np.int64).max // width:
            key = runs.astype(np.int64) * width + idx
            if bool(np.all(key[1:] > key[:-1])):
                want = run_ids * width + cand
                pos = np.minimum(np.searchsorted(key, want), len(key) - 1)
                found: np.ndarray = np.where(key[pos] == want, pos, -1)
                return found
    index = pd.MultiIndex.from_arrays([runs, idx])
    out: np.ndarray = index.get_indexer(pd.MultiIndex.from_arrays([run_ids, cand]))
    return out


def with_winner_columns(
    table: pd.DataFrame, frame: pd.DataFrame, columns: Sequence[str]
) -> pd.DataFrame:
    """``table`` (a ``best_by_workload`` result over ``frame``) plus, for each of
    ``columns`` not already in it, the value on the winner's own row, appended in the
    order given (``phase`` as plain strings)."""
    if table.empty or not columns:
        return table
    pos = row_positions(
        frame,
        table["best_" + C.RUN_ID].to_numpy(np.int64),
        table["best_" + C.CANDIDATE_INDEX].to_numpy(np.int64),
    )
    out = table.copy()
    for col in columns:
        if col not in out:
            values = frame[col].take(pos).to_numpy()
            out[col] = values.astype(object) if col == C.PHASE else values
    return out


@shareable
@dataclass(frozen=True)
class BestTable:
    """One row per workload (``items``), its grouping, where the rows came from, the
    routing pattern they cover and how repeats were combined."""

    items: pd.DataFrame
    grouping: str
    provenance: dict[str, Any]
    routing: Routing | None = None
    repeats: str = "median"


def best_table(
    data: DashData, scope: Scope, grouping: Grouping = "dashboard", repeats: Repeats = "median"
) -> BestTable:
    """``best_by_workload`` of the scope's successful candidates of one routing pattern
    under ``grouping`` (configurations: ``repeats``); the bench_moe grouping carries
    each winner's dispatch, the dashboard grouping its activated_tokens_per_rank and
    dispatch_kb. Cached per scope, grouping, repeats and store version. An unknown
    ``dispatch`` raises :class:`~service.errors.InvalidQuery`."""

    def compute() -> BestTable:
        # the whole answer is cached; the scope's rows are a mask over the cell frame
        # (no copy of a 1M-row cell's routed rows), every step below reads them in place
        frame, rows, routing = routed_rows(data, scope)
        prov = provenance(frame, rows)
        if not rows.any():
            return BestTable(pd.DataFrame(), grouping, prov, routing, repeats)
        # the cell's noise model (shared per cell version); a scope over several cells
        # estimates its own from its runs
        cell = scope.cell()
        noise = cell_noise(data, cell) if cell is not None else estimate_noise(frame.loc[rows])
        table = best_by_workload(frame, grouping, repeats=repeats, noise=noise, rows=rows)
        # winners are found by (run_id, candidate_index) and the evidence by run: the
        # whole frame answers both as its routed rows would
        items = with_winner_columns(table, frame, API_WINNER_COLUMNS[grouping])
        items = with_evidence(items, frame)  # the confidence panel, per workload
        return BestTable(items, grouping, prov, routing, repeats)

    return data.cached(
        ("best-scope", scope.key(), grouping, repeats),
        compute,
        where=scope.filters(),
        share=True,
    )


@shareable
@dataclass(frozen=True)
class CellBest:
    """The Best page's answer: the table and the routing pattern it covers."""

    table: pd.DataFrame
    routing: Routing


def cell_best(
    data: DashData,
    cell: Cell,
    grouping: str,
    ws: int | None = None,
    dispatch: str | None = None,
    repeats: Repeats = "median",
) -> CellBest:
    """The Best page's table of one cell (world size ``ws`` when given): the same
    answer as :func:`best_table` for that scope, with each winner's
    :data:`PAGE_WINNER_COLUMNS`. Cached per cell, grouping, ws, dispatch, repeats and
    store version. An unknown grouping or repeats raises ValueError, an unknown
    dispatch :class:`~service.errors.InvalidQuery`."""
    if grouping not in GROUPINGS:
        raise ValueError(f"unknown grouping {grouping!r}; use {sorted(GROUPINGS)}")
    if repeats not in REPEATS:
        raise ValueError(f"unknown repeats {repeats!r}; use {list(REPEATS)}")
    scope = Scope(
        model=cell.model, hardware=cell.hardware, quant=cell.quant, world_size=ws, dispatch=dispatch
    )

    def compute() -> CellBest:
        frame, rows, routing = routed_rows(data, scope)  # in place, as best_table
        if not rows.any():
            return CellBest(pd.DataFrame(), routing)
        noise = cell_noise(data, cell)
        table = best_by_workload(frame, grouping, repeats=repeats, noise=noise, rows=rows)
        table = with_winner_columns(table, frame, PAGE_WINNER_COLUMNS)
        return CellBest(with_evidence(table, frame), routing)

    key = ("best", cell, grouping, ws, dispatch, repeats)
    return data.cached(key, compute, where=cell, share=True)


def cell_best_table(
    data: DashData,
    cell: Cell,
    grouping: str,
    ws: int | None = None,
    dispatch: str | None = None,
    repeats: Repeats = "median",
) -> pd.DataFrame:
    """``cell_best(...).table`` (see :func:`cell_best`)."""
    return cell_best(data, cell, grouping, ws, dispatch, repeats).table


def dispatch_options(data: DashData, cell: Cell, ws: int | None = None) -> tuple[list[str], str]:
    """(routing patterns of the cell's successful candidates, sorted; the default one)."""
    routing = routed_rows(
        data, Scope(model=cell.model, hardware=cell.hardware, quant=cell.quant, world_size=ws)
    )[2]
    return list(routing.known), (routing.used[0] if routing.used else "")


def default_grouping(data: DashData, cell: Cell) -> Grouping:
    """The Best page's grouping when the URL names none: NVIDIA's dashboard grouping
    for a cell whose every run comes from a source that keeps only the top 3 per
    workload (its runs are single rankings of three rows: ranking per run would show one
    row per run and workload, not the configurations), bench_moe's own otherwise."""
    frame = data.cell_frame(cell)
    if frame.empty or C.SOURCE_FORMAT not in frame:
        return "bench_moe"
    sources = {str(s) for s in frame[C.SOURCE_FORMAT].dropna().unique()}
    return "dashboard" if sources and sources <= TOP3_SOURCES else "bench_moe"


def world_sizes(data: DashData, cell: Cell) -> list[int]:
    """The world sizes stored for ``cell``, ascending."""
    return sorted(int(w) for w in data.cell_frame(cell)[C.WORLD_SIZE].dropna().unique())
