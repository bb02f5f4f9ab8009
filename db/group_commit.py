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
    """One queued write function and, once it ran, its result or error."""

    def __init__(self, fn: Callable[[sa.Connection], T]) -> None:
        self.fn = fn
        self.ready = threading.Event()  # set when done, or when promoted to leader
        self.done = False
        self.result: T | None = None
        self.error: BaseException | None = None


class GroupCommit:
    """Runs write functions several per transaction (see the module docstring).

    ``begin`` opens one write transaction (commit on success, rollback on error), e.g.
    ``lambda: database.write("ingest")``; ``shared(conn)`` is entered around the
    functions of a shared transaction, inside it (its exit may still write; an error
    there fails the batch like a member's). ``batches`` and ``solo_retries`` count what
    happened (observability and tests).
    """

    def __init__(
        self,
        begin: Callable[[], AbstractContextManager[sa.Connection]],
        max_batch: int = 16,
        shared: Callable[[sa.Connection], AbstractContextManager[None]] | None = None,
    ) -> None:
        self._begin = begin
        # wraps the functions of a shared transaction (e.g. dialects.deferred_inserts)
        self._shared = shared or (lambda _conn: nullcontext())
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Job[Any]] = []
        self._leading = False
        self.batches = 0
        self.solo_retries = 0

    def run(self, fn: Callable[[sa.Connection], T]) -> T:
        """Run ``fn(conn)`` inside a write transaction, possibly shared with other
        callers; returns its result or raises its own error."""
        job: _Job[T] = _Job(fn)
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
                    results = [job.fn(conn) for job in batch]
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
