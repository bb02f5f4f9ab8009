"""The CI upload client used by ``moedash upload``.

Retries with exponential back-off (1, 2, 4 … s, capped at 30 s) on network errors, 5xx
and 429; any other 4xx is final and its server message is raised. Uploads are
idempotent on the server (same bytes → same run), so a retry after a lost response is
safe.

Metadata goes through the one upload-metadata model (:mod:`ingest.metadata`) before
anything is sent, so a value the server would refuse with 422 is refused here first
(:class:`ingest.metadata.MetadataError`), without a request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from ingest.metadata import UploadMetadata, metadata_of
from ingest.records import UploadMeta


class UploadFailed(RuntimeError):
    """The server refused the file (a final 4xx) or every attempt failed."""


def _content_type(path: Path) -> str:
    return "text/csv" if path.suffix.lower() == ".csv" else "application/json"


_CHUNK = 1 << 20


def _chunks(body: bytes) -> Iterator[bytes]:
    """The body in 1 MiB pieces. httpx sends one large ``bytes`` body ~10x slower than
    the same bytes streamed (measured: 463 MB in 11.6 s vs 1.3 s over loopback)."""
    view = memoryview(body)
    for start in range(0, len(body), _CHUNK):
        yield bytes(view[start : start + _CHUNK])


def _message(resp: httpx.Response) -> str:
    try:
        detail = resp.json().get("detail")
    except ValueError:
        return resp.text[:500]
    if isinstance(detail, list) and detail:
        parts = []
        for d in detail:
            loc = ".".join(str(x) for x in d.get("loc", []))
            parts.append(f"{loc}: {d.get('msg')}" if loc else str(d.get("msg")))
        return "; ".join(parts)
    return str(detail)


def upload_file(
    path: Path,
    *,
    url: str,
    token: str,
    meta: UploadMetadata | UploadMeta,
    retries: int = 5,
    timeout: float = 300.0,
    sleep: Callable[[float], object] = time.sleep,
) -> dict[str, Any]:
    """POST one file to ``{url}/api/v1/runs``; return the JSON answer.

    ``meta`` is checked by :class:`UploadMetadata` first (a record built elsewhere is
    validated again; its ``synthetic`` flag is not upload metadata and is not sent).
    """
    metadata = meta if isinstance(meta, UploadMetadata) else metadata_of(meta)
    params = metadata.query_params()
    body = path.read_bytes()
    endpoint = url.rstrip("/") + "/api/v1/runs"
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": _content_type(path),
        "Content-Length": str(len(body)),
    }
    last = ""
    for attempt in range(retries + 1):
        try:
            resp = httpx.post(
                endpoint, content=_chunks(body), params=params, headers=headers, timeout=timeout
            )
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
        else:
            if resp.status_code in (200, 201):
                data: dict[str, Any] = resp.json()
                return data
            last = f"HTTP {resp.status_code}: {_message(resp)}"
            if resp.status_code < 500 and resp.status_code != 429:
                raise UploadFailed(last)
        if attempt < retries:
            sleep(min(30.0, 2.0**attempt))
    raise UploadFailed(f"gave up after {retries + 1} attempts; last error: {last}")
