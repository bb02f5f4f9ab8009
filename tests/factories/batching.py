"""Driving DuckDB's group commit (db.group_commit) from tests: uploads queued while
another one holds the write lock, so they share one transaction."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from db.group_commit import GroupCommit
from db.store import IngestResult, Store


def queued_while_writing(
    store: Store, uploads: list[Callable[[], IngestResult]]
) -> tuple[list[Any], GroupCommit]:
    """Run ``uploads`` in threads while the write lock is held, so that all of them
    queue up before any writes: the first leads a transaction of its own, the others
    share the next one, queued in their order. Returns (result or exception per upload,
    the group)."""
    db: Any = store._db
    out: list[Any] = [None] * len(uploads)

    def call(i: int) -> None:
        try:
            out[i] = uploads[i]()
        except Exception as exc:  # asserted by the caller
            out[i] = exc

    def until(ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 60
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(uploads))]
    with db._write_lock:
        threads[0].start()  # the first upload leads: it takes its job and waits for the lock
        until(lambda: "ingest" in db._groups and db._groups["ingest"]._leading)
        group: GroupCommit = db._groups["ingest"]
        until(lambda: not group._queue)
        for queued, t in enumerate(threads[1:], start=1):
            t.start()  # the rest queue meanwhile, one after another: in their order
            until(lambda n=queued: len(group._queue) == n)
    for t in threads:
        t.join(60)
    return out, group
