"""Compare two runs or two TensorRT-LLM versions on one slice (the read path of
``GET /api/v1/compare`` and the Compare page).

A side is named by one text (:func:`resolve_side`): digits are a run id ("123"),
anything else a TensorRT-LLM version ("1.2.0rc27"; "v1.2.0rc27" names the same
version). A run id that is unknown or outside the slice, or a version the slice does
not hold, is :class:`~service.errors.InvalidQuery` naming ``base`` or ``head`` (with the
versions the slice holds).

The slice: the :class:`~service.scope.Scope` filters over **every** candidate status
(failures and skips are part of a comparison), one routing pattern (the default rule of
:mod:`service.scope` unless ``dispatch`` is given). When the scope does not name a cell
(model, hardware, quant) and a side is a run id, the run's cell is used, so only that
cell's cached frame is read. Then ``analysis.compare.compare``.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import compare as K
from analysis.identity import Repeats
from analysis.noise import estimate_noise, history_until
from analysis.tables import plain_value
from analysis.versions import same_version, version_table
from db.errors import NotFound
from service.errors import InvalidQuery
from service.frames import CELL_COLUMNS, DashData
from service.scope import Routing, Scope, equals, provenance, route

SideKind = Literal["run", "version"]
_MAX_LISTED = 20


@dataclass(frozen=True)
class Side:
    """One side of a comparison: what was asked (``text``), whether it is a run or a
    version, the version it resolves to (a run's own version) and its run ids."""

    text: str
    kind: SideKind
    version: str | None
    run_ids: tuple[int, ...]

    @property
    def label(self) -> str:
        return f"run {self.text}" if self.kind == "run" else self.version or self.text

    def as_dict(self) -> dict[str, Any]:
        return {
            "requested": self.text,
            "kind": self.kind,
            "version": self.version,
            "run_ids": list(self.run_ids),
        }


def _column_lists(frame: pd.DataFrame) -> list[list[Any]]:
    """Each column as a list of JSON-ready values (``analysis.tables.plain_value``:
    missing and non-finite as None, numpy scalars as Python), converted per column
    (each category once) rather than per cell."""
    cols = []
    for name in frame.columns:
        s = frame[name]
        if s.dtype.kind == "f" and isinstance(s.dtype, np.dtype):
            v = s.to_numpy(np.float64)
            lst = v.tolist()
            if not np.isfinite(v).all():
                lst = [x if math.isfinite(x) else None for x in lst]
        elif s.dtype.kind in "iub" and isinstance(s.dtype, np.dtype):
            lst = s.to_numpy().tolist()
        elif isinstance(s.dtype, pd.CategoricalDtype):
            cats = [plain_value(x) for x in s.cat.categories.tolist()]
            table = np.array([*cats, None], dtype=object)
            lst = table[s.cat.codes.to_numpy()].tolist()  # code -1 (missing) -> None
        else:
            obj = s.astype(object)
            lst = [plain_value(x) for x in obj.where(obj.notna(), None).tolist()]
        cols.append(lst)
    return cols


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """``analysis.tables.to_json_records(frame)``, the same values, fast on the ~10k
    rows of a compare."""
    if frame.empty:
        return []
    names = [str(c) for c in frame.columns]
    return [dict(zip(names, row, strict=True)) for row in zip(*_column_lists(frame), strict=True)]


def csv_text(frame: pd.DataFrame) -> str:
    """``analysis.tables.to_csv_text(frame)``, the same text, fast on large tables."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([str(c) for c in frame.columns])
    if not frame.empty:
        cols = [["" if v is None else v for v in col] for col in _column_lists(frame)]
        writer.writerows(zip(*cols, strict=True))
    return buf.getvalue()


def slice_frame(data: DashData, scope: Scope) -> tuple[pd.DataFrame, Routing]:
    """The scope's candidates of every status (cell frame when the scope names a cell,
    else the bounded frame of its runs, ``DashData.bounded_frame``), its routing pattern
    applied, and which it is."""
    cell = scope.cell()
    if cell is not None:
        frame = data.cell_frame(cell) if cell in data.cells() else None
    else:
        frame = data.bounded_frame(scope.filters(), scope.run_id)
    if frame is None or frame.empty:
        empty = pd.DataFrame(columns=list(dict.fromkeys((*C.RUN_COLUMNS, *CELL_COLUMNS))))
        return empty, Routing(scope.dispatch, (), ())
    mask = np.ones(len(frame), dtype=bool)
    filters = scope.filters()
    if cell is not None:
        for col in (C.MODEL, C.HARDWARE, C.QUANT):
            filters.pop(col)
    for col, value in filters.items():
        mask = mask & equals(frame[col], value)
    if scope.run_id is not None:
        mask = mask & frame[C.RUN_ID].isin(scope.run_id).to_numpy(dtype=bool, na_value=False)
    sub = frame if mask.all() else frame.loc[mask].reset_index(drop=True)
    return route(sub, scope.dispatch)


def _known_versions(frame: pd.DataFrame) -> list[str]:
    return [str(v) for v in version_table(frame)["version"]]


def resolve_side(frame: pd.DataFrame, text: str, field: str) -> Side:
    """The :class:`Side` named by ``text`` within ``frame`` (module docstring)."""
    value = (text or "").strip()
    if not value:
        raise InvalidQuery(field, "give a run id or a TensorRT-LLM version", "missing")
    runs = frame[C.RUN_ID].to_numpy() if C.RUN_ID in frame else np.zeros(0)
    if value.isdigit():
        run_id = int(value)
        rows = frame.loc[runs == run_id]
        if rows.empty:
            raise InvalidQuery(
                field, f"run {run_id} has no candidates in this slice", "unknown_run"
            )
        version = rows[C.TRTLLM_VERSION].iloc[0]
        version = None if version is None or pd.isna(version) else str(version)
        return Side(value, "run", version, (run_id,))
    known = _known_versions(frame)
    match = [v for v in known if v == value] or [v for v in known if same_version(v, value)]
    if not match:
        listed = ", ".join(known[-_MAX_LISTED:]) or "none"
        raise InvalidQuery(
            field,
            f"unknown TensorRT-LLM version {value!r} in this slice; known: {listed}",
            "unknown_version",
        )
    versions = frame[C.TRTLLM_VERSION].astype(object)
    ids = sorted({int(r) for r in frame.loc[versions.isin(match).to_numpy(), C.RUN_ID]})
    return Side(value, "version", match[0], tuple(ids))


def side_rows(
    frame: pd.DataFrame, side: Side, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """The rows of ``frame`` a side stands for (its runs), only ``columns`` (those the
    frame has) when given."""
    keep = frame[C.RUN_ID].isin(side.run_ids).to_numpy(dtype=bool, na_value=False)
    if columns is not None:
        frame = frame[[c for c in dict.fromkeys(columns) if c in frame]]
    return frame.loc[keep].reset_index(drop=True)


def scope_for(data: DashData, scope: Scope, base: str, head: str) -> Scope:
    """``scope`` with the cell of a run-id side filled in when the scope names none (see
    module docstring); unknown run ids are :class:`InvalidQuery` on their field."""
    if scope.cell() is not None:
        return scope
    cells: dict[str, tuple[str, str, str]] = {}
    for field, text in (("base", base), ("head", head)):
        value = (text or "").strip()
        if not value.isdigit():
            continue
        try:
            run = data.store.get_run(int(value))
        except NotFound as err:
            raise InvalidQuery(field, f"no run {value}", "unknown_run") from err
        cells[field] = (str(run[C.MODEL]), str(run[C.HARDWARE]), str(run[C.QUANT]))
    if not cells:
        return scope
    model, hardware, quant = cells.get("base") or cells["head"]
    if "head" in cells and "base" in cells and cells["head"] != cells["base"]:
        raise InvalidQuery(
            "head",
            f"run {head} is {' · '.join(cells['head'])}, base is {' · '.join(cells['base'])}: "
            "compare runs of one model, hardware and quant",
            "other_cell",
        )
    for name, value in (("model", model), ("hardware", hardware), ("quant", quant)):
        current = getattr(scope, name)
        if current is not None and str(current).upper() != value.upper():
            field = "base" if "base" in cells else "head"
            raise InvalidQuery(field, f"the run is {name} {value}, not {current}", "other_cell")
    return scope.model_copy(update={"model": model, "hardware": hardware, "quant": quant})


@dataclass(frozen=True)
class CompareAnswer:
    """What ``GET /api/v1/compare`` and the Compare page show."""

    rows: pd.DataFrame
    best_changes: pd.DataFrame
    counts: dict[str, int]
    threshold_pct: float
    base: Side
    head: Side
    routing: Routing
    scope: Scope
    provenance: dict[str, Any]
    repeats: str

    @property
    def filename(self) -> str:
        """A CSV file name naming what it holds, e.g.
        ``compare-deepseek_v4_pro-GB300-NVFP4-1.2.0rc27-vs-1.2.0rc28``."""
        parts = [self.scope.model, self.scope.hardware, self.scope.quant]
        if self.scope.world_size is not None:
            parts.append(f"ws{self.scope.world_size}")
        if self.scope.phase is not None:
            parts.append(self.scope.phase)
        sides = [
            f"run{s.text}" if s.kind == "run" else (s.version or s.text)
            for s in (self.base, self.head)
        ]
        text = "-".join(["compare", *(p for p in parts if p), sides[0], "vs", sides[1]])
        return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def compare(
    data: DashData,
    base: str,
    head: str,
    scope: Scope | None = None,
    threshold_pct: float = K.DEFAULT_THRESHOLD_PCT,
    repeats: Repeats = "median",
) -> CompareAnswer:
    """Compare ``head`` with ``base`` (run ids or versions) on ``scope`` (module
    docstring). Cached per scope, sides, threshold, repeats and store version."""
    scope = scope_for(data, scope or Scope(), base, head)

    def compute() -> CompareAnswer:
        frame, routing = slice_frame(data, scope)
        b = resolve_side(frame, base, "base")
        h = resolve_side(frame, head, "head")
        cols = (*K.INPUT_COLUMNS, C.SYNTHETIC)
        bf, hf = side_rows(frame, b, cols), side_rows(frame, h, cols)
        # the noise model learns from the base's version and the ones before it
        noise = estimate_noise(history_until(frame, b.version, h.run_ids))
        result = K.compare(bf, hf, threshold_pct=threshold_pct, repeats=repeats, noise=noise)
        prov = {"base": provenance(bf), "head": provenance(hf)}
        return CompareAnswer(
            result.rows,
            result.best_changes,
            result.counts,
            result.threshold_pct,
            b,
            h,
            routing,
            scope,
            prov,
            repeats,
        )

    key = ("compare", scope.key(), base.strip(), head.strip(), float(threshold_pct), repeats)
    return data.cached(key, compute, where=scope.filters())


def compare_options(data: DashData, scope: Scope) -> dict[str, Any]:
    """What a side can be on ``scope``: its versions (version order, with dates and run
    ids) and its runs (newest first: run id, version, date, commit) -- the Compare
    page's dropdowns."""
    frame, routing = slice_frame(data, scope)
    table = version_table(frame)
    cols = [c for c in (C.RUN_ID, C.TRTLLM_VERSION, C.TRTLLM_COMMIT, C.RUN_DATE) if c in frame]
    runs = (
        frame[cols].astype(object).drop_duplicates(C.RUN_ID).sort_values(C.RUN_ID, ascending=False)
        if len(frame)
        else pd.DataFrame(columns=cols)
    )
    return {"versions": table, "runs": runs.reset_index(drop=True), "routing": routing}
