"""The store: the only interface the rest of moedash uses to read and write data.

One SQLAlchemy implementation serves DuckDB (``duckdb:///path/file.duckdb``, the
embedded default) and PostgreSQL (``postgresql://…``); the URL decides. ORM/Row
objects never leave this package: callers get dataclasses or DataFrames whose columns
are named in ``analysis.columns``.

A :class:`Store` is one :class:`db.session.Database` (engine, translated errors,
serialised DuckDB writes) shared by one repository per concept:

- ``store.runs`` (:class:`db.runs.RunRepository`): uploads and runs,
- ``store.candidates`` (:class:`db.candidates.CandidateReader`): candidate lists, the
  analysis frame, coverage,
- ``store.cells`` (:class:`db.cells.CellReader`): per-cell versions, distinct run
  values and the runs a filter selects, from the runs table alone,
- ``store.stats`` (:class:`db.stats.StatsRepository`): measurements keyed by cell and
  the per-configuration statistics aggregated from them,
- ``store.tokens`` (:class:`db.tokens.TokenRepository`): API tokens,
- ``store.capabilities`` (:class:`db.capabilities.CapabilityReader`): what ran
  (status success) per hardware x world size x quant x backend x comm,
- ``store.crossval`` (:class:`db.crossval.CrossvalRepository`): serving imports,
  workloads, end-to-end outcomes.

Each repository's docstrings are its contract (idempotency, "not found", ordering). The
runs and candidate methods are also the store's own (every caller uses them); every
database failure raises :class:`db.errors.StoreError`, on reads as on writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa

from analysis import columns as C
from db import migrations
from db.answers import AnswerRepository
from db.candidates import CandidateReader
from db.capabilities import CapabilityReader
from db.cells import CellReader
from db.checkpoint import IdleCheckpointer
from db.crossval import CrossvalRepository
from db.errors import StoreError
from db.prepared import PreparedUpload
from db.runs import Page, RawUpload, RunRepository, VersionSlice
from db.session import Database, make_engine
from db.stats import StatsRepository
from db.sweep_identity import sweep_fingerprint
from db.timeouts import DbTimeouts
from db.tokens import TokenRepository
from db.uploads import IngestResult, RunRef
from ingest.records import Sweep, UploadMeta

__all__ = [
    "IngestResult",
    "Page",
    "RawUpload",
    "RunRef",
    "Store",
    "VersionSlice",
    "make_engine",
    "open_store",
    "sweep_fingerprint",
]


def open_store(url: str, *, upgrade: bool = True, timeouts: DbTimeouts | None = None) -> Store:
    """Open (and by default create/upgrade to the newest schema) the store at ``url``,
    every database wait bounded by ``timeouts`` (:class:`db.timeouts.DbTimeouts`; its
    defaults when None). A bad URL or an unreachable database raises :class:`StoreError`."""
    store = Store(make_engine(url, timeouts))
    if upgrade:
        try:
            store.upgrade()
        except BaseException:
            store.close()
            raise
    return store


class Store:
    """Runs, candidates, raw uploads, API tokens and cross-validation in one database."""

    def __init__(self, engine: sa.Engine) -> None:
        self._db = Database(engine)
        self.runs = RunRepository(self._db)
        self.candidates = CandidateReader(self._db)
        self.cells = CellReader(self._db)
        self.stats = StatsRepository(self._db)
        self.answers = AnswerRepository(self._db)
        self.tokens = TokenRepository(self._db)
        self.crossval = CrossvalRepository(self._db)
        self.capabilities = CapabilityReader(self._db)
        self._checkpointer: IdleCheckpointer | None = None

    @property
    def engine(self) -> sa.Engine:
        """The engine (for tests and benchmarks inside db's own tier; callers outside
        ``db/`` use the repositories)."""
        return self._db.engine

    @property
    def dialect(self) -> str:
        """``duckdb`` or ``postgresql``."""
        return self._db.dialect

    def checkpoint_when_idle(self) -> IdleCheckpointer | None:
        """On a DuckDB file, checkpoint from now on when writes pause
        (:mod:`db.checkpoint`; ``moedash serve`` does); stopped by :meth:`close`.
        None on PostgreSQL."""
        if self._db.dialect != "duckdb" or self._checkpointer is not None:
            return self._checkpointer
        path = self._db.engine.url.database
        if not path:
            return None
        self._checkpointer = IdleCheckpointer(self._db, Path(path)).start()
        return self._checkpointer

    def close(self) -> None:
        """Close every pooled connection (and stop the idle checkpoints)."""
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        self._db.close()

    def upgrade(self) -> int:
        """Create or upgrade the schema to the newest revision; return its number."""
        return migrations.upgrade(self._db)

    def schema_version(self) -> int:
        """The schema revision the database is at (0 for an empty database)."""
        return migrations.schema_version(self._db)

    # ------------------------------------------------------------------ runs
    def ingest(
        self,
        sweeps: Sequence[Sweep],
        raw: bytes,
        meta: UploadMeta,
        *,
        uploaded_by: str | None = None,
        known_new: bool = False,
    ) -> IngestResult:
        """See :meth:`db.runs.RunRepository.ingest`; the new runs' measurements are
        recorded right after the upload commits (:meth:`db.stats.StatsRepository.record_runs`)."""
        result = self.runs.ingest(sweeps, raw, meta, uploaded_by=uploaded_by, known_new=known_new)
        self._record(result)
        return result

    def ingest_prepared(
        self, prepared: PreparedUpload, meta: UploadMeta, *, uploaded_by: str | None = None
    ) -> IngestResult:
        """See :meth:`db.runs.RunRepository.ingest_prepared` (and :meth:`ingest` for the
        measurements)."""
        result = self.runs.ingest_prepared(prepared, meta, uploaded_by=uploaded_by)
        self._record(result)
        return result

    def _record(self, result: IngestResult) -> None:
        # A failure here loses nothing: the upload is stored, and a read of its cell
        # records what is missing (StatsRepository.ensure_cell).
        if not result.already_existed:
            with contextlib.suppress(StoreError):
                self.stats.record_runs([ref.run_id for ref in result.runs])

    def list_runs(
        self,
        *,
        model: str | None = None,
        hardware: str | None = None,
        quant: str | None = None,
        world_size: int | None = None,
        source_format: str | None = None,
        synthetic: bool | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        """See :meth:`db.runs.RunRepository.list_runs`."""
        return self.runs.list_runs(
            model=model,
            hardware=hardware,
            quant=quant,
            world_size=world_size,
            source_format=source_format,
            synthetic=synthetic,
            limit=limit,
            offset=offset,
        )

    def get_run(self, run_id: int) -> dict[str, Any]:
        """See :meth:`db.runs.RunRepository.get_run`."""
        return self.runs.get_run(run_id)

    def get_run_exists(self, run_id: int) -> None:
        """See :meth:`db.runs.RunRepository.get_run_exists`."""
        self.runs.get_run_exists(run_id)

    def raw_upload(self, run_id: int) -> RawUpload:
        """See :meth:`db.runs.RunRepository.raw_upload`."""
        return self.runs.raw_upload(run_id)

    def delete_run(self, run_id: int) -> None:
        """See :meth:`db.runs.RunRepository.delete_run`."""
        self.runs.delete_run(run_id)

    def table_counts(self) -> dict[str, int]:
        """See :meth:`db.runs.RunRepository.table_counts`."""
        return self.runs.table_counts()

    # ------------------------------------------------------------------ candidates
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
        """See :meth:`db.candidates.CandidateReader.list_candidates`."""
        return self.candidates.list_candidates(
            run_id, filters=filters, order=order, descending=descending, limit=limit, offset=offset
        )

    def candidate_frame(
        self,
        *,
        run_ids: Sequence[int] | None = None,
        filters: dict[str, Any] | None = None,
        success_only: bool = False,
        columns: Sequence[str] | None = None,
        categorical: bool = False,
    ) -> pd.DataFrame:
        """See :meth:`db.candidates.CandidateReader.candidate_frame`."""
        return self.candidates.candidate_frame(
            run_ids=run_ids,
            filters=filters,
            success_only=success_only,
            columns=columns,
            categorical=categorical,
        )

    def coverage(self) -> pd.DataFrame:
        """See :meth:`db.candidates.CandidateReader.coverage`."""
        return self.candidates.coverage()
