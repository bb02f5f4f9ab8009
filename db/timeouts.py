"""Database waits, bounded: how long to connect, to run one statement, to wait for a row
lock, and to wait for a pooled connection; and a watchdog for a server that stops
answering altogether.

PostgreSQL enforces ``statement_timeout`` and ``lock_timeout`` itself (set on every new
connection), libpq ``connect_timeout``, SQLAlchemy's pool ``pool_timeout``. None of those
helps when the server is frozen (SIGSTOP, a network partition that drops nothing): the
kernel still acknowledges the socket, the server never answers, and a statement waits
forever. :class:`Watchdog` covers that: each statement is armed with a deadline (the
statement timeout plus a grace); a connection still waiting past it has its socket shut
down, so the driver raises at once, the pool discards the connection and the caller gets
a :class:`~db.errors.StoreError` (503) instead of a hang.
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DbTimeouts:
    """Timeouts in seconds; 0 turns one off (not advised on a shared server).

    ``connect_s``: opening a connection (PostgreSQL); ``statement_s``: one statement
    (PostgreSQL ``statement_timeout``); ``lock_s``: waiting for a row or table lock
    (PostgreSQL ``lock_timeout``; DuckDB: the in-process write lock); ``pool_s``: waiting
    for a free pooled connection (both); ``grace_s``: how much longer than ``statement_s``
    the client waits for a server that does not answer at all before it drops the
    connection (the watchdog)."""

    connect_s: float = 5.0
    statement_s: float = 60.0
    lock_s: float = 10.0
    pool_s: float = 10.0
    grace_s: float = 5.0

    @property
    def ping_s(self) -> float:
        """Seconds a trivial statement (the pool's liveness ping, the session SETs) may
        take before the connection is taken for dead: a live server answers in
        milliseconds, so this need not wait for the statement timeout."""
        return max(2.0, self.connect_s) if self.connect_s > 0 else self.grace_s

    @property
    def watchdog_s(self) -> float | None:
        """Seconds after which a statement's connection is dropped (None: never)."""
        return self.statement_s + self.grace_s if self.statement_s > 0 else None

    def session_settings(self) -> list[str]:
        """The PostgreSQL ``SET`` statements of a new connection."""
        return [
            f"SET statement_timeout = {int(self.statement_s * 1000)}",
            f"SET lock_timeout = {int(self.lock_s * 1000)}",
            # a transaction left open by a vanished caller must not hold its locks
            f"SET idle_in_transaction_session_timeout = {int(max(self.statement_s, 60) * 1000)}",
        ]


class Watchdog:
    """Drops the connection of a statement that outlives its deadline (see the module
    docstring). One daemon thread, started on first use, serves every engine of the
    process (:data:`WATCHDOG`); arming and disarming are O(log n) and take no database
    round trip."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Any]] = []
        self._armed: dict[int, Any] = {}
        self._ids = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.fired = 0  # connections dropped so far (for tests and logs)

    def arm(self, dbapi_conn: Any, limit_s: float) -> int:
        """Start a ``limit_s`` clock for one statement on ``dbapi_conn``; returns its
        ticket."""
        ticket = next(self._ids)
        deadline = time.monotonic() + limit_s
        with self._cond:
            self._armed[ticket] = dbapi_conn
            heapq.heappush(self._heap, (deadline, ticket, dbapi_conn))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="db-watchdog")
                self._thread.start()
            self._cond.notify()
        return ticket

    def disarm(self, ticket: int) -> None:
        """The statement of ``ticket`` finished (or failed)."""
        with self._cond:
            self._armed.pop(ticket, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)  # finished in time
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, ticket, conn = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                self._armed.pop(ticket, None)
            self.fired += 1
            drop_socket(conn)


WATCHDOG = Watchdog()


def drop_socket(dbapi_conn: Any) -> None:
    """Shut down the socket under a psycopg connection: a thread blocked reading it wakes
    with an error. Nothing happens to a connection without a socket."""
    try:
        fd = dbapi_conn.fileno()
    except Exception:  # noqa: BLE001 - closed already, or not a socket driver
        return
    try:
        dup = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()
