"""Store methods for cross-validation: serving-config imports, workloads, E2E outcomes.

:class:`db.store.Store` inherits :class:`CrossvalStoreMixin`; callers use the store, never
this module's tables.

Contract
- ``import_serving`` is atomic (the import record and every new or changed workload land
  together or not at all) and idempotent: an import is identified by the content hash of
  the configs (``ingest.serving_configs.ImportResult.content_hash``); the same hash again,
  also concurrently, writes nothing and answers ``already_existed=True``. A workload is
  identified by its ``workload_id`` (``<point_id>:<phase>``): an import with another hash
  stores only workloads not yet stored, rewrites stored ones whose mapping changed (e.g. a
  recipe was edited; counted in ``n_updated_workloads``) and never deletes any.
- ``add_outcomes`` is atomic over the whole batch. Re-posting identical values is a no-op
  ("already existed"); other values for a stored workload raise :class:`OutcomeConflict`
  unless ``replace=True``. An outcome for a workload that is not stored raises
  :class:`NotFound`.
- Reads: workloads in import order (the order ``map_workloads`` produced them, later
  imports' new workloads after); outcomes by workload_id; imports newest first.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
import sqlalchemy as sa

from analysis import crossval_columns as cc
from analysis.crossval import validate_outcome
from analysis.serving_map import map_workloads
from db import dialects
from db.dialects import plain_scalar as _plain
from db.errors import Conflict, NotFound, StoreError
from db.schema_crossval import (
    WORKLOAD_KEY_COLUMNS,
    crossval_outcomes,
    serving_imports,
    serving_workloads,
)

# Columns of Store.outcomes(): the E2E values plus provenance.
OUTCOME_STORE_COLUMNS: tuple[str, ...] = (
    cc.WORKLOAD_ID,
    cc.TPS_DEPLOYED,
    cc.TPS_CANDIDATE,
    cc.TPS_CANDIDATE_PR,
    "source",
    "notes",
    "created_at",
    "updated_at",
)
# Columns a serving_workloads filter may name.
WORKLOAD_FILTER_COLUMNS: frozenset[str] = frozenset({cc.WORKLOAD_ID, *WORKLOAD_KEY_COLUMNS})

_TPS_FIELDS = (cc.TPS_DEPLOYED, cc.TPS_CANDIDATE, cc.TPS_CANDIDATE_PR)
_CHUNK = 1000  # ids per IN (...) list


@dataclasses.dataclass(frozen=True)
class ServingImportResult:
    """What one ``import_serving`` call did.

    Counts describe the imported configs (entries = distinct (master file, entry),
    points, workloads = points x 2 phases, mappable workloads); ``n_new_workloads`` and
    ``n_updated_workloads`` count this call's writes (both 0 when ``already_existed``).
    """

    import_id: int
    content_hash: str
    source: str | None
    imported_at: dt.datetime
    already_existed: bool
    n_entries: int
    n_points: int
    n_workloads: int
    n_mappable: int
    n_new_workloads: int
    n_updated_workloads: int

    @property
    def n_unmappable(self) -> int:
        return self.n_workloads - self.n_mappable

    @property
    def n_existing_workloads(self) -> int:
        """Workloads of these configs that were already stored before this call."""
        return self.n_workloads - self.n_new_workloads


@dataclasses.dataclass(frozen=True)
class OutcomeRecord:
    """One end-to-end measurement of a Mismatch (see ``analysis.crossval.E2EOutcome``):
    tokens/s/user served with the deployed config and with the bench_moe candidate."""

    workload_id: str
    tps_per_user_deployed: float
    tps_per_user_candidate: float
    tps_per_user_candidate_perfect_routing: float | None = None
    source: str | None = None
    notes: str | None = None


OutcomeState = Literal["created", "already existed", "replaced"]


@dataclasses.dataclass(frozen=True)
class OutcomeWrite:
    workload_id: str
    state: OutcomeState


@dataclasses.dataclass(frozen=True)
class OutcomesResult:
    """Per record, in input order, what ``add_outcomes`` did."""

    items: tuple[OutcomeWrite, ...]

    def count(self, state: OutcomeState) -> int:
        return sum(1 for i in self.items if i.state == state)


class OutcomeConflict(Conflict):
    """An outcome for ``workload_id`` is stored with other values (``field`` differs)."""

    def __init__(self, workload_id: str, field: str, problem: str) -> None:
        super().__init__(field, problem)
        self.workload_id = workload_id


class CrossvalStoreMixin:
    """Serving imports, mapped workloads and end-to-end outcomes (mixed into Store)."""

    engine: sa.Engine

    if TYPE_CHECKING:

        def _write(self) -> AbstractContextManager[sa.Connection]: ...

    # ------------------------------------------------------------------ imports
    def import_serving(
        self,
        points_df: pd.DataFrame,
        workloads_df: pd.DataFrame,
        content_hash: str,
        source: str | None = None,
    ) -> ServingImportResult:
        """Store the workloads of one serving-config import (see the module contract).

        ``points_df``: ``crossval_columns.POINT_COLUMNS`` (only counted); ``workloads_df``:
        ``map_workloads`` output (``WORKLOAD_COLUMNS``, unique non-empty workload ids,
        else ``ValueError``). ``source`` is free text describing where the configs came
        from (a directory, an upload). Database failures raise :class:`StoreError` and
        leave nothing written.
        """
        if not content_hash:
            raise ValueError("content_hash: required")
        missing = [col for col in cc.WORKLOAD_COLUMNS if col not in workloads_df.columns]
        if missing:
            raise ValueError(f"workloads: missing columns {missing}")
        ids = workloads_df[cc.WORKLOAD_ID]
        if ids.isna().any() or (ids.astype(str) == "").any():
            raise ValueError("workload_id: every workload needs one")
        if not ids.is_unique:
            dup = ids[ids.duplicated()].iloc[0]
            raise ValueError(f"workload_id: duplicate {dup!r}")
        counts = {
            "n_entries": _n_entries(points_df),
            "n_points": len(points_df),
            "n_workloads": len(workloads_df),
            "n_mappable": int(workloads_df[cc.MAPPABLE].fillna(False).astype(bool).sum()),
        }
        rows = _workload_rows(workloads_df)
        for attempt in range(2):
            found = self._existing_import(content_hash)
            if found is not None:
                return found
            try:
                with self._write() as conn:
                    return _insert_import(conn, rows, content_hash, source, counts)
            except _db_errors(self.engine) as exc:
                if not dialects.is_unique_violation(exc) or attempt:
                    raise StoreError(f"import_serving failed: {_orig(exc)}") from exc
                # A concurrent import of the same configs or workloads won: look again.
        raise AssertionError("unreachable")

    def _existing_import(self, content_hash: str) -> ServingImportResult | None:
        t = serving_imports
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(t).where(t.c.content_hash == content_hash)).first()
        if row is None:
            return None
        return _import_result(dict(row._mapping), already_existed=True)

    def serving_imports(self) -> pd.DataFrame:
        """Every import (columns of the ``serving_imports`` table), newest first."""
        t = serving_imports
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t).order_by(t.c.import_id.desc())).all()
        return pd.DataFrame([dict(r._mapping) for r in rows], columns=list(t.columns.keys()))

    # ------------------------------------------------------------------ workloads
    def serving_workloads(
        self,
        filters: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> pd.DataFrame:
        """Stored workloads with exactly the columns and dtypes of ``map_workloads``.

        ``filters`` maps key columns (``WORKLOAD_FILTER_COLUMNS``: model, hardware, phase,
        mappable, ...) to a value (equality; a list/tuple means any of; None is ignored);
        an unknown column raises ``ValueError``. Ordered by import order, then paged by
        ``limit``/``offset``.
        """
        t = serving_workloads
        query = (
            sa.select(t.c.row_json)
            .where(*_workload_conditions(filters))
            .order_by(t.c.ordinal, t.c.workload_id)
            .offset(offset)
        )
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            texts = conn.execute(query).scalars().all()
        return _workloads_frame([json.loads(x) for x in texts])

    def serving_workload_count(self, filters: Mapping[str, Any] | None = None) -> int:
        """How many stored workloads match ``filters`` (as in :meth:`serving_workloads`)."""
        t = serving_workloads
        with self.engine.connect() as conn:
            n = conn.execute(
                sa.select(sa.func.count()).select_from(t).where(*_workload_conditions(filters))
            ).scalar()
        return int(n or 0)

    # ------------------------------------------------------------------ outcomes
    def add_outcomes(
        self, records: Sequence[OutcomeRecord | Mapping[str, Any]], *, replace: bool = False
    ) -> OutcomesResult:
        """Store end-to-end outcomes, one per workload, atomically (all or none).

        Records are :class:`OutcomeRecord` or mappings with its field names. Invalid
        values (``analysis.crossval.validate_outcome`` rules) or a workload_id twice in
        one batch raise ``ValueError`` naming ``records[i].<field>``; an unknown workload
        raises :class:`NotFound`; a stored outcome with other tps values, or another
        non-empty source/notes, raises :class:`OutcomeConflict` unless ``replace``.
        Identical values are a no-op ("already existed"; a missing source/notes counts as
        identical). ``replace`` overwrites every field ("replaced").
        """
        recs = [_outcome_record(i, r) for i, r in enumerate(records)]
        seen: set[str] = set()
        for i, r in enumerate(recs):
            if r.workload_id in seen:
                raise ValueError(f"records[{i}].workload_id: duplicate {r.workload_id!r}")
            seen.add(r.workload_id)
        if not recs:
            return OutcomesResult(())
        for attempt in range(2):
            try:
                with self._write() as conn:
                    return _write_outcomes(conn, recs, replace)
            except _db_errors(self.engine) as exc:
                if not dialects.is_unique_violation(exc) or attempt:
                    raise StoreError(f"add_outcomes failed: {_orig(exc)}") from exc
                # A concurrent post of the same workload won: compare against it.
        raise AssertionError("unreachable")

    def outcomes(self) -> pd.DataFrame:
        """Every stored outcome (``OUTCOME_STORE_COLUMNS``), ordered by workload_id."""
        t = crossval_outcomes
        cols = [t.c[name] for name in OUTCOME_STORE_COLUMNS]
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(*cols).order_by(t.c.workload_id)).all()
        frame = pd.DataFrame([tuple(r) for r in rows], columns=list(OUTCOME_STORE_COLUMNS))
        for name in _TPS_FIELDS:
            frame[name] = pd.to_numeric(frame[name]).astype("float64")
        return frame

    def crossval_counts(self) -> dict[str, int]:
        """Row count of each cross-validation table (tests use it to prove no writes)."""
        out = {}
        with self.engine.connect() as conn:
            for table in (serving_imports, serving_workloads, crossval_outcomes):
                n = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
                out[table.name] = int(n or 0)
        return out


# --------------------------------------------------------------------------- helpers
def _db_errors(engine: sa.Engine) -> tuple[type[Exception], ...]:
    """Errors a failed write raises: SQLAlchemy's wrapper, and the driver's own error
    class, which the bulk load (DuckDB register / PostgreSQL COPY on the raw driver
    connection) raises unwrapped."""
    driver_error: type[Exception] = engine.dialect.loaded_dbapi.Error
    return (sa.exc.DBAPIError, driver_error)


def _orig(exc: Exception) -> object:
    return getattr(exc, "orig", exc)


def _n_entries(points_df: pd.DataFrame) -> int:
    if points_df.empty:
        return 0
    return int(points_df[[cc.SOURCE, cc.ENTRY]].drop_duplicates().shape[0])


def _workload_rows(workloads_df: pd.DataFrame) -> list[dict[str, Any]]:
    """Store rows: the key columns plus ``row_json`` (every WORKLOAD_COLUMNS value)."""
    rows = []
    for rec in workloads_df[list(cc.WORKLOAD_COLUMNS)].to_dict("records"):
        full = {k: _plain(v) for k, v in rec.items()}
        row = {k: full[k] for k in (cc.WORKLOAD_ID, *WORKLOAD_KEY_COLUMNS)}
        row["row_json"] = json.dumps(full, separators=(",", ":"), allow_nan=False)
        rows.append(row)
    return rows


@functools.cache
def _typed_columns() -> dict[str, str]:
    """Nullable int/bool columns of ``map_workloads`` output, read off an empty result so
    the two can never disagree."""
    empty = map_workloads(pd.DataFrame(columns=list(cc.POINT_COLUMNS)), {})
    return {str(n): str(d) for n, d in empty.dtypes.items() if str(d) in ("Int64", "boolean")}


def _workloads_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> frame typed exactly like ``map_workloads`` output."""
    frame = pd.DataFrame(rows, columns=list(cc.WORKLOAD_COLUMNS))
    return frame.astype(_typed_columns())


def _workload_conditions(filters: Mapping[str, Any] | None) -> list[sa.ColumnElement[bool]]:
    t = serving_workloads
    conds: list[sa.ColumnElement[bool]] = []
    for name, value in (filters or {}).items():
        if name not in WORKLOAD_FILTER_COLUMNS:
            raise ValueError(f"filters: unknown workload column {name!r}")
        if value is None:
            continue
        if isinstance(value, list | tuple | set | frozenset):
            conds.append(t.c[name].in_([_plain(v) for v in value]))
        else:
            conds.append(t.c[name] == _plain(value))
    return conds


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


def _insert_import(
    conn: sa.Connection,
    rows: list[dict[str, Any]],
    content_hash: str,
    source: str | None,
    counts: Mapping[str, int],
) -> ServingImportResult:
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
    return _import_result({**values, "import_id": import_id}, already_existed=False)


def _import_result(row: Mapping[str, Any], *, already_existed: bool) -> ServingImportResult:
    return ServingImportResult(
        import_id=int(row["import_id"]),
        content_hash=str(row["content_hash"]),
        source=row["source"],
        imported_at=row["imported_at"],
        already_existed=already_existed,
        n_entries=int(row["n_entries"]),
        n_points=int(row["n_points"]),
        n_workloads=int(row["n_workloads"]),
        n_mappable=int(row["n_mappable"]),
        n_new_workloads=0 if already_existed else int(row["n_new_workloads"]),
        n_updated_workloads=0 if already_existed else int(row["n_updated_workloads"]),
    )


def _outcome_record(i: int, rec: OutcomeRecord | Mapping[str, Any]) -> OutcomeRecord:
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


def _write_outcomes(
    conn: sa.Connection, recs: list[OutcomeRecord], replace: bool
) -> OutcomesResult:
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
    for name in _TPS_FIELDS:
        a, b = old[name], getattr(new, name)
        if (a is None) != (b is None) or (a is not None and float(a) != float(b)):
            out.append(name)
    for name in ("source", "notes"):
        value = getattr(new, name)
        if value is not None and old[name] != value:
            out.append(name)
    return out


def iter_outcome_records(frame: pd.DataFrame) -> Iterable[dict[str, Any]]:
    """``Store.outcomes()`` rows as ``analysis.crossval.validate_outcome`` input."""
    for rec in frame[[cc.WORKLOAD_ID, *_TPS_FIELDS]].to_dict("records"):
        yield {k: _plain(v) for k, v in rec.items()}
