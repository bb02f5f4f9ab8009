"""The candidate read path: paged candidate lists, the analysis frame and coverage.

Contract
- ``list_candidates`` orders by candidate_index ascending unless ``order`` says
  otherwise (missing values last, candidate_index breaking ties); a missing run raises
  :class:`NotFound`.
- ``candidate_frame`` returns the same rows, columns and values on both dialects;
  ``categorical=True`` only changes how text columns are held (pandas categoricals with
  sorted categories), which is what big analysis reads should ask for.
- Every database failure raises :class:`StoreError` (see :mod:`db.session`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import sqlalchemy as sa

from analysis import columns as C
from db import dialects, schema
from db.errors import NotFound
from db.runs import Page
from db.session import Database

# Text columns (what ``candidate_frame(categorical=True)`` makes categorical).
TEXT_COLUMNS = frozenset(
    c
    for c in (*C.RUN_COLUMNS, *C.CANDIDATE_COLUMNS)
    if c not in (*C.INT_COLUMNS, *C.FLOAT_COLUMNS, *C.BOOL_COLUMNS, C.RUN_ID)
)
# Candidate columns a list/filter may order by.
_ORDERABLE = frozenset(C.CANDIDATE_COLUMNS) - {C.PER_RANK_JSON, C.EXTRA_JSON}

_COVERAGE_SQL = (
    "SELECT r.model, r.hardware, r.quant, r.world_size, "
    "bool_or(r.synthetic) AS synthetic, count(DISTINCT r.run_id) AS runs, "
    "count(*) AS candidates, "
    "count(DISTINCT CASE WHEN c.status = 'success' THEN "
    "CAST(c.num_tokens AS VARCHAR) || '|' || c.parallel_mode || '|' || "
    "CAST(c.cuda_graph AS VARCHAR) END) AS workloads "
    "FROM runs r JOIN candidates c ON c.run_id = r.run_id "
    "GROUP BY r.model, r.hardware, r.quant, r.world_size "
    "ORDER BY r.model, r.hardware, r.quant, r.world_size"
)


class CandidateReader:
    """Reads of stored candidates, alone or joined with their run's facts."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def list_candidates(
        self,
        run_id: int,
        *,
        filters: dict[str, Any] | None = None,
        order: str = C.CANDIDATE_INDEX,
        descending: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> Page:
        """Candidates of one run. ``filters`` maps candidate column names to a value
        (equality; a list means any of; None is ignored). Raises NotFound for a missing
        run and ValueError naming an unknown filter/order column."""
        c = schema.candidates
        with self._db.read("list_candidates") as conn:
            found = conn.execute(
                sa.select(schema.runs.c.run_id).where(schema.runs.c.run_id == run_id)
            ).first()
            if found is None:
                raise NotFound("run", run_id)
            conds = [c.c.run_id == run_id, *_filter_conditions(c, filters or {})]
            if order not in _ORDERABLE:
                raise ValueError(f"order: unknown column {order!r}")
            key = c.c[order].desc() if descending else c.c[order].asc()
            total = conn.execute(sa.select(sa.func.count()).select_from(c).where(*conds)).scalar()
            rows = conn.execute(
                sa.select(c)
                .where(*conds)
                .order_by(key.nulls_last(), c.c.candidate_index)
                .limit(limit)
                .offset(offset)
            ).all()
        items = pd.DataFrame([dict(row._mapping) for row in rows], columns=list(c.columns.keys()))
        return Page(items, int(total or 0), limit, offset)

    def candidate_frame(
        self,
        *,
        run_ids: Sequence[int] | None = None,
        filters: dict[str, Any] | None = None,
        success_only: bool = False,
        columns: Sequence[str] | None = None,
        categorical: bool = False,
    ) -> pd.DataFrame:
        """Candidates joined with their run's facts (``analysis.columns.RUN_COLUMNS``).

        ``filters`` may name run or candidate columns (equality; list = any of).
        ``columns`` restricts the candidate columns returned (run columns always come).
        ``categorical=True`` returns every text column (run and candidate) as a pandas
        categorical with sorted categories -- the same values, a fraction of the memory
        and much faster to read for big frames; otherwise text columns are ``str``.
        Integer and boolean columns are numpy ``int64`` / ``bool``, or nullable ``Int64``
        / ``boolean`` when the returned rows hold a NULL; float columns are ``float64``.
        ``success_only`` keeps successful candidates with a score. Rows are ordered by
        run_id, candidate_index. Unknown column names raise ValueError.
        """
        cand_cols = list(columns) if columns else list(C.CANDIDATE_COLUMNS)
        unknown = [x for x in cand_cols if x not in C.CANDIDATE_COLUMNS]
        if unknown:
            raise ValueError(f"columns: unknown candidate column(s) {unknown}")
        run_where: list[str] = ["1=1"]
        cand_where: list[str] = ["1=1"]
        run_params: list[Any] = []
        cand_params: list[Any] = []
        for name, value in (filters or {}).items():
            if name in C.RUN_COLUMNS:
                where, params = run_where, run_params
            elif name in C.CANDIDATE_COLUMNS:
                where, params = cand_where, cand_params
            else:
                raise ValueError(f"filters: unknown column {name!r}")
            values = value if isinstance(value, list | tuple) else [value]
            where.append(f'"{name}" IN ({", ".join("?" for _ in values)})')
            params.extend(values)
        if run_ids is not None:
            ids = [int(x) for x in run_ids] or [-1]
            run_where.append(f'"run_id" IN ({", ".join("?" for _ in ids)})')
            run_params.extend(ids)
        if success_only:
            cand_where.append('"status" = \'success\' AND "score_ms" IS NOT NULL')
        # Two reads joined here instead of one SQL join: the run facts are the same for
        # every candidate of a run, so they are read once per run and repeated by
        # position (for a 1M-row cell this halves the database's share of the read).
        run_sel = ", ".join(f'"{x}"' for x in C.RUN_COLUMNS)
        cand_sel = ", ".join(f'"{x}"' for x in cand_cols)
        run_sql = f"SELECT {run_sel} FROM runs WHERE {' AND '.join(run_where)} ORDER BY run_id"
        cand_sql = (
            f"SELECT run_id, {cand_sel} "
            f"FROM candidates WHERE run_id IN (SELECT run_id FROM runs WHERE "
            f"{' AND '.join(run_where)}) AND {' AND '.join(cand_where)} "
            "ORDER BY run_id, candidate_index"
        )
        text_runs = [x for x in C.RUN_COLUMNS if x in TEXT_COLUMNS]
        text_cands = [x for x in cand_cols if x in TEXT_COLUMNS]
        with self._db.read("candidate_frame") as conn:
            runs = dialects.read_frame(
                conn, run_sql, run_params, categorical=text_runs if categorical else ()
            )
            cands = dialects.read_frame(
                conn,
                cand_sql,
                [*run_params, *cand_params],
                categorical=text_cands if categorical else (),
            )
        return join_runs(runs, cands, cand_cols)

    def coverage(self) -> pd.DataFrame:
        """Model x hardware x quant x world size: runs, candidates and distinct workloads
        (num_tokens x parallel_mode x cuda_graph) with at least one success; ordered by
        model, hardware, quant, world size."""
        with self._db.read("coverage") as conn:
            return dialects.read_frame(conn, _COVERAGE_SQL)


def join_runs(runs: pd.DataFrame, cands: pd.DataFrame, cand_cols: list[str]) -> pd.DataFrame:
    """Run columns repeated onto their candidates (by position), then the candidate
    columns; nullable integer/boolean columns without a missing value become numpy."""
    run_ids = runs[C.RUN_ID].to_numpy(np.int64)
    cand_runs = cands[C.RUN_ID].to_numpy(np.int64)
    pos = np.searchsorted(run_ids, cand_runs) if len(run_ids) else np.zeros(0, np.int64)
    out: dict[str, Any] = {C.RUN_ID: cand_runs}
    if not len(cands) and cands[C.RUN_ID].dtype == object:
        # PostgreSQL rows carry no types: an empty read is all object columns
        out = {col: np.empty(0, dtype=object) for col in C.RUN_COLUMNS}
    for col in C.RUN_COLUMNS[1:] if len(out) == 1 else ():
        values = runs[col].array.take(pos) if len(cand_runs) else runs[col].array[:0]
        if isinstance(values.dtype, pd.Int64Dtype | pd.BooleanDtype) and not values.isna().any():
            values = values.to_numpy(values.dtype.numpy_dtype)
        elif col in TEXT_COLUMNS and values.dtype != object and values.isna().all():
            # as a direct read: a text column with no value at all is object/None
            none = np.full(len(values), None, dtype=object)
            values = pd.Categorical(none) if isinstance(values.dtype, pd.CategoricalDtype) else none
        out[col] = values
    for col in cand_cols:
        out[col] = cands[col].array
    return pd.DataFrame(out, copy=False)


def _filter_conditions(table: sa.Table, filters: dict[str, Any]) -> list[sa.ColumnElement[bool]]:
    conds: list[sa.ColumnElement[bool]] = []
    for name, value in filters.items():
        if name not in table.c or name in (C.PER_RANK_JSON, C.EXTRA_JSON):
            raise ValueError(f"filters: unknown column {name!r}")
        if value is None:
            continue
        if isinstance(value, list | tuple):
            conds.append(table.c[name].in_(list(value)))
        else:
            conds.append(table.c[name] == value)
    return conds
