"""The upload write path: one upload row, its runs and their candidates, inside the
caller's transaction. :meth:`db.runs.RunRepository.ingest` owns the transaction, the
retry and the contract; these functions only read and write through the connection
they are given.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import sqlalchemy as sa

from analysis import columns as C
from db import dialects, schema
from db.dialects import plain_scalar as _plain
from db.errors import Conflict, UniqueViolation
from db.prepared import StoredSweep
from db.sightings import SightingRef, record_sighting
from ingest.records import RUN_EXTRA_KEYS, UploadMeta

# Upload metadata that states facts about the measurement. The same bytes (or the same
# measurements) sent again with another value contradict what is stored: Conflict (409).
# The other fields (ci_url, notes, filename) annotate an arrival: a new value is
# recorded as a sighting (db.sightings), never refused, so a CI retry is a 200.
CONTRADICTING_FIELDS = ("hardware", "trtllm_version", "trtllm_commit", "run_date", "dispatch")

# Run fields derived from the same measurements as the candidates (bench_moe's ranking
# of them, the search space and base config that produced them). Same candidates with
# another value of one of these is a contradiction (409 naming the block), not a new run:
# storing it as a second run would count one measurement twice as a repeat.
CONTRADICTING_BLOCKS = {
    "rankings_json": "rankings",
    "search_json": "search",
    "base_config_json": "base_config",
    "routing_method": "model.routing_method",
}
# Stored run fields whose difference is reported (``differing_fields``) but accepted:
# unknown top-level keys (kept in the new bytes, which the sighting keeps).
NOTED_BLOCKS = {"extra_json": "extra_json"}


@dataclasses.dataclass(frozen=True)
class RunRef:
    """One run of an upload: ``created`` is False when the run was already stored."""

    run_id: int
    sweep_key: str
    n_candidates: int
    created: bool = True


@dataclasses.dataclass(frozen=True)
class IngestResult:
    """What one ``ingest`` call stored (or found already stored)."""

    upload_id: int
    sha256: str
    already_existed: bool
    runs: tuple[RunRef, ...]
    # The measurements were stored from other bytes: ``upload_id`` / ``stored_sha256``
    # name that upload; ``sha256`` is of the bytes just sent (kept as a sighting).
    same_measurements_other_bytes: bool = False
    stored_sha256: str | None = None
    # Stored fields whose value in the new bytes differs although the measurements are
    # the same (see NOTED_BLOCKS); reported, not silently dropped.
    differing_fields: tuple[str, ...] = ()
    sighting: SightingRef | None = None

    @property
    def n_candidates(self) -> int:
        return sum(r.n_candidates for r in self.runs)


# Statements of every upload, built once (building one costs about as much as the
# database's work on it for a small upload); values go as parameters.
_UPLOAD_BY_SHA = sa.select(schema.uploads.c.upload_id, schema.uploads.c.meta_json).where(
    schema.uploads.c.sha256 == sa.bindparam("sha")
)
_RUNS_BY_KEY = (
    sa.select(
        schema.runs.c.run_key,
        schema.runs.c.run_id,
        schema.runs.c.sweep_key,
        schema.runs.c.n_candidates,
        schema.runs.c.upload_id,
        schema.runs.c.run_date,
        schema.uploads.c.sha256,
        *(schema.runs.c[name] for name in (*CONTRADICTING_BLOCKS, *NOTED_BLOCKS)),
    )
    .join(schema.uploads, schema.uploads.c.upload_id == schema.runs.c.upload_id)
    .where(schema.runs.c.run_key.in_(sa.bindparam("keys", expanding=True)))
)
_INSERT_UPLOAD = schema.uploads.insert().returning(schema.uploads.c.upload_id)
_INSERT_RUN = schema.runs.insert().returning(schema.runs.c.run_id)


def existing_upload(conn: sa.Connection, sha: str, meta: UploadMeta) -> IngestResult | None:
    """The stored upload with these bytes (``already_existed=True``), or None. Raises
    :class:`Conflict` naming the first of :data:`CONTRADICTING_FIELDS` given with
    another value than the stored upload's (annotations never conflict)."""
    row = conn.execute(_UPLOAD_BY_SHA, {"sha": sha}).first()
    if row is None:
        return None
    upload_id, meta_json = int(row[0]), json.loads(row[1])
    for name in CONTRADICTING_FIELDS:
        new = getattr(meta, name)
        if new is not None and meta_json.get(name) != new:
            raise Conflict(
                name,
                f"these bytes were already uploaded (upload {upload_id}) with "
                f"{name}={meta_json.get(name)!r}, not {new!r}; delete those runs "
                "first to store them again with other metadata",
            )
    r = schema.runs
    refs = conn.execute(
        sa.select(r.c.run_id, r.c.sweep_key, r.c.n_candidates)
        .where(r.c.upload_id == upload_id)
        .order_by(r.c.run_id)
    ).all()
    return IngestResult(
        upload_id=upload_id,
        sha256=sha,
        already_existed=True,
        runs=tuple(RunRef(int(x[0]), str(x[1]), int(x[2])) for x in refs),
    )


def insert_upload(
    conn: sa.Connection,
    sha: str,
    sweeps: Sequence[StoredSweep],
    size: int,
    packed: bytes,
    meta: UploadMeta,
    uploaded_by: str | None,
) -> IngestResult:
    """Write the upload and every sweep whose fingerprint (``run_key``) is not stored
    yet. ``size``: of the bytes; ``packed``: them compressed (:func:`compress`), done
    before the caller took the write lock (:mod:`db.prepared`).

    A sweep whose measurements are stored already is pointed at, after checking that
    nothing the new bytes say about it contradicts the stored run
    (:data:`CONTRADICTING_BLOCKS`, a ``run_date`` given with another value:
    :class:`Conflict`). When every sweep is stored already (e.g. NVIDIA's CSVs after
    their data.js) no upload is written: the bytes are kept as a sighting of the stored
    upload and the result says ``same_measurements_other_bytes``."""
    keys = [s.run_key for s in sweeps]
    found = {row.run_key: row for row in conn.execute(_RUNS_BY_KEY, {"keys": keys}).all()}
    if any(str(row.sha256) == sha for row in found.values()):
        # these very bytes were stored since the caller looked for them (a concurrent
        # upload of the same file): the caller reads them again and records a sighting
        raise UniqueViolation(f"ingest failed: upload {sha[:12]}… was stored concurrently")
    differing: list[str] = []
    for sweep, key in zip(sweeps, keys, strict=True):
        if key in found:
            for name in _differences(found[key], sweep, meta):
                if name not in differing:
                    differing.append(name)
    if len(found) == len(set(keys)):
        rows = [found[k] for k in keys]
        sighting = None
        for upload_id in dict.fromkeys(int(x.upload_id) for x in rows):
            ref = record_sighting(
                conn, upload_id, sha, meta, uploaded_by, content=packed, size_bytes=size
            )
            sighting = sighting or ref
        return IngestResult(
            upload_id=int(rows[0].upload_id),
            sha256=sha,
            already_existed=True,
            runs=tuple(RunRef(int(x[1]), str(x[2]), int(x[3]), created=False) for x in rows),
            same_measurements_other_bytes=True,
            stored_sha256=str(rows[0].sha256),
            differing_fields=tuple(differing),
            sighting=sighting,
        )
    now = dt.datetime.now(dt.UTC)
    upload_id = conn.execute(
        _INSERT_UPLOAD, upload_values(sha, sweeps, size, packed, meta, uploaded_by, now)
    ).scalar_one()
    refs: list[RunRef] = []
    new: dict[str, RunRef] = {}
    for sweep, key in zip(sweeps, keys, strict=True):
        if key in found:
            old = found[key]
            refs.append(RunRef(int(old[1]), str(old[2]), int(old[3]), created=False))
            continue
        if key in new:  # the same sweep twice inside one upload
            refs.append(dataclasses.replace(new[key], created=False))
            continue
        values = run_values(int(upload_id), key, sweep, now)
        run_id = int(conn.execute(_INSERT_RUN, values).scalar_one())
        dialects.bulk_insert_frame(conn, "candidates", with_run_id(sweep.rows, run_id))
        new[key] = RunRef(run_id, sweep.key, sweep.n_candidates)
        refs.append(new[key])
    return IngestResult(int(upload_id), sha, False, tuple(refs), differing_fields=tuple(differing))


def _json_value(text: Any) -> Any:
    """A stored JSON text block as a value (key order and spacing do not count)."""
    if text is None or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def with_run_id(rows: pa.Table | Any, run_id: int) -> pa.Table | Any:
    """The candidate rows with ``run_id`` as their first column (a DataFrame: a shallow
    copy; an Arrow table: the same buffers plus one column; COPY rows: new tuples)."""
    if isinstance(rows, dialects.CopyRows):
        return rows.with_first(C.RUN_ID, run_id)
    if isinstance(rows, pa.Table):
        ids = pa.array(np.full(rows.num_rows, run_id, dtype=np.int64))
        return rows.add_column(0, C.RUN_ID, ids)
    frame = rows.copy(deep=False)
    frame.insert(0, C.RUN_ID, run_id)
    return frame


def _differences(stored: sa.Row[Any], sweep: StoredSweep, meta: UploadMeta) -> list[str]:
    """The accepted differences (:data:`NOTED_BLOCKS`) between a stored run and a sweep
    with the same measurements; raises :class:`Conflict` for a contradiction."""
    row = stored._mapping
    if meta.run_date is not None and row[C.RUN_DATE] != meta.run_date:
        raise Conflict(
            "run_date",
            f"these measurements are stored already (run {row[C.RUN_ID]}) with "
            f"run_date={row[C.RUN_DATE]!r}, not {meta.run_date!r}; delete that run "
            "first to store them with another date",
        )
    for column, field in CONTRADICTING_BLOCKS.items():
        if _json_value(row[column]) != _json_value(_plain(sweep.run.get(column))):
            raise Conflict(
                field,
                f"the candidates are identical to stored run {row[C.RUN_ID]} but "
                f"{field} differs; bench_moe derives it from the same measurements, so "
                "one of the two files was edited. Delete that run first to store this one",
            )
    return [
        field
        for column, field in NOTED_BLOCKS.items()
        if _json_value(row[column]) != _json_value(_plain(sweep.run.get(column)))
    ]


def upload_values(
    sha: str,
    sweeps: Sequence[StoredSweep],
    size: int,
    packed: bytes,
    meta: UploadMeta,
    uploaded_by: str | None,
    now: dt.datetime,
) -> dict[str, Any]:
    """The ``uploads`` row of a new upload (all but its ``upload_id``)."""
    return {
        "sha256": sha,
        "filename": meta.filename,
        "source_format": str(sweeps[0].run.get(C.SOURCE_FORMAT)),
        "size_bytes": size,
        "compression": "zstd",
        "content": packed,
        "meta_json": json.dumps(dataclasses.asdict(meta), sort_keys=True),
        "uploaded_by": uploaded_by,
        "uploaded_at": now,
    }


def run_values(
    upload_id: int, run_key: str, sweep: StoredSweep, now: dt.datetime
) -> dict[str, Any]:
    """The ``runs`` row of a new run of ``sweep`` (all but its ``run_id``)."""
    values: dict[str, Any] = {
        "upload_id": upload_id,
        "run_key": run_key,
        "sweep_key": sweep.key,
        "n_candidates": sweep.n_candidates,
        "n_success": sweep.n_success,
        "n_failed": sweep.n_failed,
        "n_skipped": sweep.n_skipped,
        "created_at": now,
    }
    for name in (*C.RUN_COLUMNS, *RUN_EXTRA_KEYS):
        if name != C.RUN_ID:
            values[name] = _plain(sweep.run.get(name))
    return values
