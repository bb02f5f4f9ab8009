"""What the runs table says about cells (model x hardware x quant), without reading a
candidate: each cell's version, the distinct values of a run column, the runs a set of
filters selects and how many candidates they hold.

The runs table holds one row per stored sweep (thousands after a year of CI uploads)
while the candidates table holds millions, so everything a page or a route needs to
decide *which* candidates to read comes from here.

Contract
- ``cell_versions`` orders by model, hardware, quant; a cell's version is
  ``(runs, newest run id)``: an upload or a delete in the cell changes it, one in any
  other cell does not.
- ``distinct_values`` returns the sorted non-NULL values of one run column.
- ``matching_runs`` orders by run_id.
- Every database failure raises :class:`StoreError` (see :mod:`db.session`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import sqlalchemy as sa

from analysis import columns as C
from db import schema
from db.session import Database

CELL_KEYS: tuple[str, ...] = (C.MODEL, C.HARDWARE, C.QUANT)
# Run columns a filter may name here (equality; a list or tuple means any of).
_RUN_FILTERS = frozenset(c.name for c in schema.runs.columns if not c.name.endswith("_json"))
_CANDIDATE_VALUES = frozenset(C.CANDIDATE_COLUMNS) - {C.PER_RANK_JSON, C.EXTRA_JSON}


def run_conditions(filters: Mapping[str, Any]) -> list[sa.ColumnElement[bool]]:
    """Equality conditions on the runs table (None is ignored; a list or tuple means any
    of). Raises ValueError naming a column the runs table does not have."""
    r = schema.runs
    conds: list[sa.ColumnElement[bool]] = []
    for name, value in filters.items():
        if name not in _RUN_FILTERS:
            raise ValueError(f"filters: {name!r} is not a run column")
        if value is None:
            continue
        if isinstance(value, list | tuple):
            conds.append(r.c[name].in_(list(value)))
        else:
            conds.append(r.c[name] == value)
    return conds


class CellReader:
    """Cell-level facts read from the runs table only."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def cell_versions(self) -> pd.DataFrame:
        """One row per stored cell (runs without candidates left out): ``model``,
        ``hardware``, ``quant``, ``runs`` (number of runs), ``newest_run_id``,
        ``candidates`` (sum of the runs' candidate counts), ``synthetic`` (1 when any
        run is generated demo data, else 0); ordered by model, hardware, quant."""
        r = schema.runs
        keys = [r.c[k] for k in CELL_KEYS]
        synthetic = sa.case((r.c[C.SYNTHETIC].is_(True), 1), else_=0)
        stmt = (
            sa.select(
                *keys,
                sa.func.count().label("runs"),
                sa.func.max(r.c.run_id).label("newest_run_id"),
                sa.func.sum(r.c.n_candidates).label("candidates"),
                sa.func.max(synthetic).label(C.SYNTHETIC),
            )
            .where(r.c.n_candidates > 0)
            .group_by(*keys)
            .order_by(*keys)
        )
        with self._db.read("cell_versions", single=True) as conn:
            rows = conn.execute(stmt).all()
        frame = pd.DataFrame(
            [tuple(row) for row in rows],
            columns=[*CELL_KEYS, "runs", "newest_run_id", "candidates", C.SYNTHETIC],
        )
        for col in ("runs", "newest_run_id", "candidates", C.SYNTHETIC):
            frame[col] = frame[col].astype("int64")
        return frame

    def distinct_values(self, column: str, filters: Mapping[str, Any] | None = None) -> list[Any]:
        """Sorted distinct non-NULL values of run column ``column`` among the runs that
        match ``filters`` and hold at least one candidate. Unknown columns raise
        ValueError."""
        if column not in _RUN_FILTERS:
            raise ValueError(f"column: {column!r} is not a run column")
        r = schema.runs
        col = r.c[column]
        stmt = (
            sa.select(col)
            .where(col.is_not(None), r.c.n_candidates > 0, *run_conditions(filters or {}))
            .distinct()
            .order_by(col)
        )
        with self._db.read("distinct_values", single=True) as conn:
            return [row[0] for row in conn.execute(stmt).all()]

    def matching_runs(self, filters: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """``run_id``, the cell keys, ``trtllm_version``, ``run_date``, ``world_size``
        and ``n_candidates`` of the runs matching ``filters`` (run columns only), by
        run_id."""
        r = schema.runs
        cols = [
            r.c.run_id,
            *(r.c[k] for k in CELL_KEYS),
            r.c.world_size,
            r.c.trtllm_version,
            r.c.run_date,
            r.c.n_candidates,
        ]
        stmt = sa.select(*cols).where(*run_conditions(filters or {})).order_by(r.c.run_id)
        with self._db.read("matching_runs", single=True) as conn:
            rows = conn.execute(stmt).all()
        return pd.DataFrame([tuple(row) for row in rows], columns=[c.name for c in cols])

    def distinct_candidate_values(self, column: str) -> list[Any]:
        """Sorted distinct non-NULL values of candidate column ``column`` over every
        stored candidate, aggregated in the database (one value per row returned, not
        one per candidate). Unknown or JSON columns raise ValueError."""
        if column not in _CANDIDATE_VALUES:
            raise ValueError(f"column: {column!r} is not a candidate column")
        col = schema.candidates.c[column]
        stmt = sa.select(col).where(col.is_not(None)).distinct().order_by(col)
        with self._db.read("distinct_candidate_values", single=True) as conn:
            return [row[0] for row in conn.execute(stmt).all()]

    def phase_slices(self) -> pd.DataFrame:
        """One row per run and CUDA-graph flag its candidates hold: ``run_id``,
        ``model``, ``hardware``, ``quant``, ``world_size``, ``trtllm_version``,
        ``cuda_graph`` (NULL flags left out), grouped in the database; ordered by run_id,
        cuda_graph."""
        r, c = schema.runs, schema.candidates
        flags = (
            sa.select(c.c.run_id, c.c.cuda_graph)
            .where(c.c.cuda_graph.is_not(None))
            .distinct()
            .subquery("flags")
        )
        cols = [r.c.run_id, *(r.c[k] for k in CELL_KEYS), r.c.world_size, r.c.trtllm_version]
        stmt = (
            sa.select(*cols, flags.c.cuda_graph)
            .join(flags, flags.c.run_id == r.c.run_id)
            .order_by(r.c.run_id, flags.c.cuda_graph)
        )
        with self._db.read("phase_slices", single=True) as conn:
            rows = conn.execute(stmt).all()
        names = [*(x.name for x in cols), C.CUDA_GRAPH]
        return pd.DataFrame([tuple(row) for row in rows], columns=names)
