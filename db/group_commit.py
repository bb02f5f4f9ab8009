"""Group commit: concurrent write transactions of one kind share a transaction.

DuckDB serialises writers anyway (:class:`db.session.Database` holds a lock around every
write), and a commit costs as much as writing a small upload (~8 ms: the WAL is synced),
so 32 uploaders spend most of the write lock waiting for commits one after another.
Here the callers queue their write functions; the first to arrive becomes the *leader*
and runs up to ``max_batch`` queued functions in one transaction, answers each waiter,
and hands the lead to the next one in the queue (so nobody writes for others forever).

Each function stays all-or-nothing: if any function of a batch raises, the transaction
rolls back (nothing of any member is stored, also if the process dies midway) and every
member runs again alone, so only the failing one fails and with its own error. The
functions must therefore be safe to run twice (read, then write, in the transaction they
are given): :func:`db.uploads.insert_upload` is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Generic, TypeVar

import sqlalchemy as sa

T = TypeVar("T")


class _Job(Generic[T]):
    """One queued write function (and what it writes, for ``combine``) and, once it
    ran, its result or error."""

    def __init__(self, fn: Callable[[sa.Connection], T], item: Any = None) -> None:
        self.fn = fn
        self.item = item
        self.ready = threading.Event()  # set when done, or when promoted to leader
        self.done = False
        self.result: T | None = None
        self.error: BaseException | None = None


class GroupCommit:
    """Runs write functions several per transaction (see the module docstring).

    ``begin`` opens one write transaction (commit on success, rollback on error), e.g.
    ``lambda: database.write("ingest")``; ``shared(conn)`` is entered around the
    functions of a shared transaction, inside it (its exit may still write; an error
    there fails the batch like a member's). ``combine(conn, items)``, when given, is
    called first in a shared transaction with the ``item`` of each member (all members
    given one) and writes those it can together: it returns a result per member, or
    None for a member whose ``fn`` is then run as usual (after it, so it sees what was
    combined). ``batches``, ``solo_retries`` and ``combined`` count what happened
    (observability and tests).
    """

    def __init__(
        self,
        begin: Callable[[], AbstractContextManager[sa.Connection]],
        max_batch: int = 16,
        shared: Callable[[sa.Connection], AbstractContextManager[None]] | None = None,
        combine: Callable[[sa.Connection, list[Any]], list[Any]] | None = None,
    ) -> None:
        self._begin = begin
        # wraps the functions of a shared transaction (e.g. dialects.deferred_inserts)
        self._shared = shared or (lambda _conn: nullcontext())
        self._combine = combine
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Job[Any]] = []
        self._leading = False
        self.batches = 0
        self.solo_retries = 0
        self.combined = 0

    def run(self, fn: Callable[[sa.Connection], T], item: Any = None) -> T:
        """Run ``fn(conn)`` inside a write transaction, possibly shared with other
        callers (``item``: what it writes, for ``combine``); returns its result or
        raises its own error."""
        job: _Job[T] = _Job(fn, item)
        with self._lock:
            self._queue.append(job)
            lead = not self._leading
            self._leading = True
        if not lead:
            job.ready.wait()
        if not job.done:  # first to arrive, or promoted by the previous leader
            self._lead()
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def _lead(self) -> None:
        with self._lock:
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
        try:
            self._write(batch)
        finally:
            for job in batch:
                if not job.done:  # the leader was interrupted (BaseException)
                    job.error = job.error or RuntimeError("the grouped write was interrupted")
                    job.done = True
                job.ready.set()
            with self._lock:
                if self._queue:
                    self._queue[0].ready.set()  # it leads the next batch itself
                else:
                    self._leading = False

    def _write(self, batch: list[_Job[Any]]) -> None:
        self.batches += 1
        if len(batch) > 1:
            try:
                with self._begin() as conn, self._shared(conn):
                    combined = self._combined(conn, batch)
                    results = [
                        job.fn(conn) if r is None else r
                        for job, r in zip(batch, combined, strict=True)
                    ]
            except Exception:  # noqa: BLE001 - rolled back: each member alone, below
                self.solo_retries += len(batch)
            else:
                for job, result in zip(batch, results, strict=True):
                    job.result, job.done = result, True
                return
        for job in batch:
            try:
                with self._begin() as conn:
                    job.result = job.fn(conn)
            except Exception as exc:  # noqa: BLE001 - handed to its own caller
                job.error = exc
            job.done = True

    def _combined(self, conn: sa.Connection, batch: list[_Job[Any]]) -> list[Any]:
        """``combine``'s result per member of a shared transaction (None: not combined)."""
        if self._combine is None or any(job.item is None for job in batch):
            return [None] * len(batch)
        results = self._combine(conn, [job.item for job in batch])
        self.combined += sum(r is not None for r in results)
        return results
