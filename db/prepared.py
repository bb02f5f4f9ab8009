"""An upload made ready for the write path: what :func:`db.uploads.insert_upload` needs of
each sweep (its fingerprint, its candidate counts, its candidate rows in the form the
database inserts them), plus the upload's SHA-256 and its compressed bytes.

Two ways to get one, with the same result:

- in the server process, from parsed sweeps (:func:`stored_sweeps`), as every upload
  did before the parse pool existed;
- in a parse-pool worker (``api.parse_task.parse_and_prepare``, run by
  :mod:`ingest.parse_pool`):
  the worker parses, fingerprints, compresses and converts the candidates to an Arrow
  table, and the server only unpickles a few buffers and writes them. Parsing is most of
  the CPU an upload costs, and the server's one interpreter lock is what limits uploads/s.

Nothing here opens a connection.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from analysis import columns as C
from db.dialects import CopyRows, arrow_or_frame, copy_rows
from db.sweep_identity import compress, sweep_fingerprint
from ingest.records import Sweep


@dataclasses.dataclass(frozen=True)
class StoredSweep:
    """One sweep as the write path takes it. ``rows``: the candidates without ``run_id``,
    as the DataFrame the parser built or already in the form the database inserts (small
    frames for DuckDB: the Arrow table it registers; PostgreSQL: the Python rows its COPY
    takes); ``run_key`` its :func:`db.uploads.sweep_fingerprint`."""

    key: str
    run: dict[str, Any]
    run_key: str
    n_candidates: int
    n_success: int
    n_failed: int
    n_skipped: int
    rows: pa.Table | pd.DataFrame | CopyRows


@dataclasses.dataclass(frozen=True)
class PreparedUpload:
    """A parsed upload: ``sha256`` and ``size`` of the bytes, ``packed`` (them
    compressed, :func:`db.uploads.compress`) and its sweeps."""

    sha256: str
    size: int
    packed: bytes
    sweeps: tuple[StoredSweep, ...]


def stored_sweep(sweep: Sweep, *, arrow: bool | None = None) -> StoredSweep:
    """``sweep`` for the write path. ``arrow``: convert the candidates now to the form
    the database inserts: True (DuckDB) the Arrow table of small frames
    (:func:`db.dialects.arrow_or_frame`), False (PostgreSQL) the COPY rows
    (:func:`db.dialects.copy_rows`); None keeps the DataFrame (converted at the insert)."""
    candidates = sweep.candidates
    status = candidates[C.STATUS]
    return StoredSweep(
        key=sweep.key,
        run=sweep.run,
        run_key=sweep_fingerprint(sweep),
        n_candidates=len(candidates),
        n_success=int((status == "success").sum()),
        n_failed=int((status == "failed").sum()),
        n_skipped=int((status == "skipped").sum()),
        rows=_insert_form(candidates, arrow),
    )


def _insert_form(frame: pd.DataFrame, arrow: bool | None) -> pa.Table | pd.DataFrame | CopyRows:
    if arrow is None:
        return frame
    return arrow_or_frame(frame) if arrow else copy_rows(frame)


def stored_sweeps(sweeps: Sequence[Sweep], *, arrow: bool | None = None) -> list[StoredSweep]:
    """:func:`stored_sweep` of each."""
    return [stored_sweep(s, arrow=arrow) for s in sweeps]


def prepare_upload(raw: bytes, sweeps: Sequence[Sweep], *, arrow: bool) -> PreparedUpload:
    """``raw`` and its parsed ``sweeps`` ready for the write path: SHA-256, size,
    compressed bytes and each sweep in insert form (``arrow`` as for
    :func:`stored_sweep`)."""
    return PreparedUpload(
        sha256=hashlib.sha256(raw).hexdigest(),
        size=len(raw),
        packed=compress(raw),
        sweeps=tuple(stored_sweeps(sweeps, arrow=arrow)),
    )
