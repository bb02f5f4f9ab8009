"""db.checkpoint on a real DuckDB file: the write-ahead log is folded into the database
once writes pause (not inside a commit), never while a write runs, beside an open read;
what was written reads back the same after a restart."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import sqlalchemy as sa

from db.checkpoint import MIN_WAL_BYTES, IdleCheckpointer
from db.store import Store, open_store
from ingest.records import UploadMeta
from tests.factories.sweeps import make_sweep

_SEEDS = itertools.count()


def _fill_wal(store: Store, checkpointer: IdleCheckpointer) -> None:
    """Distinct uploads until the write-ahead log holds MIN_WAL_BYTES."""
    while checkpointer.wal_bytes() < MIN_WAL_BYTES:
        i = next(_SEEDS)
        store.ingest([make_sweep(400, seed=i)], f"wal-{i}".encode(), UploadMeta())


def _wait(predicate: object, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_the_log_is_checkpointed_once_writes_pause(tmp_path: Path) -> None:
    path = tmp_path / "idle.duckdb"
    store = open_store(f"duckdb:///{path}")
    checkpointer = store.checkpoint_when_idle()
    assert checkpointer is not None and store.checkpoint_when_idle() is checkpointer
    _fill_wal(store, checkpointer)  # far below DuckDB's own threshold
    runs = store.table_counts()["runs"]
    assert _wait(lambda: checkpointer.checkpoints >= 1)
    assert checkpointer.wal_bytes() < MIN_WAL_BYTES
    store.close()
    again = open_store(f"duckdb:///{path}")
    assert again.table_counts()["runs"] == runs
    again.close()


def test_no_checkpoint_while_a_write_runs_and_one_beside_a_read(tmp_path: Path) -> None:
    path = tmp_path / "busy.duckdb"
    store = open_store(f"duckdb:///{path}")
    db = store._db  # type: ignore[attr-defined]
    checkpointer = IdleCheckpointer(db, path, idle_s=0.5)
    _fill_wal(store, checkpointer)
    assert not checkpointer.due()  # a write just ended
    with db.write_lock:  # a write in progress: the checkpoint does not wait for it
        assert not checkpointer.checkpoint_now()
    assert _wait(checkpointer.due)
    with store.engine.connect() as reader:  # a read open (a page being drawn) meanwhile
        before = reader.execute(sa.text("SELECT count(*) FROM candidates")).scalar_one()
        assert checkpointer.checkpoint_now() and checkpointer.checkpoints == 1
        after = reader.execute(sa.text("SELECT count(*) FROM candidates")).scalar_one()
        assert before == after > 0
    assert checkpointer.wal_bytes() < MIN_WAL_BYTES and checkpointer.failures == 0
    store.close()


def test_postgresql_has_no_idle_checkpointer(store: Store) -> None:
    if store.dialect == "duckdb":
        assert store.checkpoint_when_idle() is not None
    else:
        assert store.checkpoint_when_idle() is None
