"""Per-run summaries of the measurements: what the coverage table and the capabilities
read, a few dozen rows per run instead of its every candidate.

``run_workloads`` (revision 0009): per run x workload (num_tokens, parallel_mode,
cuda_graph; NULLs form their own group) the rows stored and the rows with status
success. ``run_capabilities``: per run x backend x comm the rows with status success
(groups without one are not written). Both are written by :func:`summarize` in the
transaction that writes the run's measurements (``db.stats``: an upload's copy and the
catch-up of a cell), so a run has summary rows exactly when it has measurement rows;
revision 0009 summarised the runs recorded before it.

Contract
- ``summarize`` aggregates the given runs' measurement rows in the database (one
  INSERT ... SELECT per table, the same SQL on DuckDB and PostgreSQL); the caller makes
  sure they are not summarised yet (their measurements were written in this
  transaction).
- ``delete`` removes a run's summary rows (``RunRepository.delete_run``).
- ``cell_coverage`` returns ``CandidateReader.coverage`` restricted to one cell (the same
  columns, values, dtypes and order) from ``run_workloads`` joined with ``runs``;
  ``capabilities`` returns what ``db.capabilities`` states over the whole store from
  ``run_capabilities`` joined with ``runs``. At 10^8 stored candidates both read
  thousands of runs' summaries, not a hundred million rows (docs/scale.md).
- Every database failure raises :class:`StoreError` (see :mod:`db.session`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import sqlalchemy as sa

from analysis import columns as C
from db import dialects, schema

_WORKLOAD_KEYS = (C.NUM_TOKENS, C.PARALLEL_MODE, C.CUDA_GRAPH)
_CAPABILITY_KEYS = (C.BACKEND, C.COMM)

# The same columns, values and order as db.candidates' whole-store coverage: a workload
# counts once per world size when any of its rows in the cell succeeded; ``candidates``
# is every stored row (summed per run x workload).
CELL_COVERAGE_SQL = (
    "SELECT r.model, r.hardware, r.quant, r.world_size, "
    "bool_or(r.synthetic) AS synthetic, count(DISTINCT r.run_id) AS runs, "
    "CAST(sum(w.n_rows) AS BIGINT) AS candidates, "
    "count(DISTINCT CASE WHEN w.n_success > 0 THEN "
    "CAST(w.num_tokens AS VARCHAR) || '|' || w.parallel_mode || '|' || "
    "CAST(w.cuda_graph AS VARCHAR) END) AS workloads "
    "FROM run_workloads w JOIN runs r ON w.run_id = r.run_id "
    "WHERE r.model = ? AND r.hardware = ? AND r.quant = ? "
    "GROUP BY r.model, r.hardware, r.quant, r.world_size "
    "ORDER BY r.model, r.hardware, r.quant, r.world_size"
)


def summarize(conn: sa.Connection, run_ids: Sequence[int]) -> None:
    """Write the summary rows of ``run_ids`` from their measurement rows."""
    if not run_ids:
        return
    m = schema.measurements
    ids = [int(x) for x in run_ids]
    success = sa.case((m.c.status == "success", 1), else_=0)
    keys = [m.c[k] for k in _WORKLOAD_KEYS]
    workloads = (
        sa.select(
            m.c.run_id, *keys, sa.func.count().label("n_rows"), sa.func.sum(success).label("s")
        )
        .where(m.c.run_id.in_(ids))
        .group_by(m.c.run_id, *keys)
    )
    conn.execute(
        schema.run_workloads.insert().from_select(
            [C.RUN_ID, *_WORKLOAD_KEYS, "n_rows", "n_success"], workloads
        )
    )
    caps = [m.c[k] for k in _CAPABILITY_KEYS]
    capabilities = (
        sa.select(m.c.run_id, *caps, sa.func.count().label("n"))
        .where(m.c.run_id.in_(ids), m.c.status == "success")
        .group_by(m.c.run_id, *caps)
    )
    conn.execute(
        schema.run_capabilities.insert().from_select(
            [C.RUN_ID, *_CAPABILITY_KEYS, "n_success"], capabilities
        )
    )


def delete(conn: sa.Connection, run_id: int) -> None:
    """Remove ``run_id``'s summary rows."""
    for table in (schema.run_workloads, schema.run_capabilities):
        conn.execute(table.delete().where(table.c.run_id == run_id))


def cell_coverage(conn: sa.Connection, model: str, hardware: str, quant: str) -> pd.DataFrame:
    """One cell's coverage rows (see the module contract)."""
    return dialects.read_frame(conn, CELL_COVERAGE_SQL, [model, hardware, quant])


def capabilities(conn: sa.Connection) -> list[tuple[object, ...]]:
    """Successful rows per hardware (upper case) x world size x quant x backend (upper
    case) x comm ("AUTO" where none was recorded): ``n_success`` rows and ``n_runs``
    distinct runs, ordered by the key; rows with a NULL hardware, world size, quant or
    backend left out."""
    r, k = schema.runs, schema.run_capabilities
    hardware = sa.func.upper(r.c.hardware).label("hardware")
    backend = sa.func.upper(k.c.backend).label("backend")
    comm = sa.func.coalesce(k.c.comm, sa.literal("AUTO")).label("comm")
    keys = [hardware, r.c.world_size, r.c.quant, backend, comm]
    stmt = (
        sa.select(
            *keys,
            sa.cast(sa.func.sum(k.c.n_success), sa.BigInteger).label("n_success"),
            sa.func.count(sa.distinct(k.c.run_id)).label("n_runs"),
        )
        .join_from(k, r, r.c.run_id == k.c.run_id)
        .where(
            r.c.hardware.is_not(None),
            r.c.world_size.is_not(None),
            r.c.quant.is_not(None),
            k.c.backend.is_not(None),
        )
        .group_by(*keys)
        .order_by(*keys)
    )
    return [tuple(row) for row in conn.execute(stmt).all()]
