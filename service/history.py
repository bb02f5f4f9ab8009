"""History across TensorRT-LLM versions (the read path of ``GET /api/v1/history*`` and
the History page).

Every answer reads the slice of :func:`service.compare.slice_frame` (scope filters, one
routing pattern -- the default rule unless ``dispatch`` is given) and calls
``analysis.history``:

* :func:`history` -- per workload x configuration, the score at each version (or run),
  optionally narrowed to one workload (``num_tokens``) and configuration (``backend``,
  ``comm``, ``parallel_mode`` or the ``config`` label), or only each workload's best
  configuration per version (``best_only``);
* :func:`frontiers` -- the frontier of each version per slice, for overlays;
* :func:`frontier_change` -- the frontier change between two sides (versions or run
  ids, :func:`service.compare.resolve_side`) per slice.

Results are cached per question and store version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import history as H
from analysis.compare import CONFIG_LABEL
from analysis.identity import Repeats
from analysis.versions import version_table
from service.compare import Side, resolve_side, scope_for, side_rows, slice_frame
from service.errors import InvalidQuery
from service.frames import DashData
from service.scope import Routing, Scope, equals, provenance


@dataclass(frozen=True)
class HistoryFilter:
    """Which series of a slice to show (all given filters must match)."""

    num_tokens: int | None = None
    backend: str | None = None
    comm: str | None = None
    parallel_mode: str | None = None
    config: str | None = None

    def key(self) -> tuple[Any, ...]:
        return (self.num_tokens, self.backend, self.comm, self.parallel_mode, self.config)


@dataclass(frozen=True)
class HistoryAnswer:
    """Score history points (``items``), the slice's versions in order, the routing
    pattern and where the rows came from."""

    items: pd.DataFrame
    versions: pd.DataFrame
    routing: Routing
    provenance: dict[str, Any]
    by: str
    repeats: str


def _filtered(frame: pd.DataFrame, flt: HistoryFilter) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for col, value in (
        (C.NUM_TOKENS, flt.num_tokens),
        (C.BACKEND, flt.backend),
        (C.COMM, flt.comm),
        (C.PARALLEL_MODE, flt.parallel_mode),
    ):
        if value is not None:
            mask = mask & equals(frame[col], value)
    return frame if mask.all() else frame.loc[mask].reset_index(drop=True)


def history(
    data: DashData,
    scope: Scope,
    flt: HistoryFilter | None = None,
    by: H.By = "version",
    repeats: Repeats = "median",
    best_only: bool = False,
) -> HistoryAnswer:
    """The score history of the scope's series (module docstring); ``items`` as
    ``analysis.history.score_history`` (or ``best_history`` with ``best_only``)."""
    flt = flt or HistoryFilter()
    if best_only and by != "version":
        raise InvalidQuery("best_only", "the best per workload is taken per version", "by_run")

    def compute() -> HistoryAnswer:
        frame, routing = slice_frame(data, scope)
        sub = _filtered(frame, flt)
        items = H.score_history(sub, by=by, repeats=repeats)
        if flt.config is not None:
            items = items[items[CONFIG_LABEL] == flt.config].reset_index(drop=True)
        if best_only:
            items = H.best_history(items)
        return HistoryAnswer(items, version_table(frame), routing, provenance(sub), by, repeats)

    key = ("history", scope.key(), flt.key(), by, repeats, best_only)
    return data.cached(key, compute, where=scope.filters())


@dataclass(frozen=True)
class FrontiersAnswer:
    """Frontier points per slice and version (``items``), the versions in order."""

    items: pd.DataFrame
    versions: pd.DataFrame
    routing: Routing
    provenance: dict[str, Any]


def frontiers(
    data: DashData,
    scope: Scope,
    versions: list[str] | None = None,
    repeats: Repeats = "median",
) -> FrontiersAnswer:
    """The frontier of each version (or only ``versions``: each resolved like a compare
    side, 422 naming ``version`` when unknown) per slice of the scope."""

    def compute() -> FrontiersAnswer:
        frame, routing = slice_frame(data, scope)
        sub = frame
        if versions:
            sides = [resolve_side(frame, v, "version") for v in versions]
            ids = sorted({r for s in sides for r in s.run_ids})
            sub = frame.loc[frame[C.RUN_ID].isin(ids).to_numpy()].reset_index(drop=True)
        items = H.version_frontiers(sub, repeats)
        return FrontiersAnswer(items, version_table(frame), routing, provenance(sub))

    key = ("frontiers", scope.key(), tuple(versions or ()), repeats)
    return data.cached(key, compute, where=scope.filters())


@dataclass(frozen=True)
class FrontierChangeAnswer:
    """Per slice: its values, the change summary and both grids (``slices``); the two
    sides; routing and provenance."""

    slices: list[dict[str, Any]]
    base: Side
    head: Side
    routing: Routing
    provenance: dict[str, Any]

    def summary_frame(self) -> pd.DataFrame:
        """One row per slice: its values and the summary numbers (the CSV form)."""
        rows = []
        for item in self.slices:
            summary = {k: v for k, v in item["summary"].items() if k != "reference_point"}
            ref = item["summary"]["reference_point"]["latency_ms"]
            rows.append({**item["slice"], **summary, "reference_latency_ms": ref})
        return pd.DataFrame(rows)


def frontier_change(
    data: DashData,
    scope: Scope,
    base: str,
    head: str,
    repeats: Repeats = "median",
) -> FrontierChangeAnswer:
    """The frontier change from ``base`` to ``head`` (versions or run ids) per slice
    (model, hardware, quant, world size, phase) of the scope; see
    ``analysis.history.frontier_change`` for the method."""
    scope = scope_for(data, scope, base, head)

    def compute() -> FrontierChangeAnswer:
        frame, routing = slice_frame(data, scope)
        b, h = resolve_side(frame, base, "base"), resolve_side(frame, head, "head")
        bf, hf = side_rows(frame, b), side_rows(frame, h)
        bp = H.per_version_frames(bf, repeats)
        hp = H.per_version_frames(hf, repeats)
        slices = []
        for values, change in H.frontier_changes(bp, hp):
            slices.append(
                {
                    "slice": values,
                    "summary": change.summary,
                    "at_latency": change.at_latency,
                    "at_throughput": change.at_throughput,
                }
            )
        prov = {"base": provenance(bf), "head": provenance(hf)}
        return FrontierChangeAnswer(slices, b, h, routing, prov)

    key = ("frontier-change", scope.key(), base.strip(), head.strip(), repeats)
    return data.cached(key, compute, where=scope.filters())
