"""DuckDB checkpoints when writes pause, not inside an upload's commit.

DuckDB moves its write-ahead log into the database file (a checkpoint) when the log
passes ``checkpoint_threshold`` (16 MB by default), inside the commit that passed it.
Every write waits meanwhile: with 32 uploaders, once per ~300 uploads, 0.2-0.3 s were
added to every upload in flight, the slowest 1 % of a burst
(``bench/upload_concurrency.py``). A server (``moedash serve``) raises the threshold
to :data:`db.session.INLINE_CHECKPOINT` (every DuckDB engine: :func:`db.session.make_engine`)
and runs :class:`IdleCheckpointer`: a thread that checkpoints once no write has
happened for :data:`IDLE_S` and the log holds at least :data:`MIN_WAL_BYTES`. Under
writes that never pause, DuckDB's own checkpoint at the higher threshold still bounds
the log; nothing is less durable (the log is synced at every commit either way).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import sqlalchemy as sa

from db.session import Database

IDLE_S = 1.0
MIN_WAL_BYTES = 1 << 20
_TICK_S = 0.25


class IdleCheckpointer:
    """Checkpoints ``database`` (a DuckDB file at ``path``) when its writes pause (see
    the module docstring). ``checkpoints`` / ``failures`` count what happened; a
    checkpoint DuckDB refuses is tried again after the next pause (reads running
    beside it do not stop it: DuckDB checkpoints beside read transactions)."""

    def __init__(self, database: Database, path: Path, *, idle_s: float = IDLE_S) -> None:
        self._db = database
        self._wal = Path(f"{path}.wal")
        self.idle_s = idle_s
        self.checkpoints = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="duckdb-checkpoint")

    def start(self) -> IdleCheckpointer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def wal_bytes(self) -> int:
        """Size of the write-ahead log now (0 when there is none)."""
        try:
            return os.stat(self._wal).st_size
        except OSError:
            return 0

    def due(self) -> bool:
        """Whether a checkpoint is due: enough log, and no write for ``idle_s``."""
        idle = time.monotonic() - self._db.last_write >= self.idle_s
        return idle and self.wal_bytes() >= MIN_WAL_BYTES

    def checkpoint_now(self) -> bool:
        """One checkpoint, between writes (it takes the write lock); False when DuckDB
        refused it or a write held the lock."""
        lock = self._db.write_lock
        if lock is None or not lock.acquire(timeout=0.05):
            return False
        try:
            with self._db.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT")
                conn.exec_driver_sql("CHECKPOINT")
        except sa.exc.DBAPIError:
            self.failures += 1
            return False
        finally:
            lock.release()
        self.checkpoints += 1
        return True

    def _loop(self) -> None:
        while not self._stop.wait(_TICK_S):
            if self.due() and not self.checkpoint_now():
                self._stop.wait(self.idle_s)  # refused: not again at once
