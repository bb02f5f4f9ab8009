"""Upload sightings: the later arrivals of measurements already stored.

A sighting is recorded when the same bytes arrive again (a CI retry, often with a new
``ci_url``) or when the same measurements arrive in other bytes (NVIDIA's CSVs after
their ``data.js``, a re-serialised report). It keeps what the arrival said about itself
(``ci_url``, ``notes``, ``filename``, the token name) and the SHA-256 of its bytes;
other bytes are also kept, zstd-compressed, once per SHA-256, so nothing sent is lost.

Identical arrivals are one row: the sighting key is the upload, the SHA-256 and those
annotations, and a repeat only raises ``n_seen`` and ``last_seen_at``. The number of
rows per upload is therefore the number of distinct annotations sent, not of retries.
Functions here work inside the caller's transaction.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from typing import Any

import sqlalchemy as sa

from db import schema
from ingest.records import UploadMeta

# Compressed like the uploads table (db.uploads.compress, given by the caller).
_SIGHTING_FIELDS = ("ci_url", "notes", "filename")


@dataclasses.dataclass(frozen=True)
class SightingRef:
    """One recorded sighting: ``n_seen`` counts the arrivals it stands for."""

    sighting_id: int
    upload_id: int
    n_seen: int
    created: bool


def sighting_key(upload_id: int, sha: str, meta: UploadMeta, uploaded_by: str | None) -> str:
    """Identity of a sighting: upload, bytes and the arrival's annotations."""
    parts = [upload_id, sha, uploaded_by, *(getattr(meta, f) for f in _SIGHTING_FIELDS)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def record_sighting(
    conn: sa.Connection,
    upload_id: int,
    sha: str,
    meta: UploadMeta,
    uploaded_by: str | None,
    *,
    content: bytes | None = None,
    size_bytes: int | None = None,
) -> SightingRef:
    """Insert the sighting or count one more arrival of an identical one.

    ``content`` (already compressed) is stored only when no sighting of these bytes
    holds it yet. A concurrent insert of the same sighting raises
    :class:`db.errors.UniqueViolation` from the caller's transaction (retry it).
    """
    t = schema.upload_sightings
    key = sighting_key(upload_id, sha, meta, uploaded_by)
    now = dt.datetime.now(dt.UTC)
    # one atomic increment: concurrent identical arrivals each count (no lost update)
    row = conn.execute(
        t.update()
        .where(t.c.sighting_key == key)
        .values(n_seen=t.c.n_seen + 1, last_seen_at=now)
        .returning(t.c.sighting_id, t.c.n_seen)
    ).first()
    if row is not None:
        return SightingRef(int(row[0]), upload_id, int(row[1]), created=False)
    keep = content is not None
    if keep:
        held = conn.execute(
            sa.select(t.c.sighting_id).where(t.c.sha256 == sha, t.c.content.is_not(None))
        ).first()
        keep = held is None
    values: dict[str, Any] = {
        "upload_id": upload_id,
        "sighting_key": key,
        "sha256": sha,
        "same_bytes": content is None,
        "uploaded_by": uploaded_by,
        "first_seen_at": now,
        "last_seen_at": now,
        "n_seen": 1,
        "size_bytes": size_bytes if content is not None else None,
        "compression": "zstd" if keep else None,
        "content": content if keep else None,
        **{f: getattr(meta, f) for f in _SIGHTING_FIELDS},
    }
    sighting_id = conn.execute(t.insert().values(**values).returning(t.c.sighting_id)).scalar_one()
    return SightingRef(int(sighting_id), upload_id, 1, created=True)


def sightings_of_upload(conn: sa.Connection, upload_id: int) -> list[dict[str, Any]]:
    """The sightings of one upload, oldest first, without their bytes
    (``bytes_kept`` says whether other bytes are stored)."""
    t = schema.upload_sightings
    rows = conn.execute(
        sa.select(
            t.c.sighting_id,
            t.c.sha256,
            t.c.same_bytes,
            t.c.ci_url,
            t.c.notes,
            t.c.filename,
            t.c.uploaded_by,
            t.c.first_seen_at,
            t.c.last_seen_at,
            t.c.n_seen,
            t.c.size_bytes,
            t.c.content.is_not(None).label("bytes_kept"),
        )
        .where(t.c.upload_id == upload_id)
        .order_by(t.c.sighting_id)
    ).all()
    return [dict(row._mapping) for row in rows]


def delete_sightings(conn: sa.Connection, upload_id: int) -> None:
    """Remove the sightings of an upload (when its last run is deleted)."""
    t = schema.upload_sightings
    conn.execute(t.delete().where(t.c.upload_id == upload_id))


def sighting_bytes(conn: sa.Connection, upload_id: int, sighting_id: int) -> bytes | None:
    """The compressed bytes a sighting of ``upload_id`` arrived with (other bytes: the
    copy kept once per SHA-256; the same bytes: the upload's own), or None when the
    upload has no such sighting."""
    t, u = schema.upload_sightings, schema.uploads
    row = conn.execute(
        sa.select(t.c.sha256, t.c.same_bytes).where(
            t.c.sighting_id == sighting_id, t.c.upload_id == upload_id
        )
    ).first()
    if row is None:
        return None
    if row.same_bytes:
        content = conn.execute(sa.select(u.c.content).where(u.c.upload_id == upload_id))
    else:
        content = conn.execute(
            sa.select(t.c.content).where(t.c.sha256 == row.sha256, t.c.content.is_not(None))
        )
    value = content.scalar()
    return None if value is None else bytes(value)
