"""Runs repository: uploads, the runs parsed from them and the raw bytes they came from.

Contract
- ``ingest`` is atomic (one transaction: the upload, its runs and all their candidates
  land together or not at all, also if the process dies midway; on DuckDB concurrent
  uploads may share that transaction, :mod:`db.group_commit`, and one that fails is
  retried alone, so it never takes the others down) and idempotent: the
  identity of an upload is the SHA-256 of its bytes. Sending the same bytes again, also
  concurrently, returns the existing runs with ``already_existed=True`` and writes
  nothing but a sighting (:mod:`db.sightings`: the arrival's ci_url, notes, filename,
  counted when identical). The same bytes with another value of a field that states a
  fact (``db.uploads.CONTRADICTING_FIELDS``) raise :class:`Conflict`. The same
  measurements (equal ``sweep_fingerprint``) in other bytes are not stored twice: they
  point at the stored runs, the bytes are kept as a sighting, and the result says
  ``same_measurements_other_bytes``; a stored block derived from those measurements
  with another value (``db.uploads.CONTRADICTING_BLOCKS``) raises :class:`Conflict`.
- Lookups of a missing run raise :class:`NotFound`.
- Lists are ordered newest first (descending run_id).
- Every database failure raises :class:`StoreError` (see :mod:`db.session`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa
import zstandard

from db import schema, summaries
from db.errors import NotFound, StoreError, UniqueViolation
from db.prepared import PreparedUpload, stored_sweeps
from db.session import Database
from db.sightings import (
    delete_sightings,
    record_sighting,
    sighting_bytes,
    sightings_of_upload,
)
from db.sweep_identity import compress
from db.upload_batch import UploadWrite, write_fresh
from db.uploads import IngestResult, existing_upload
from ingest.records import Sweep, UploadMeta


@dataclasses.dataclass(frozen=True)
class Page:
    """One page of a list: ``items`` plus the number of matching rows before paging."""

    items: pd.DataFrame
    total: int
    limit: int
    offset: int


@dataclasses.dataclass(frozen=True)
class RawUpload:
    """The original bytes of an upload (decompressed) and what they were."""

    upload_id: int
    filename: str | None
    source_format: str
    content: bytes


@dataclasses.dataclass(frozen=True)
class VersionSlice:
    """One run's slice facts and the versions stored on its slice
    (:meth:`RunRepository.version_slice`): ``versions`` holds (trtllm_version,
    run_date, run ids ascending) per distinct pair, in no particular order."""

    run_id: int
    model: str
    hardware: str
    quant: str | None
    world_size: int | None
    trtllm_version: str | None
    n_candidates: int
    versions: tuple[tuple[str, str | None, tuple[int, ...]], ...]


def _version_slice_statement() -> sa.Select[Any]:
    """One run's slice facts next to each (trtllm_version, run_date) stored on its slice
    with their run ids (:meth:`RunRepository.version_slice`): the run joined with the
    runs of the same model, hardware, quant and world size (NULL matches NULL), those
    without a version left out; one row with NULL versions when there are none."""
    head, other = schema.runs.alias("head"), schema.runs.alias("other")
    facts = [
        head.c[name]
        for name in ("model", "hardware", "quant", "world_size", "trtllm_version", "n_candidates")
    ]
    same_slice = sa.and_(
        other.c.model == head.c.model,
        other.c.hardware == head.c.hardware,
        other.c.quant.is_not_distinct_from(head.c.quant),
        other.c.world_size.is_not_distinct_from(head.c.world_size),
        other.c.trtllm_version.is_not(None),
    )
    ids = sa.func.string_agg(sa.cast(other.c.run_id, sa.Text), sa.literal(","))
    return (
        sa.select(*facts, other.c.trtllm_version.label("version"), other.c.run_date, ids)
        .select_from(head.outerjoin(other, same_slice))
        .where(head.c.run_id == sa.bindparam("run_id", type_=sa.BigInteger))
        .group_by(*facts, other.c.trtllm_version, other.c.run_date)
    )


# built once: building a statement costs about what running this one costs
_VERSION_SLICE = _version_slice_statement()


class RunRepository:
    """Uploads and runs (their candidates are written here, read by
    :class:`db.candidates.CandidateReader`)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def ingest(
        self,
        sweeps: Sequence[Sweep],
        raw: bytes,
        meta: UploadMeta,
        *,
        uploaded_by: str | None = None,
        known_new: bool = False,
    ) -> IngestResult:
        """Store one upload (its raw bytes, compressed) and every sweep parsed from it.

        Idempotent on the SHA-256 of ``raw``; atomic; see the module contract. A sweep
        already stored from other bytes is pointed at (``RunRef.created=False``), not
        stored twice. No sweeps raises :class:`StoreError`. ``known_new``: the caller
        has just seen :meth:`ingest_known` answer None for these bytes, so the read
        that looks for them first is skipped (bytes stored meanwhile are still found,
        inside the write: the same answer as without it).
        """
        if not sweeps:
            raise StoreError("ingest: nothing to store (no sweeps)")
        sha = hashlib.sha256(raw).hexdigest()
        if not known_new:
            with self._db.read("ingest") as conn:
                existing = existing_upload(conn, sha, meta)
            if existing is not None:
                return self._sighted(existing, meta, uploaded_by)
        stored = stored_sweeps(sweeps)
        # compressed before the write lock is taken, not while others wait for it
        prepared = PreparedUpload(sha, len(raw), compress(raw), tuple(stored))
        return self._write_prepared(prepared, meta, uploaded_by)

    def ingest_prepared(
        self, prepared: PreparedUpload, meta: UploadMeta, *, uploaded_by: str | None = None
    ) -> IngestResult:
        """:meth:`ingest` with ``known_new=True`` for an upload parsed and prepared
        elsewhere (a parse-pool worker, ``api.parse_task.parse_and_prepare``): the same
        writes, the same answer, without the parse, the fingerprint and the compression
        in this process."""
        if not prepared.sweeps:
            raise StoreError("ingest_prepared: nothing to store (no sweeps)")
        try:
            return self._write_prepared(prepared, meta, uploaded_by)
        except StoreError as exc:
            # the writes are grouped with ingest's (one group commit), so they carry
            # its name; a plain store error names this operation
            text = str(exc)
            if type(exc) is not StoreError or not text.startswith("ingest failed: "):
                raise
            raise StoreError("ingest_prepared" + text.removeprefix("ingest")) from exc

    def _write_prepared(
        self, prepared: PreparedUpload, meta: UploadMeta, uploaded_by: str | None
    ) -> IngestResult:
        sha = prepared.sha256
        for attempt in range(2):
            try:
                # several concurrent uploads may share one transaction (group commit,
                # db.group_commit); each is still stored whole or not at all
                write = UploadWrite(
                    sha, prepared.sweeps, prepared.size, prepared.packed, meta, uploaded_by
                )
                return self._db.write_grouped(
                    "ingest", write.insert, item=write, combine=write_fresh
                )
            except UniqueViolation:
                if attempt:
                    raise
                # A concurrent upload of the same bytes or runs won the race: look again.
                with self._db.read("ingest") as conn:
                    again = existing_upload(conn, sha, meta)
                if again is not None:
                    return self._sighted(again, meta, uploaded_by)
        raise AssertionError("unreachable")

    def ingest_known(
        self, raw: bytes, meta: UploadMeta, *, uploaded_by: str | None = None
    ) -> IngestResult | None:
        """:meth:`ingest` for bytes already stored, without parsing them: the stored
        upload (``already_existed=True``, the arrival recorded as a sighting), or None
        when these bytes are not stored (parse them and call :meth:`ingest`). Raises
        :class:`Conflict` as :meth:`ingest` does for contradicting metadata."""
        sha = hashlib.sha256(raw).hexdigest()
        # single: a stored upload's runs do not change (a delete between the two
        # statements leaves an answer with fewer runs, as a moment later would)
        with self._db.read("ingest_known", single=True) as conn:
            existing = existing_upload(conn, sha, meta)
        return None if existing is None else self._sighted(existing, meta, uploaded_by)

    def _sighted(
        self, result: IngestResult, meta: UploadMeta, uploaded_by: str | None
    ) -> IngestResult:
        """``result`` (the same bytes again) with this arrival recorded as a sighting;
        a concurrent identical arrival is counted on the second attempt."""
        for attempt in range(2):
            try:
                with self._db.write("ingest") as conn:
                    ref = record_sighting(conn, result.upload_id, result.sha256, meta, uploaded_by)
                return dataclasses.replace(result, sighting=ref)
            except UniqueViolation:
                if attempt:
                    raise
        raise AssertionError("unreachable")

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
        """Run summaries (no JSON blobs), newest first, with the total before paging.
        Filters are equalities; None leaves a facet unfiltered."""
        r = schema.runs
        conds = [
            r.c[k] == v
            for k, v in {
                "model": model,
                "hardware": hardware,
                "quant": quant,
                "world_size": world_size,
                "source_format": source_format,
                "synthetic": synthetic,
            }.items()
            if v is not None
        ]
        cols = [c for c in r.columns if not c.name.endswith("_json")]
        with self._db.read("list_runs") as conn:
            total = conn.execute(sa.select(sa.func.count()).select_from(r).where(*conds)).scalar()
            rows = conn.execute(
                sa.select(*cols)
                .where(*conds)
                .order_by(r.c.run_id.desc())
                .limit(limit)
                .offset(offset)
            ).all()
        items = pd.DataFrame([dict(row._mapping) for row in rows], columns=[c.name for c in cols])
        return Page(items, int(total or 0), limit, offset)

    def recent_runs(self, limit: int = 20) -> pd.DataFrame:
        """The newest ``limit`` runs (the :meth:`list_runs` columns), each with its
        upload's ``filename`` and ``uploaded_at``: one query, newest first."""
        r, u = schema.runs, schema.uploads
        cols = [c for c in r.columns if not c.name.endswith("_json")]
        with self._db.read("recent_runs") as conn:
            rows = conn.execute(
                sa.select(*cols, u.c.filename, u.c.uploaded_at)
                .join(u, u.c.upload_id == r.c.upload_id)
                .order_by(r.c.run_id.desc())
                .limit(limit)
            ).all()
        names = [c.name for c in cols] + ["filename", "uploaded_at"]
        return pd.DataFrame([tuple(row) for row in rows], columns=names)

    def slice_versions(
        self, *, model: str, hardware: str, quant: str | None, world_size: int | None
    ) -> pd.DataFrame:
        """``run_id``, ``trtllm_version`` and ``run_date`` of every run of one slice
        (equalities on model, hardware, quant, world size; a None quant or world size
        matches NULL), by run id: the one narrow read the upload-time regression check
        needs on every upload."""
        r = schema.runs
        conds = [r.c.model == model, r.c.hardware == hardware]
        for col, value in ((r.c.quant, quant), (r.c.world_size, world_size)):
            conds.append(col.is_(None) if value is None else col == value)
        with self._db.read("slice_versions") as conn:
            rows = conn.execute(
                sa.select(r.c.run_id, r.c.trtllm_version, r.c.run_date)
                .where(*conds)
                .order_by(r.c.run_id)
            ).all()
        return pd.DataFrame(
            [tuple(row) for row in rows], columns=["run_id", "trtllm_version", "run_date"]
        )

    def version_slice(self, run_id: int) -> VersionSlice | None:
        """What the upload-time regression check needs of one run, in one statement (no
        candidate read): the run's slice facts, and the versions stored on its slice
        (same model, hardware, quant, world size; NULL matches NULL), one row per
        (trtllm_version, run_date) with its run ids, runs without a version left out.
        None for an unknown run."""
        with self._db.read("version_slice", single=True) as conn:
            rows = conn.execute(_VERSION_SLICE, {"run_id": run_id}).all()
        if not rows:
            return None
        model, hardware, quant, world_size, version, n_candidates = rows[0][:6]
        return VersionSlice(
            run_id=run_id,
            model=str(model),
            hardware=str(hardware),
            quant=quant,
            world_size=None if world_size is None else int(world_size),
            trtllm_version=version,
            n_candidates=int(n_candidates),
            versions=tuple(
                (str(v), None if d is None else d, tuple(sorted(int(x) for x in i.split(","))))
                for *_facts, v, d, i in rows
                if v is not None and model and hardware
            ),
        )

    def get_run(self, run_id: int) -> dict[str, Any]:
        """Every stored field of one run plus its upload's metadata; the JSON blobs
        (``model_json`` …) are decoded into ``result["blocks"]["model"]`` etc., and
        ``result["sightings"]`` lists the later arrivals of its upload (oldest first,
        see :mod:`db.sightings`). A missing run raises :class:`NotFound`."""
        r, u = schema.runs, schema.uploads
        sightings: list[dict[str, Any]] = []
        with self._db.read("get_run") as conn:
            row = conn.execute(
                sa.select(
                    r, u.c.filename, u.c.sha256, u.c.size_bytes, u.c.uploaded_at, u.c.uploaded_by
                )
                .join(u, u.c.upload_id == r.c.upload_id)
                .where(r.c.run_id == run_id)
            ).first()
            if row is not None:
                sightings = sightings_of_upload(conn, int(row.upload_id))
        if row is None:
            raise NotFound("run", run_id)
        out = dict(row._mapping)
        out["sightings"] = sightings
        # Decoded JSON blobs live under "blocks" (model, environment, search, ...) so
        # they never shadow the flat run columns of the same name.
        out["blocks"] = {
            key[: -len("_json")]: json.loads(out.pop(key))
            for key in list(out)
            if key.endswith("_json") and isinstance(out[key], str)
        }
        return out

    def get_run_exists(self, run_id: int) -> None:
        """Raise :class:`NotFound` unless the run exists."""
        with self._db.read("get_run_exists") as conn:
            found = conn.execute(
                sa.select(schema.runs.c.run_id).where(schema.runs.c.run_id == run_id)
            ).first()
        if found is None:
            raise NotFound("run", run_id)

    def raw_upload(self, run_id: int) -> RawUpload:
        """The original bytes of the upload a run came from (NotFound for a missing run)."""
        r, u = schema.runs, schema.uploads
        with self._db.read("raw_upload") as conn:
            row = conn.execute(
                sa.select(u.c.upload_id, u.c.filename, u.c.source_format, u.c.content)
                .join(r, r.c.upload_id == u.c.upload_id)
                .where(r.c.run_id == run_id)
            ).first()
        if row is None:
            raise NotFound("run", run_id)
        content = zstandard.ZstdDecompressor().decompress(bytes(row[3]))
        return RawUpload(int(row[0]), row[1], str(row[2]), content)

    def sighting_raw(self, run_id: int, sighting_id: int) -> bytes:
        """The bytes a sighting of the run's upload arrived with, decompressed (other
        bytes are kept for every sighting of the same measurements). A missing run or a
        sighting not of its upload raises :class:`NotFound`."""
        with self._db.read("sighting_raw") as conn:
            upload_id = conn.execute(
                sa.select(schema.runs.c.upload_id).where(schema.runs.c.run_id == run_id)
            ).scalar()
            if upload_id is None:
                raise NotFound("run", run_id)
            packed = sighting_bytes(conn, int(upload_id), sighting_id)
        if packed is None:
            raise NotFound("sighting", sighting_id)
        return zstandard.ZstdDecompressor().decompress(packed)

    def delete_run(self, run_id: int) -> None:
        """Delete a run, its candidates and measurements; its upload too once no run refers to it.
        A missing run raises :class:`NotFound` and deletes nothing."""
        r, u = schema.runs, schema.uploads
        with self._db.write("delete_run") as conn:
            upload_id = conn.execute(sa.select(r.c.upload_id).where(r.c.run_id == run_id)).scalar()
            if upload_id is None:
                raise NotFound("run", run_id)
            conn.execute(schema.candidates.delete().where(schema.candidates.c.run_id == run_id))
            conn.execute(schema.measurements.delete().where(schema.measurements.c.run_id == run_id))
            summaries.delete(conn, run_id)
            conn.execute(r.delete().where(r.c.run_id == run_id))
            left = conn.execute(
                sa.select(sa.func.count()).select_from(r).where(r.c.upload_id == upload_id)
            ).scalar()
            if not left:
                conn.execute(u.delete().where(u.c.upload_id == upload_id))
                delete_sightings(conn, int(upload_id))

    def table_counts(self) -> dict[str, int]:
        """Row count of every core table (tests use it to prove writes did not happen)."""
        out = {}
        with self._db.read("table_counts") as conn:
            for table in (schema.uploads, schema.runs, schema.candidates, schema.api_tokens):
                out[table.name] = int(
                    conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() or 0
                )
        return out
