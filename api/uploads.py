"""Reading an upload body without holding it in memory twice.

The body (raw, or the ``file`` part of a multipart form) streams chunk by chunk to a
temporary file while it arrives; nothing of it is kept in memory meanwhile, so uploads
waiting for their turn (:class:`api.limits.ParseBudget`) cost disk, not RAM. When it is an
upload's turn, the file is read back into one ``bytes`` object of exactly its size (one
allocation, no chunk list joined into a second copy) and handed to the parser and the
store, which need contiguous bytes (hashing, format sniffing, the parallel parser's byte
search).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from fastapi import HTTPException, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import ClientDisconnect

# Disk writes are batched to this size: fewer syscalls, and a small memory footprint.
_WRITE_CHUNK = 1 << 20


@dataclass
class SpooledUpload:
    """An upload body on disk: ``file`` (positioned anywhere), ``size`` in bytes, the
    multipart ``filename`` (None for a raw body) and the other form ``fields``."""

    file: IO[bytes]
    size: int
    filename: str | None = None
    fields: dict[str, str] = field(default_factory=dict)

    def read(self) -> bytes:
        """The whole body as one ``bytes`` (read in one call: one allocation)."""
        self.file.seek(0)
        data = self.file.read(self.size)
        return data if isinstance(data, bytes) else bytes(data)


def _error(status: int, loc: list[str | int], msg: str, kind: str) -> HTTPException:
    return HTTPException(status_code=status, detail=[{"loc": loc, "msg": msg, "type": kind}])


async def spool_raw(request: Request, handle: IO[bytes]) -> int:
    """Stream the raw request body into ``handle``; returns its size in bytes. A client
    that goes away midway (or is cut off by the entry layer) raises 400."""
    size = 0
    pending: list[bytes] = []
    pending_size = 0
    try:
        async for chunk in request.stream():
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size >= _WRITE_CHUNK:
                await run_in_threadpool(handle.writelines, pending)
                size += pending_size
                pending, pending_size = [], 0
    except ClientDisconnect:
        raise _error(400, ["body"], "the client stopped sending the body", "incomplete") from None
    if pending:
        await run_in_threadpool(handle.writelines, pending)
        size += pending_size
    handle.flush()
    return size


@contextmanager
def spooled_raw_file() -> Iterator[IO[bytes]]:
    """A temporary file for one raw body, removed when the block ends."""
    with tempfile.TemporaryFile(prefix="moedash-upload-") as handle:  # unlinked at once
        yield handle


async def spool_form(request: Request, max_part_size: int) -> tuple[UploadFile, dict[str, str]]:
    """Parse a multipart form; Starlette spools the parts to temporary files itself
    (1 MiB in memory, the rest on disk). Returns the ``file`` part and the text fields."""
    try:
        form: Any = await request.form(max_files=1, max_fields=20, max_part_size=max_part_size)
    except ClientDisconnect:
        raise _error(400, ["body"], "the client stopped sending the body", "incomplete") from None
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        await form.close()
        raise _error(422, ["form", "file"], "a file part named 'file' is required", "missing")
    fields = {k: v for k, v in form.items() if k != "file" and isinstance(v, str) and v}
    return upload, fields


def upload_size(upload: UploadFile) -> int:
    """Size in bytes of a spooled multipart file part."""
    handle = upload.file
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(0)
    return size
