"""The one ASGI entry layer in front of every route: API, dashboard callbacks, static files.

What it enforces, before any route (or a worker thread) sees the request:

- a body size limit per path class: a declared ``Content-Length`` above it is refused at
  once (413), a chunked body is counted as it arrives and cut off with 413;
- a read timeout: a body whose next chunk does not arrive within ``body_idle_s``, or that
  trickles in below ``body_min_rate`` bytes/s once ``body_grace_s`` have passed, answers
  408 (slowloris bodies cost a coroutine, never a thread);
- a cap on concurrent uploads (POST under ``upload_prefix``): one more answers 429 with
  ``Retry-After``;
- for everything that is not the API (the dashboard, run by a2wsgi in a small thread
  pool), the whole body is read here first and replayed: a slow client holds no worker
  thread, so pages keep answering while ten clients dribble their bodies.

Every refusal uses the API's error envelope. Limits come from :class:`EntryLimits`, built
by the composition root from the settings.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass(frozen=True)
class EntryLimits:
    """Limits of the entry layer. Sizes in bytes, times in seconds.

    ``api_body_bytes``: largest body under ``/api/`` (uploads); ``page_body_bytes``: largest
    body anywhere else (Dash callbacks are a few KiB); ``max_uploads``: concurrent uploads
    before 429; ``retry_after_s``: the ``Retry-After`` sent with 429.
    """

    api_body_bytes: int = 512 * 1024 * 1024
    page_body_bytes: int = 8 * 1024 * 1024
    body_idle_s: float = 30.0
    body_grace_s: float = 10.0
    body_min_rate: float = 16 * 1024
    max_uploads: int = 32
    retry_after_s: int = 2
    upload_prefix: str = "/api/v1/runs"


class _Refused(Exception):
    def __init__(self, status: int, loc: list[str], msg: str, kind: str) -> None:
        super().__init__(msg)
        self.status, self.loc, self.msg, self.kind = status, loc, msg, kind


def refusal(status: int, loc: list[str], msg: str, kind: str) -> bytes:
    """The error envelope as bytes (the entry layer answers before FastAPI exists)."""
    return json.dumps({"detail": [{"loc": loc, "msg": msg, "type": kind}]}).encode()


async def send_refusal(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Answer ``status`` with a JSON ``body`` and close the connection (the unread rest
    of the request body must not be parsed as the next request)."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class EntryMiddleware:
    """See the module docstring."""

    def __init__(self, app: ASGIApp, limits: EntryLimits) -> None:
        self.app = app
        self.limits = limits
        self.uploads = 0  # in flight; the event loop is single-threaded, so no lock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        api = path.startswith("/api/")
        limit = self.limits.api_body_bytes if api else self.limits.page_body_bytes
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await send_refusal(send, 413, _too_large(limit, api))
            return
        is_upload = scope["method"] == "POST" and (
            path == self.limits.upload_prefix or path.startswith(self.limits.upload_prefix + "/")
        )
        if is_upload and self.uploads >= self.limits.max_uploads:
            retry = str(self.limits.retry_after_s).encode()
            body = refusal(
                429,
                [],
                f"{self.uploads} uploads are in progress (limit "
                f"{self.limits.max_uploads}, setting MOEDASH_MAX_CONCURRENT_UPLOADS); "
                f"retry after {self.limits.retry_after_s} s",
                "too_many_uploads",
            )
            await send_refusal(send, 429, body, [(b"retry-after", retry)])
            return
        if is_upload:
            self.uploads += 1
        try:
            await self._serve(scope, receive, send, limit, api)
        finally:
            if is_upload:
                self.uploads -= 1

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, limit: int, api: bool
    ) -> None:
        state = {"started": False, "refused": False}

        async def guarded_send(message: Message) -> None:
            if state["refused"]:
                return  # our refusal went out; whatever the app says after it is dropped
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        async def refuse(exc: _Refused) -> None:
            if not state["started"] and not state["refused"]:
                state["refused"] = True
                await send_refusal(
                    send, exc.status, refusal(exc.status, exc.loc, exc.msg, exc.kind)
                )

        guarded = _GuardedReceive(receive, self.limits, limit, api, refuse)
        if api:
            # the route reads the body itself (an upload streams it to a file); a
            # violation is answered at once and the app sees the client go away
            await self.app(scope, guarded, guarded_send)
            return
        try:
            replay = await guarded.read_all()
        except _Refused as exc:
            await refuse(exc)
            return
        await self.app(scope, replay, guarded_send)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers") or ():
        if key == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _too_large(limit: int, api: bool) -> bytes:
    return refusal(413, ["body"], _too_large_msg(limit, api), "too_large")


class _GuardedReceive:
    """``receive`` with the size limit and the read timeouts applied."""

    def __init__(
        self,
        receive: Receive,
        limits: EntryLimits,
        limit: int,
        api: bool,
        refuse: Callable[[_Refused], Awaitable[None]],
    ) -> None:
        self.receive = receive
        self.refuse = refuse
        self.limits = limits
        self.limit = limit
        self.api = api
        self.seen = 0
        self.started = time.monotonic()
        self.done = False

    async def __call__(self) -> Message:
        """The next message; after a violation the refusal is sent and the app is told
        the client disconnected (Starlette then stops reading: ``ClientDisconnect``)."""
        try:
            return await self.next()
        except _Refused as exc:
            await self.refuse(exc)
            return {"type": "http.disconnect"}

    async def next(self) -> Message:
        """The next message, raising :class:`_Refused` on a violation."""
        if self.done:  # after the body only http.disconnect can come; no timeout on it
            return await self.receive()
        try:
            message = await asyncio.wait_for(self.receive(), self.limits.body_idle_s)
        except TimeoutError:
            raise _timeout(f"no body data for {self.limits.body_idle_s:g} s") from None
        if message["type"] != "http.request":
            return message
        self.seen += len(message.get("body", b""))
        if self.seen > self.limit:
            raise _Refused(413, ["body"], _too_large_msg(self.limit, self.api), "too_large")
        self.done = not message.get("more_body", False)
        elapsed = time.monotonic() - self.started
        if (
            not self.done
            and elapsed > self.limits.body_grace_s
            and self.seen / elapsed < self.limits.body_min_rate
        ):
            raise _timeout(
                f"body arrives at {self.seen / elapsed:.0f} B/s, below the minimum of "
                f"{self.limits.body_min_rate:.0f} B/s"
            )
        return message

    async def read_all(self) -> Receive:
        """Read the whole body now; returns a ``receive`` that replays it."""
        chunks: list[bytes] = []
        while True:
            message = await self.next()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await self.receive()

        return replay


def _too_large_msg(limit: int, api: bool) -> str:
    setting = "MOEDASH_MAX_UPLOAD_BYTES" if api else "MOEDASH_MAX_PAGE_BODY_BYTES"
    return f"request body exceeds the limit of {limit} bytes (setting {setting})"


def _timeout(why: str) -> _Refused:
    return _Refused(408, ["body"], f"request body too slow: {why}", "timeout")
