"""Cross-validation repository (``store.crossval``): serving-config imports, mapped
workloads, end-to-end outcomes.

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
- Every database failure raises :class:`StoreError` (see :mod:`db.session`).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pandas as pd
import sqlalchemy as sa

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis.serving_map import map_workloads
from db.crossval_records import (
    OUTCOME_STORE_COLUMNS,
    TPS_FIELDS,
    WORKLOAD_FILTER_COLUMNS,
    OutcomeRecord,
    OutcomesResult,
    ServingImportResult,
    import_result,
)
from db.crossval_writes import (
    insert_import,
    n_entries,
    outcome_record,
    workload_rows,
    write_outcomes,
)
from db.dialects import plain_scalar as _plain
from db.errors import UniqueViolation
from db.schema_crossval import (
    crossval_ledgers,
    crossval_outcomes,
    serving_imports,
    serving_workloads,
)
from db.session import Database


class CrossvalRepository:
    """Serving imports, mapped workloads and end-to-end outcomes."""

    def __init__(self, db: Database) -> None:
        self._db = db

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
            "n_entries": n_entries(points_df),
            "n_points": len(points_df),
            "n_workloads": len(workloads_df),
            "n_mappable": int(workloads_df[cc.MAPPABLE].fillna(False).astype(bool).sum()),
        }
        rows = workload_rows(workloads_df)
        for attempt in range(2):
            found = self._existing_import(content_hash)
            if found is not None:
                return found
            try:
                with self._db.write("import_serving") as conn:
                    return insert_import(conn, rows, content_hash, source, counts)
            except UniqueViolation:
                if attempt:
                    raise
                # A concurrent import of the same configs or workloads won: look again.
        raise AssertionError("unreachable")

    def _existing_import(self, content_hash: str) -> ServingImportResult | None:
        t = serving_imports
        with self._db.read("import_serving") as conn:
            row = conn.execute(sa.select(t).where(t.c.content_hash == content_hash)).first()
        if row is None:
            return None
        return import_result(dict(row._mapping), already_existed=True)

    def serving_imports(self) -> pd.DataFrame:
        """Every import (columns of the ``serving_imports`` table), newest first."""
        t = serving_imports
        with self._db.read("serving_imports") as conn:
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
        with self._db.read("serving_workloads") as conn:
            texts = conn.execute(query).scalars().all()
        return _workloads_frame([orjson.loads(x) for x in texts])

    def serving_workload_count(self, filters: Mapping[str, Any] | None = None) -> int:
        """How many stored workloads match ``filters`` (as in :meth:`serving_workloads`)."""
        t = serving_workloads
        conds = _workload_conditions(filters)
        with self._db.read("serving_workload_count") as conn:
            n = conn.execute(sa.select(sa.func.count()).select_from(t).where(*conds)).scalar()
        return int(n or 0)

    def serving_choices(self) -> tuple[list[str], list[str]]:
        """(models, hardware) of the stored workloads, distinct and sorted (NULL left
        out), without reading the workloads themselves."""
        t = serving_workloads
        out: list[list[str]] = []
        with self._db.read("serving_choices") as conn:
            for col in (t.c[C.MODEL], t.c[C.HARDWARE]):
                vals = conn.execute(sa.select(col).where(col.is_not(None)).distinct()).scalars()
                out.append(sorted(str(v) for v in vals))
        return out[0], out[1]

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
        recs = [outcome_record(i, r) for i, r in enumerate(records)]
        seen: set[str] = set()
        for i, r in enumerate(recs):
            if r.workload_id in seen:
                raise ValueError(f"records[{i}].workload_id: duplicate {r.workload_id!r}")
            seen.add(r.workload_id)
        if not recs:
            return OutcomesResult(())
        for attempt in range(2):
            try:
                with self._db.write("add_outcomes") as conn:
                    return write_outcomes(conn, recs, replace)
            except UniqueViolation:
                if attempt:
                    raise
                # A concurrent post of the same workload won: compare against it.
        raise AssertionError("unreachable")

    def outcomes(self) -> pd.DataFrame:
        """Every stored outcome (``OUTCOME_STORE_COLUMNS``), ordered by workload_id."""
        t = crossval_outcomes
        cols = [t.c[name] for name in OUTCOME_STORE_COLUMNS]
        with self._db.read("outcomes") as conn:
            rows = conn.execute(sa.select(*cols).order_by(t.c.workload_id)).all()
        frame = pd.DataFrame([tuple(r) for r in rows], columns=list(OUTCOME_STORE_COLUMNS))
        for name in TPS_FIELDS:
            frame[name] = pd.to_numeric(frame[name]).astype("float64")
        return frame

    def outcomes_version(self) -> tuple[int, str]:
        """(stored outcomes, newest created/updated time as text): changes with every
        add or replace, without reading the outcomes."""
        t = crossval_outcomes
        newest = sa.func.max(sa.func.coalesce(t.c.updated_at, t.c.created_at))
        with self._db.read("outcomes_version") as conn:
            n, at = conn.execute(sa.select(sa.func.count(), newest)).one()
        return int(n or 0), str(at)

    # ------------------------------------------------------------------ stored ledger
    def stored_ledger(self, key: str) -> list[dict[str, Any]] | None:
        """The ledger rows stored under ``key`` (JSON-decoded records), None if absent."""
        t = crossval_ledgers
        with self._db.read("stored_ledger") as conn:
            text = conn.execute(
                sa.select(t.c.ledger_json).where(t.c.ledger_key == key)
            ).scalar_one_or_none()
        # orjson: ~6x faster on the ~8,700-row ledger, and a shorter hold of the GIL
        # (a page view waits on it while a refresh decodes); the text has no NaN
        # (stored with allow_nan=False), so both decoders read it alike
        return None if text is None else list(orjson.loads(text))

    def store_ledger(
        self,
        key: str,
        rows: list[dict[str, Any]],
        compute_ms: float,
        supersedes: str | None = None,
        keep: int = 3,
    ) -> None:
        """Store ledger ``rows`` (JSON-safe records) under ``key``, in one transaction
        with dropping what it supersedes: every other key when ``supersedes`` is None,
        else the other keys ending with ``supersedes`` (e.g. the same token tolerance);
        of the rest, only the ``keep`` newest (this one included) stay. Until this
        commits, readers keep seeing the previous ledger. A concurrent writer of the
        same key wins silently (same inputs, same rows)."""
        t = crossval_ledgers
        text = json.dumps(rows, separators=(",", ":"), allow_nan=False)
        try:
            with self._db.write("store_ledger") as conn:
                gone = t.delete().where(t.c.ledger_key != key)
                if supersedes is not None:
                    gone = gone.where(t.c.ledger_key.endswith(supersedes, autoescape=True))
                conn.execute(gone)
                conn.execute(t.delete().where(t.c.ledger_key == key))
                conn.execute(
                    t.insert().values(
                        ledger_key=key,
                        computed_at=dt.datetime.now(dt.UTC),
                        n_rows=len(rows),
                        compute_ms=float(compute_ms),
                        ledger_json=text,
                    )
                )
                newest = sa.select(t.c.ledger_key).order_by(t.c.computed_at.desc()).limit(keep)
                conn.execute(t.delete().where(t.c.ledger_key.not_in(newest.scalar_subquery())))
        except UniqueViolation:
            return

    def stored_ledger_keys(self) -> pd.DataFrame:
        """Stored ledger keys with computed_at, n_rows and compute_ms (no rows), newest
        first."""
        t = crossval_ledgers
        cols = [t.c.ledger_key, t.c.computed_at, t.c.n_rows, t.c.compute_ms]
        with self._db.read("stored_ledger_keys") as conn:
            rows = conn.execute(sa.select(*cols).order_by(t.c.computed_at.desc())).all()
        return pd.DataFrame([tuple(r) for r in rows], columns=[c.name for c in cols])

    def crossval_counts(self) -> dict[str, int]:
        """Row count of each cross-validation table (tests use it to prove no writes)."""
        out = {}
        with self._db.read("crossval_counts") as conn:
            for table in (serving_imports, serving_workloads, crossval_outcomes, crossval_ledgers):
                n = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
                out[table.name] = int(n or 0)
        return out


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
