"""Group commit of concurrent uploads on DuckDB (db.group_commit): uploads queued while
another writes share one transaction, each stays all-or-nothing, a failing one fails
alone, identical bytes are still stored once, and a process killed midway through a
shared transaction leaves nothing of it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from db.errors import StoreError
from db.group_commit import GroupCommit
from db.store import IngestResult, Store, open_store
from ingest.records import Sweep, UploadMeta
from tests.factories.batching import queued_while_writing
from tests.factories.servers import REPO
from tests.factories.sweeps import make_sweep

META = UploadMeta(hardware="GB300")


@pytest.fixture
def duck(tmp_path: Path) -> Store:
    return open_store(f"duckdb:///{tmp_path / 'batch.duckdb'}")


def ingest(store: Store, sweeps: list[Sweep], raw: bytes) -> Callable[[], IngestResult]:
    return lambda: store.ingest(sweeps, raw, META)


def test_queued_uploads_share_one_transaction_and_all_land(duck: Store) -> None:
    sweeps = [make_sweep(30, seed=i) for i in range(8)]
    results, group = queued_while_writing(
        duck, [ingest(duck, [s], f"upload-{i}".encode()) for i, s in enumerate(sweeps)]
    )
    assert all(isinstance(r, IngestResult) and not r.already_existed for r in results)
    # the leader's own upload, then the seven that queued meanwhile in one transaction,
    # written together (db.upload_batch)
    assert group.batches == 2 and group.solo_retries == 0 and group.combined == 7
    assert duck.table_counts()["runs"] == 8
    assert duck.table_counts()["candidates"] == 8 * 30
    for sweep, result in zip(sweeps, results, strict=True):
        stored = duck.candidate_frame(run_ids=[result.runs[0].run_id])
        np.testing.assert_array_equal(  # NaN (failed rows) equal to NaN here
            stored[C.SCORE_MS].to_numpy(float), sweep.candidates[C.SCORE_MS].to_numpy(float)
        )


def test_a_failing_upload_in_a_batch_fails_alone(duck: Store) -> None:
    bad = make_sweep(10, seed=99)
    bad.candidates.loc[3, C.CANDIDATE_INDEX] = 2  # duplicate primary key inside the run
    uploads = [ingest(duck, [make_sweep(10, seed=i)], f"good-{i}".encode()) for i in range(5)]
    uploads.insert(3, ingest(duck, [bad], b"bad"))  # queued with good-1, -2, -3, -4
    results, group = queued_while_writing(duck, uploads)
    assert isinstance(results[3], StoreError)
    good = [r for i, r in enumerate(results) if i != 3]
    assert all(isinstance(r, IngestResult) and not r.already_existed for r in good)
    assert group.solo_retries == 5  # the shared transaction of 5 rolled back, then alone
    counts = duck.table_counts()
    assert counts["uploads"] == 5 and counts["runs"] == 5 and counts["candidates"] == 50


def test_identical_bytes_in_one_batch_are_one_run(duck: Store) -> None:
    sweep = make_sweep(40, seed=5)
    results, _group = queued_while_writing(
        duck, [ingest(duck, [sweep], b"the same bytes") for _ in range(6)]
    )
    assert all(isinstance(r, IngestResult) for r in results)
    assert len({r.runs[0].run_id for r in results}) == 1
    assert sum(not r.already_existed for r in results) == 1
    assert duck.table_counts()["runs"] == 1
    assert duck.table_counts()["candidates"] == 40


def test_same_measurements_in_other_bytes_in_one_batch_are_one_run(duck: Store) -> None:
    sweep = make_sweep(25, seed=6)
    results, _group = queued_while_writing(
        duck, [ingest(duck, [sweep], f"bytes-{i}".encode()) for i in range(4)]
    )
    assert all(isinstance(r, IngestResult) for r in results)
    assert len({r.runs[0].run_id for r in results}) == 1
    assert sum(r.runs[0].created for r in results) == 1
    assert duck.table_counts()["runs"] == 1


def test_run_returns_each_callers_own_result_and_error() -> None:
    calls: list[int] = []
    lock = threading.Lock()

    class Txn:
        def __enter__(self) -> Any:
            return None

        def __exit__(self, *exc: object) -> None:
            return None

    group = GroupCommit(Txn)
    out: dict[int, Any] = {}

    def work(i: int) -> None:
        def fn(_conn: Any) -> int:
            with lock:
                calls.append(i)
            if i == 7:
                raise ValueError("seven")
            return i * 10

        try:
            out[i] = group.run(fn)
        except ValueError as exc:
            out[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert {i: v for i, v in out.items() if i != 7} == {i: i * 10 for i in range(20) if i != 7}
    assert isinstance(out[7], ValueError)
    assert not group._leading and not group._queue


_BATCH_WRITER = """
import sys, threading
from db.store import open_store
from tests.factories.sweeps import make_sweep
from ingest.records import UploadMeta
store = open_store(sys.argv[1])
sweeps = [make_sweep(int(sys.argv[2]), seed=i) for i in range(6)]
print("ready", flush=True)
threads = [
    threading.Thread(target=store.ingest, args=([s], f"{sys.argv[3]}-{i}".encode(), UploadMeta()))
    for i, s in enumerate(sweeps)
]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("done", flush=True)
"""


def test_killed_during_shared_transactions_leaves_only_whole_uploads(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 'killed.duckdb'}"
    open_store(url).close()
    script = tmp_path / "writer.py"
    script.write_text(_BATCH_WRITER)
    rows = 60000
    for attempt, delay in enumerate((0.8, 0.4, 0.2, 0.1, 0.0)):
        proc = subprocess.Popen(
            [sys.executable, str(script), url, str(rows), f"kill-{attempt}"],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        try:
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(delay)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        finished = "done" in proc.stdout.read()
        proc.stdout.close()
        store = open_store(url)
        counts = store.table_counts()
        runs = store.list_runs(limit=1000).items
        store.close()
        # whatever was committed is whole: every run has all its candidates
        assert counts["candidates"] == rows * counts["runs"]
        assert counts["uploads"] == counts["runs"]
        assert runs["n_candidates"].eq(rows).all()
        if not finished:
            return
    pytest.fail("the writer always finished before the kill; could not test a midway kill")


def _plain(frame: pd.DataFrame) -> list[list[Any]]:
    """Rows as lists of plain values, every kind of missing value as None."""
    cols = list(C.CANDIDATE_COLUMNS)
    out = frame[cols].astype(object).where(frame[cols].notna(), None)
    return [
        [None if v is None else (v.item() if hasattr(v, "item") else v) for v in row]
        for row in out.itertuples(index=False)
    ]


def test_a_shared_transaction_writes_every_candidate_exactly(duck: Store) -> None:
    # one insert for the candidates of the whole batch (db.dialects.deferred_inserts):
    # frames whose columns convert to different Arrow types (a text column with no
    # value at all next to one with values; other lengths) still land row for row
    sweeps = [make_sweep(n, seed=i) for i, n in enumerate((5, 30, 1, 12, 30))]
    sweeps[3].candidates[C.SKIP_REASON] = "odd ' text \" with quotes"
    results, group = queued_while_writing(
        duck, [ingest(duck, [s], f"mixed-{i}".encode()) for i, s in enumerate(sweeps)]
    )
    assert all(isinstance(r, IngestResult) for r in results)
    assert group.solo_retries == 0
    assert duck.table_counts()["candidates"] == 5 + 30 + 1 + 12 + 30
    for sweep, result in zip(sweeps, results, strict=True):
        stored = duck.candidate_frame(run_ids=[result.runs[0].run_id])
        assert _plain(stored) == _plain(sweep.candidates)
    # nothing is held back any more: a later upload alone is written at once
    alone = duck.ingest([make_sweep(3, seed=50)], b"alone", META)
    assert len(duck.candidate_frame(run_ids=[alone.runs[0].run_id])) == 3
