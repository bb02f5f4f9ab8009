"""gzip for the dashboard's responses, with the static bundles compressed only once.

The Dash front end is ~7 MB of JavaScript (plotly.js alone 4.8 MB) plus JSON callback
answers of a few hundred KB. Starlette's ``GZipMiddleware`` would compress every bundle
again on every visit (level 9: ~0.3 s of CPU for plotly.js). Here:

* ``/_dash-component-suites/…`` and ``/static/…`` answers (immutable per URL and ETag)
  are compressed once and served from memory afterwards;
* other answers (layout, callbacks) are compressed on the fly at a fast level;
* anything small, already encoded, not text-like, or asked for without
  ``Accept-Encoding: gzip`` passes through untouched.
"""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict
from typing import Any

import anyio
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MIN_SIZE = 1024
_TEXT = ("text/", "application/javascript", "application/json", "image/svg+xml")
_STATIC = ("/_dash-component-suites/", "/static/")


async def _gzip(data: bytes, level: int) -> bytes:
    if len(data) < 256 * 1024:
        return gzip.compress(data, compresslevel=level, mtime=0)
    # big bodies (plotly.js: ~0.1 s) compress off the event loop
    return await anyio.to_thread.run_sync(lambda: gzip.compress(data, compresslevel=level, mtime=0))


class CachedGZipMiddleware:
    def __init__(
        self, app: ASGIApp, *, level: int = 4, static_level: int = 6, cache_entries: int = 64
    ) -> None:
        self.app = app
        self.level = level
        self.static_level = static_level
        self.cache_entries = cache_entries
        self._cache: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or "gzip" not in Headers(scope=scope).get("accept-encoding", ""):
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        body: list[bytes] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if not message.get("more_body", False):
                    await self._finish(scope, start, b"".join(body), send)
                return
            await send(message)

        await self.app(scope, receive, capture)

    async def _finish(self, scope: Scope, start: dict[str, Any], data: bytes, send: Send) -> None:
        headers = MutableHeaders(raw=list(start.get("headers", [])))
        kind = headers.get("content-type", "")
        if (
            start.get("status") != 200
            or len(data) < MIN_SIZE
            or "content-encoding" in headers
            or not kind.startswith(_TEXT)
        ):
            await send(start)
            await send({"type": "http.response.body", "body": data})
            return
        path = scope.get("path", "")
        if scope.get("method") == "GET" and path.startswith(_STATIC):
            key = (
                path + "?" + scope.get("query_string", b"").decode("latin-1"),
                headers.get("etag", "") + f"/{len(data)}",
            )
            with self._lock:
                packed = self._cache.get(key)
                if packed is not None:
                    self._cache.move_to_end(key)
            if packed is None:
                packed = await _gzip(data, self.static_level)
                with self._lock:
                    self._cache[key] = packed
                    while len(self._cache) > self.cache_entries:
                        self._cache.popitem(last=False)
        else:
            packed = await _gzip(data, self.level)
        headers["content-encoding"] = "gzip"
        headers["content-length"] = str(len(packed))
        headers.add_vary_header("Accept-Encoding")
        start["headers"] = headers.raw
        await send(start)
        await send({"type": "http.response.body", "body": packed})
