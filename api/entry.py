"""The one ASGI entry layer in front of every route: API, dashboard callbacks, static files.

What it enforces, before any route (or a worker thread) sees the request:

- a body size limit per route: uploads (``upload_paths``) up to ``api_body_bytes``, other
  API routes ``json_body_bytes`` (kilobytes: the planner's form) or their own entry in
  ``route_body_bytes``, everything else (Dash callbacks, static files)
  ``page_body_bytes``. A declared ``Content-Length`` above it is refused at once (413), a
  chunked body is counted as it arrives and cut off with 413;
- one memory budget for bodies held in memory: every body but an upload's (uploads
  stream to disk) is read here whole before its route runs, and the bytes of all such
  bodies held at once stay within ``buffered_bytes``; one more answers 429 with
  ``Retry-After``. So N hostile clients cost at most that budget, not N x the limit;
- a read timeout: a body whose next chunk does not arrive within ``body_idle_s``, or that
  trickles in below ``body_min_rate`` bytes/s once ``body_grace_s`` have passed, answers
  408 (slowloris bodies cost a coroutine, never a thread). The pace clock runs only
  while the server waits for the client's next bytes: time the route spends elsewhere
  (a token check on a slow database) is never blamed on the client;
- a cap on concurrent uploads: one more answers 429 with ``Retry-After``;
- a body read whole here is replayed to the app: a slow client holds no worker thread,
  so pages keep answering while ten clients dribble their bodies.

Every refusal uses the API's error envelope. Limits come from :class:`EntryLimits`, built
by the composition root from the settings.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass(frozen=True)
class EntryLimits:
    """Limits of the entry layer. Sizes in bytes, times in seconds.

    ``api_body_bytes``: largest upload body (POST to one of ``upload_paths``; streamed to
    disk); ``json_body_bytes``: largest body to any other API route unless
    ``route_body_bytes`` names the path; ``page_body_bytes``: largest body anywhere else
    (Dash callbacks are a few KiB); ``buffered_bytes``: bytes of non-upload bodies held in
    memory at once before 429; ``max_uploads``: concurrent uploads before 429;
    ``max_expensive``: requests in progress at once to the routes that compute for
    seconds (``expensive_prefixes``) before 429, so anonymous readers cannot take every
    worker thread and core; ``max_uploads_per_token``: concurrent uploads with one
    credential (the
    ``Authorization`` header as sent; before it is checked) before 429, so one token holder
    trickling bodies cannot take every upload slot;
    ``retry_after_s``: the ``Retry-After`` sent with 429.
    """

    api_body_bytes: int = 512 * 1024 * 1024
    json_body_bytes: int = 64 * 1024
    route_body_bytes: Mapping[str, int] = field(default_factory=dict)
    page_body_bytes: int = 2 * 1024 * 1024
    buffered_bytes: int = 64 * 1024 * 1024
    body_idle_s: float = 30.0
    body_grace_s: float = 10.0
    body_min_rate: float = 16 * 1024
    max_uploads: int = 32
    max_uploads_per_token: int = 8
    retry_after_s: int = 2
    upload_paths: tuple[str, ...] = ("/api/v1/runs", "/api/v1/serving-configs")
    # reads that compute for seconds (the planner's search, the cross-validation ledger,
    # threshold re-derivation, the guide's agreement): at most ``max_expensive`` at once
    expensive_prefixes: tuple[str, ...] = (
        "/api/v1/planner/",
        "/api/v1/crossval/",
        "/api/v1/thresholds",
        "/api/v1/agreement",
    )
    max_expensive: int = 4

    def is_expensive(self, method: str, path: str) -> bool:
        """A request that may compute for seconds (not an upload: those have their own
        cap)."""
        return method in ("GET", "HEAD", "POST") and path.startswith(self.expensive_prefixes)

    def body_limit(self, method: str, path: str) -> tuple[int, str, bool]:
        """(largest body, the setting that sets it, whether it is an upload) for a
        request: uploads stream, everything else is read whole first."""
        if method == "POST" and path.rstrip("/") in self.upload_paths:
            return self.api_body_bytes, "MOEDASH_MAX_UPLOAD_BYTES", True
        if path.startswith("/api/"):
            if path in self.route_body_bytes:
                return self.route_body_bytes[path], "MOEDASH_MAX_OUTCOMES_BODY_BYTES", False
            return self.json_body_bytes, "MOEDASH_MAX_JSON_BODY_BYTES", False
        return self.page_body_bytes, "MOEDASH_MAX_PAGE_BODY_BYTES", False


class _Refused(Exception):
    def __init__(
        self, status: int, loc: list[str], msg: str, kind: str, retry_after: int | None = None
    ) -> None:
        super().__init__(msg)
        self.status, self.loc, self.msg, self.kind = status, loc, msg, kind
        self.retry_after = retry_after

    def headers(self) -> list[tuple[bytes, bytes]]:
        if self.retry_after is None:
            return []
        return [(b"retry-after", str(self.retry_after).encode())]


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
        # the event loop is single-threaded, so these counters need no lock
        self.uploads = 0  # in flight
        self.per_credential: dict[bytes, int] = {}  # in flight per Authorization digest
        self.buffered = 0  # bytes of bodies read whole and not yet answered
        self.expensive = 0  # expensive reads in progress

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, setting, is_upload = self.limits.body_limit(scope["method"], scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await send_refusal(send, 413, _too_large(limit, setting))
            return
        if is_upload and self.uploads >= self.limits.max_uploads:
            exc = _busy(
                f"{self.uploads} uploads are in progress (limit {self.limits.max_uploads}, "
                f"setting MOEDASH_MAX_CONCURRENT_UPLOADS)",
                "too_many_uploads",
                self.limits.retry_after_s,
            )
            await send_refusal(send, 429, _refusal_body(exc), exc.headers())
            return
        if is_upload:
            credential = _credential(scope)
            mine = self.per_credential.get(credential, 0)
            if mine >= self.limits.max_uploads_per_token:
                exc = _busy(
                    f"{mine} uploads with this token are in progress (limit "
                    f"{self.limits.max_uploads_per_token}, setting "
                    "MOEDASH_MAX_UPLOADS_PER_TOKEN)",
                    "too_many_uploads",
                    self.limits.retry_after_s,
                )
                await send_refusal(send, 429, _refusal_body(exc), exc.headers())
                return
            self.uploads += 1
            self.per_credential[credential] = mine + 1
            try:
                await self._serve_upload(scope, receive, send, limit, setting)
            finally:
                self.uploads -= 1
                left = self.per_credential.pop(credential, 1) - 1
                if left:
                    self.per_credential[credential] = left
            return
        expensive = self.limits.is_expensive(scope["method"], scope["path"])
        if expensive and self.expensive >= self.limits.max_expensive:
            exc = _busy(
                f"{self.expensive} expensive requests (planner, cross-validation, "
                f"thresholds) are in progress (limit {self.limits.max_expensive}, setting "
                "MOEDASH_MAX_EXPENSIVE_REQUESTS)",
                "too_many_expensive",
                self.limits.retry_after_s,
            )
            await send_refusal(send, 429, _refusal_body(exc), exc.headers())
            return
        held = _Held(self)
        self.expensive += expensive
        try:
            await self._serve_buffered(scope, receive, send, limit, setting, held, declared)
        finally:
            held.release()
            self.expensive -= expensive

    async def _serve_upload(
        self, scope: Scope, receive: Receive, send: Send, limit: int, setting: str
    ) -> None:
        guarded_send, refuse = _refusing_sender(send)
        guarded = _GuardedReceive(receive, self.limits, limit, setting, refuse)
        # the route reads the body itself (streamed to a file); a violation is answered at
        # once and the app sees the client go away
        await self.app(scope, guarded, guarded_send)

    async def _serve_buffered(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        limit: int,
        setting: str,
        held: _Held,
        declared: int | None,
    ) -> None:
        guarded_send, refuse = _refusing_sender(send)
        guarded = _GuardedReceive(receive, self.limits, limit, setting, refuse, held.take)
        try:
            if declared:
                held.take(declared)  # refused before reading when it cannot fit
            replay = await guarded.read_all(reserved=declared or 0)
        except _Refused as exc:
            await refuse(exc)
            return
        await self.app(scope, replay, guarded_send)


class _Held:
    """Bytes of one request's body counted against the middleware's buffer budget."""

    def __init__(self, owner: EntryMiddleware) -> None:
        self.owner = owner
        self.bytes = 0

    def take(self, size: int) -> None:
        budget = self.owner.limits.buffered_bytes
        if self.owner.buffered + size > budget:
            raise _busy(
                f"{self.owner.buffered} bytes of request bodies are held (limit {budget}, "
                "setting MOEDASH_MAX_BUFFERED_BODY_BYTES)",
                "too_many_bodies",
                self.owner.limits.retry_after_s,
            )
        self.owner.buffered += size
        self.bytes += size

    def release(self) -> None:
        self.owner.buffered -= self.bytes
        self.bytes = 0


def _busy(what: str, kind: str, retry_after: int) -> _Refused:
    return _Refused(429, [], f"{what}; retry after {retry_after} s", kind, retry_after)


def _refusal_body(exc: _Refused) -> bytes:
    return refusal(exc.status, exc.loc, exc.msg, exc.kind)


def _refusing_sender(
    send: Send,
) -> tuple[Callable[[Message], Awaitable[None]], Callable[[_Refused], Awaitable[None]]]:
    """A ``send`` that drops what the app says after a refusal went out, and the
    ``refuse`` that sends one (unless the app's answer already started)."""
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
            await send_refusal(send, exc.status, _refusal_body(exc), exc.headers())

    return guarded_send, refuse


def _credential(scope: Scope) -> bytes:
    """A digest of the request's ``Authorization`` header (the bytes sent, not yet
    checked; no header: the client address), so per-token counts hold no secret."""
    value = next((v for k, v in scope.get("headers") or () if k == b"authorization"), None)
    if value is None:
        client = scope.get("client")
        value = f"addr:{client[0] if client else ''}".encode()
    return hashlib.sha256(value).digest()


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers") or ():
        if key == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _too_large(limit: int, setting: str) -> bytes:
    return refusal(413, ["body"], _too_large_msg(limit, setting), "too_large")


class _GuardedReceive:
    """``receive`` with the size limit, the buffer budget and the read timeouts applied."""

    def __init__(
        self,
        receive: Receive,
        limits: EntryLimits,
        limit: int,
        setting: str,
        refuse: Callable[[_Refused], Awaitable[None]],
        take: Callable[[int], None] | None = None,
    ) -> None:
        self.receive = receive
        self.refuse = refuse
        self.limits = limits
        self.limit = limit
        self.setting = setting
        self.take = take
        self.seen = 0
        self.waited = 0.0  # seconds spent waiting for the client's bytes
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
        began = time.monotonic()
        try:
            message = await asyncio.wait_for(self.receive(), self.limits.body_idle_s)
        except TimeoutError:
            raise _timeout(f"no body data for {self.limits.body_idle_s:g} s") from None
        finally:
            # only the time spent waiting on the client counts towards its pace: a route
            # that reads later (after a token check on a slow database) finds the bytes
            # already waiting in the socket, and is not the client's fault
            self.waited += time.monotonic() - began
        if message["type"] != "http.request":
            return message
        self.seen += len(message.get("body", b""))
        if self.seen > self.limit:
            raise _Refused(413, ["body"], _too_large_msg(self.limit, self.setting), "too_large")
        self.done = not message.get("more_body", False)
        if (
            not self.done
            and self.waited > self.limits.body_grace_s
            and self.seen / self.waited < self.limits.body_min_rate
        ):
            raise _timeout(
                f"body arrives at {self.seen / self.waited:.0f} B/s, below the minimum of "
                f"{self.limits.body_min_rate:.0f} B/s"
            )
        return message

    async def read_all(self, reserved: int = 0) -> Receive:
        """Read the whole body now, counting its bytes beyond ``reserved`` (a declared
        length already taken) against the buffer budget; returns a ``receive`` that
        replays it."""
        chunks: list[bytes] = []
        while True:
            message = await self.next()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            if self.take is not None and self.seen > reserved:
                self.take(min(len(chunk), self.seen - reserved))
                reserved = self.seen
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        del chunks
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await self.receive()

        return replay


def _too_large_msg(limit: int, setting: str) -> str:
    return f"request body exceeds the limit of {limit} bytes (setting {setting})"


def _timeout(why: str) -> _Refused:
    return _Refused(408, ["body"], f"request body too slow: {why}", "timeout")
