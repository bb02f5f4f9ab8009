"""The cross-validation write path, inside the caller's transaction:
:meth:`db.crossval.CrossvalRepository.import_serving` and ``add_outcomes`` own the
transaction, the retry and the contract; these functions only read and write through
the connection they are given, and decide everything before their first write."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa

from analysis import crossval_columns as cc
from analysis.crossval import validate_outcome
from db import dialects
from db.crossval_records import (
    TPS_FIELDS,
    OutcomeConflict,
    OutcomeRecord,
    OutcomesResult,
    OutcomeState,
    OutcomeWrite,
    ServingImportResult,
    import_result,
)
from db.dialects import plain_scalar as _plain
from db.errors import NotFound
from db.schema_crossval import (
    WORKLOAD_KEY_COLUMNS,
    crossval_outcomes,
    serving_imports,
    serving_workloads,
)

_CHUNK = 1000  # ids per IN (...) list


def n_entries(points_df: pd.DataFrame) -> int:
    """Distinct (master file, entry) pairs among the imported points."""
    if points_df.empty:
        return 0
    return int(points_df[[cc.SOURCE, cc.ENTRY]].drop_duplicates().shape[0])


def workload_rows(workloads_df: pd.DataFrame) -> list[dict[str, Any]]:
    """Store rows: the key columns plus ``row_json`` (every WORKLOAD_COLUMNS value)."""
    rows = []
    for rec in workloads_df[list(cc.WORKLOAD_COLUMNS)].to_dict("records"):
        full = {k: _plain(v) for k, v in rec.items()}
        row = {k: full[k] for k in (cc.WORKLOAD_ID, *WORKLOAD_KEY_COLUMNS)}
        row["row_json"] = json.dumps(full, separators=(",", ":"), allow_nan=False)
        rows.append(row)
    return rows


def _chunks(items: Sequence[str]) -> Iterator[list[str]]:
    for i in range(0, len(items), _CHUNK):
        yield list(items[i : i + _CHUNK])


def _stored_workloads(conn: sa.Connection, ids: Sequence[str]) -> dict[str, str]:
    """workload_id -> row_json of the stored workloads among ``ids``."""
    t = serving_workloads
    out: dict[str, str] = {}
    for chunk in _chunks(ids):
        for wid, text in conn.execute(
            sa.select(t.c.workload_id, t.c.row_json).where(t.c.workload_id.in_(chunk))
        ).all():
            out[str(wid)] = str(text)
    return out


def insert_import(
    conn: sa.Connection,
    rows: list[dict[str, Any]],
    content_hash: str,
    source: str | None,
    counts: Mapping[str, int],
) -> ServingImportResult:
    """Record the import, append its new workloads (after every stored one, in input
    order) and rewrite the stored ones whose mapping changed; none is deleted."""
    stored = _stored_workloads(conn, [r[cc.WORKLOAD_ID] for r in rows])
    new = [r for r in rows if r[cc.WORKLOAD_ID] not in stored]
    changed = [
        r
        for r in rows
        if r[cc.WORKLOAD_ID] in stored and stored[r[cc.WORKLOAD_ID]] != r["row_json"]
    ]
    now = dt.datetime.now(dt.UTC)
    values = {
        "content_hash": content_hash,
        "source": source,
        "imported_at": now,
        **counts,
        "n_new_workloads": len(new),
        "n_updated_workloads": len(changed),
    }
    import_id = int(
        conn.execute(
            serving_imports.insert().values(**values).returning(serving_imports.c.import_id)
        ).scalar_one()
    )
    t = serving_workloads
    if new:
        start = int(
            conn.execute(sa.select(sa.func.coalesce(sa.func.max(t.c.ordinal), 0))).scalar_one()
        )
        frame = pd.DataFrame(new)
        frame.insert(1, "import_id", import_id)
        frame.insert(2, "updated_import_id", import_id)
        frame.insert(3, "ordinal", range(start + 1, start + 1 + len(new)))
        frame = frame.astype(
            {
                **{
                    n: "Int64"
                    for n, typ in WORKLOAD_KEY_COLUMNS.items()
                    if isinstance(typ, sa.BigInteger)
                },
                **{
                    n: "boolean"
                    for n, typ in WORKLOAD_KEY_COLUMNS.items()
                    if isinstance(typ, sa.Boolean)
                },
            }
        )
        dialects.bulk_insert_frame(conn, t.name, frame)
    for r in changed:
        update = {k: v for k, v in r.items() if k != cc.WORKLOAD_ID}
        conn.execute(
            t.update()
            .where(t.c.workload_id == r[cc.WORKLOAD_ID])
            .values(**update, updated_import_id=import_id)
        )
    return import_result({**values, "import_id": import_id}, already_existed=False)


def outcome_record(i: int, rec: OutcomeRecord | Mapping[str, Any]) -> OutcomeRecord:
    """Validated record ``i`` of a batch; a bad value raises ValueError naming
    ``records[i].<field>``."""
    raw = dataclasses.asdict(rec) if isinstance(rec, OutcomeRecord) else dict(rec)
    extra = {k: raw.pop(k, None) for k in ("source", "notes")}
    try:
        checked = validate_outcome(raw)
    except ValueError as exc:
        raise ValueError(f"records[{i}].{exc}") from exc
    for name, value in extra.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"records[{i}].{name}: must be a string")
    return OutcomeRecord(**dataclasses.asdict(checked), **extra)


def write_outcomes(conn: sa.Connection, recs: list[OutcomeRecord], replace: bool) -> OutcomesResult:
    """Insert new outcomes, replace changed ones when ``replace``; an unknown workload
    raises NotFound and a changed one without ``replace`` OutcomeConflict, before any
    write."""
    ids = [r.workload_id for r in recs]
    known: set[str] = set()
    w = serving_workloads
    for chunk in _chunks(ids):
        known |= set(
            conn.execute(sa.select(w.c.workload_id).where(w.c.workload_id.in_(chunk))).scalars()
        )
    for wid in ids:
        if wid not in known:
            raise NotFound("workload", wid)
    t = crossval_outcomes
    stored: dict[str, Mapping[str, Any]] = {}
    for chunk in _chunks(ids):
        for row in conn.execute(sa.select(t).where(t.c.workload_id.in_(chunk))).all():
            stored[str(row.workload_id)] = dict(row._mapping)
    # Decide everything before the first write: a conflict anywhere writes nothing.
    plan: list[tuple[OutcomeRecord, OutcomeState]] = []
    for r in recs:
        old = stored.get(r.workload_id)
        if old is None:
            plan.append((r, "created"))
            continue
        differs = _outcome_differs(old, r)
        if not differs:
            plan.append((r, "already existed"))
        elif replace:
            plan.append((r, "replaced"))
        else:
            field = differs[0]
            raise OutcomeConflict(
                r.workload_id,
                field,
                f"workload {r.workload_id!r} already has an outcome with {field}="
                f"{old[field]!r}, not {getattr(r, field)!r}; send replace=true to overwrite",
            )
    now = dt.datetime.now(dt.UTC)
    inserts = [
        {**dataclasses.asdict(r), "created_at": now, "updated_at": None}
        for r, state in plan
        if state == "created"
    ]
    if inserts:
        conn.execute(t.insert(), inserts)
    for r, state in plan:
        if state == "replaced":
            values = {k: v for k, v in dataclasses.asdict(r).items() if k != cc.WORKLOAD_ID}
            conn.execute(
                t.update().where(t.c.workload_id == r.workload_id).values(**values, updated_at=now)
            )
    return OutcomesResult(tuple(OutcomeWrite(r.workload_id, s) for r, s in plan))


def _outcome_differs(old: Mapping[str, Any], new: OutcomeRecord) -> list[str]:
    """Fields in which ``new`` differs from the stored row (exact float comparison: the
    values round-trip through float8 unchanged)."""
    out = []
    for name in TPS_FIELDS:
        a, b = old[name], getattr(new, name)
        if (a is None) != (b is None) or (a is not None and float(a) != float(b)):
            out.append(name)
    for name in ("source", "notes"):
        value = getattr(new, name)
        if value is not None and old[name] != value:
            out.append(name)
    return out
