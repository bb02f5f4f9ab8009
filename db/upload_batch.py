"""New uploads of one shared DuckDB transaction written together, in a fixed number of
statements whatever their number.

Why: on DuckDB every write is serialised (:mod:`db.group_commit`), so the write path is
the one part of an upload that does not spread over the cores. Written one by one, each
upload costs the leader of a shared transaction three statements (look its sweeps up,
insert the upload, insert each run); each statement costs ~1-2 ms of DuckDB's planning
and, with 30 other request threads running, a wait for the interpreter lock when it
returns. Here a batch of *k* plainly new uploads costs three statements in all: one
look-up of every sweep fingerprint, one that draws all their ids from the sequences,
and one insert per table (their candidates go with the shared transaction's combined
insert, :func:`db.dialects.deferred_inserts`).

*Plainly new*: none of its sweeps is stored yet or sent by an earlier member of the
batch, no earlier member sent the same bytes, and no sweep appears twice in it. (When
a value of one of them does not convert to its column's Arrow type, none is combined.)
Every other member (the same measurements again, a
concurrent duplicate, anything unusual) is left to :func:`db.uploads.insert_upload`,
which the caller runs for it after this, in the same transaction, so it sees these
rows: the answers (and ids) are the ones the members would get one by one, the plainly
new ones first and then the others, each group in arrival order.
What goes wrong in a statement here fails the transaction as a member's error would
(:mod:`db.group_commit` then writes each member alone).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import sqlalchemy as sa

from db import dialects, schema
from db.prepared import StoredSweep
from db.uploads import IngestResult, RunRef, insert_upload, run_values, upload_values, with_run_id
from ingest.records import UploadMeta


@dataclasses.dataclass(frozen=True)
class UploadWrite:
    """One upload as the write path takes it (the arguments of
    :func:`db.uploads.insert_upload` but the connection)."""

    sha: str
    sweeps: tuple[StoredSweep, ...]
    size: int
    packed: bytes
    meta: UploadMeta
    uploaded_by: str | None

    def insert(self, conn: sa.Connection) -> IngestResult:
        """This upload alone (:func:`db.uploads.insert_upload`)."""
        return insert_upload(
            conn, self.sha, self.sweeps, self.size, self.packed, self.meta, self.uploaded_by
        )


_STORED_KEYS = sa.select(schema.runs.c.run_key).where(
    schema.runs.c.run_key.in_(sa.bindparam("keys", expanding=True))
)
# one statement for both sequences; ORDER BY: ids in the order they were drawn
_DRAW_IDS = sa.text(
    "SELECT 'u' AS kind, nextval('upload_id_seq') AS id FROM range(:n_uploads) "
    "UNION ALL SELECT 'r' AS kind, nextval('run_id_seq') AS id FROM range(:n_runs) "
    "ORDER BY kind, id"
)

# Arrow types of the column types in db.schema (what DuckDB casts from without loss)
_ARROW_TYPES: tuple[tuple[type[sa.types.TypeEngine[Any]], pa.DataType], ...] = (
    (sa.BigInteger, pa.int64()),
    (sa.Float, pa.float64()),
    (sa.Boolean, pa.bool_()),
    (sa.DateTime, pa.timestamp("us", tz="UTC")),
    (sa.LargeBinary, pa.large_binary()),
    (sa.Text, pa.large_string()),
)


def _arrow_type(column: sa.Column[Any]) -> pa.DataType:
    for kind, arrow in _ARROW_TYPES:
        if isinstance(column.type, kind):
            return arrow
    raise TypeError(f"no Arrow type for column {column.name} ({column.type})")


def arrow_rows(table: sa.Table, rows: Sequence[dict[str, Any]]) -> pa.Table:
    """``rows`` (dicts by column name; a missing key is NULL) as an Arrow table with one
    column per column of ``table``, typed as the table's column. Raises ``ValueError`` /
    ``TypeError`` (Arrow's) when a value does not fit its column's type."""
    return pa.table(
        {
            col.name: pa.array([row.get(col.name) for row in rows], type=_arrow_type(col))
            for col in table.columns
        }
    )


def _fresh(found: set[str], items: Sequence[UploadWrite]) -> list[int]:
    """Indexes of the plainly new members (module docstring), in arrival order."""
    seen_keys, seen_shas = set(found), set()
    fresh: list[int] = []
    for i, item in enumerate(items):
        keys = [s.run_key for s in item.sweeps]
        unique = set(keys)
        plain = keys and len(unique) == len(keys) and item.sha not in seen_shas
        if plain and not unique & seen_keys:
            fresh.append(i)
        seen_keys |= unique
        seen_shas.add(item.sha)
    return fresh


def write_fresh(conn: sa.Connection, items: Sequence[UploadWrite]) -> list[IngestResult | None]:
    """Write the plainly new members of ``items`` together (module docstring): their
    results, and None for each member left to the caller (all of them on PostgreSQL,
    where concurrent uploads have transactions of their own, and when fewer than two
    are plainly new)."""
    out: list[IngestResult | None] = [None] * len(items)
    if not dialects.is_duckdb(conn) or len(items) < 2:
        return out
    keys = [s.run_key for item in items for s in item.sweeps]
    found = {str(k) for (k,) in conn.execute(_STORED_KEYS, {"keys": keys})} if keys else set()
    fresh = _fresh(found, items)
    if len(fresh) < 2:
        return out
    now = dt.datetime.now(dt.UTC)
    uploads = [
        upload_values(it.sha, it.sweeps, it.size, it.packed, it.meta, it.uploaded_by, now)
        for it in (items[i] for i in fresh)
    ]
    runs = [run_values(0, s.run_key, s, now) for i in fresh for s in items[i].sweeps]
    try:  # converted before any id is drawn; a value that does not fit: one by one
        upload_table, run_table = arrow_rows(schema.uploads, uploads), arrow_rows(schema.runs, runs)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return out
    drawn = conn.execute(_DRAW_IDS, {"n_uploads": len(uploads), "n_runs": len(runs)}).all()
    run_ids = [int(r.id) for r in drawn if r.kind == "r"]
    upload_ids = [int(r.id) for r in drawn if r.kind == "u"]
    per_run_upload: list[int] = [
        upload_ids[n] for n, i in enumerate(fresh) for _ in range(len(items[i].sweeps))
    ]
    upload_table = upload_table.set_column(
        upload_table.column_names.index("upload_id"), "upload_id", pa.array(upload_ids, pa.int64())
    )
    for name, values in (("run_id", run_ids), ("upload_id", per_run_upload)):
        idx = run_table.column_names.index(name)
        run_table = run_table.set_column(idx, name, pa.array(values, pa.int64()))
    raw: Any = conn.connection.driver_connection
    dialects.insert_arrow(raw, "uploads", upload_table)
    dialects.insert_arrow(raw, "runs", run_table)
    next_run = iter(run_ids)
    for n, i in enumerate(fresh):
        refs: list[RunRef] = []
        for sweep in items[i].sweeps:
            run_id = next(next_run)
            dialects.bulk_insert_frame(conn, "candidates", with_run_id(sweep.rows, run_id))
            refs.append(RunRef(run_id, sweep.key, sweep.n_candidates))
        out[i] = IngestResult(upload_ids[n], items[i].sha, False, tuple(refs))
    return out
