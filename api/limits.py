"""Limits kept per API instance: failed authentications per client, upload bytes parsed
at once. (Body size, read timeouts and the upload cap live in the entry layer,
:mod:`api.entry`, in front of every route.)"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class AuthFailureLimiter:
    """At most ``per_minute`` failed authentications per key in any sliding 60 s window.
    Thread-safe (token checks run in the threadpool and in the event loop).

    The key (:meth:`key`) is the client address *and* the first characters of the
    credential presented, so one client's guesses never lock out another credential
    sent from the same address (every client behind one proxy or NAT shares it): a
    valid token has its own prefix, and a valid token this process has seen recently
    (:meth:`known_valid`) passes even when someone hammered its prefix. Only failures
    are counted. The table of keys is bounded (``max_clients``; the oldest entry goes
    first), so a flood of spoofed addresses or prefixes cannot grow it without end.
    """

    WINDOW_S = 60.0
    PREFIX = 12  # "mdt_" + 8: the display prefix `moedash token list` shows
    VALID_TTL_S = 3600.0

    def __init__(self, per_minute: int, max_clients: int = 10_000) -> None:
        self.per_minute = per_minute
        self.max_clients = max_clients
        self._failures: dict[str, deque[float]] = {}
        self._valid: dict[str, float] = {}  # digest of a verified secret -> expiry
        self._lock = threading.Lock()

    @classmethod
    def key(cls, client: str, secret: str) -> str:
        """The limiter key of ``secret`` presented from ``client``."""
        return f"{client}|{secret[: cls.PREFIX]}"

    def remember_valid(self, secret: str, now: float | None = None) -> None:
        """``secret`` was just verified: it passes a lockout of its key for a while."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._valid.pop(_digest(secret), None)
            self._valid[_digest(secret)] = now + self.VALID_TTL_S
            while len(self._valid) > self.max_clients:
                self._valid.pop(next(iter(self._valid)))

    def known_valid(self, secret: str, now: float | None = None) -> bool:
        """True when ``secret`` was verified by this process within the last hour."""
        now = time.monotonic() if now is None else now
        with self._lock:
            expiry = self._valid.get(_digest(secret))
            return expiry is not None and expiry > now

    def retry_after(self, client: str, now: float | None = None) -> int | None:
        """Seconds until key ``client`` may try again (rounded up, at least 1), or None when
        it is under the limit."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._failures.get(client)
            if times is None:
                return None
            while times and times[0] <= now - self.WINDOW_S:
                times.popleft()
            if len(times) < self.per_minute:
                return None
            return max(1, math.ceil(times[0] + self.WINDOW_S - now))

    def record_failure(self, client: str, now: float | None = None) -> None:
        """Count one failed authentication of key ``client``."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._failures.pop(client, None) or deque()
            times.append(now)
            while len(times) > self.per_minute:
                times.popleft()  # older failures no longer decide anything
            self._failures[client] = times  # re-inserted: dict order is recency
            while len(self._failures) > self.max_clients:
                self._failures.pop(next(iter(self._failures)))


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class ParseBudget:
    """Upload bytes parsed at the same time, at most ``budget``: a parse of ``size``
    bytes waits until it fits beside the parses in progress. One upload larger than the
    whole budget runs when nothing else parses, so every upload gets its turn; waiters
    are served in arrival order (no starvation of big uploads by small ones).

    Why: a parse holds several times its input in Python objects; spooling bodies to
    disk bounds what waiting uploads cost, this bounds what running parses cost.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.in_use = 0
        self._queue: deque[tuple[int, asyncio.Future[None]]] = deque()

    @asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        """Hold ``size`` bytes of the budget for the block (waits for room first)."""
        if self._queue or not self._fits(size):
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._queue.append((size, future))
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._release(size)  # granted just as we were cancelled
                else:
                    self._queue.remove((size, future))
                    self._wake()
                raise
        else:
            self.in_use += size
        try:
            yield
        finally:
            self._release(size)

    def _fits(self, size: int) -> bool:
        return self.in_use == 0 or self.in_use + size <= self.budget

    def _release(self, size: int) -> None:
        self.in_use -= size
        self._wake()

    def _wake(self) -> None:
        while self._queue and self._fits(self._queue[0][0]):
            size, future = self._queue.popleft()
            self.in_use += size
            future.set_result(None)
