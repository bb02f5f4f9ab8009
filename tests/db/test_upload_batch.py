"""New uploads of a shared DuckDB transaction are written together (db.upload_batch):
the tables hold exactly what writing them one by one stores, every other member of the
batch (stored measurements, a duplicate inside the batch, a sweep twice) gets the answer
it gets alone, and a value that does not fit the combined form falls back to one by one."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from db.group_commit import GroupCommit
from db.prepared import prepare_upload
from db.store import IngestResult, Store, open_store
from ingest.demo.jsontext import dump_report
from ingest.demo.report import generate_report
from ingest.detect import parse_upload
from ingest.records import Sweep, UploadMeta
from tests.factories.batching import queued_while_writing
from tests.factories.sweeps import make_sweep

META = UploadMeta(hardware="GB300", trtllm_version="v1.3.0rc26", ci_url="https://ci/1")
# columns written at the moment of the insert: they differ between two stores
_CLOCK = {"uploaded_at", "created_at", "first_seen_at", "last_seen_at"}


def _store(tmp_path: Path, name: str) -> Store:
    return open_store(f"duckdb:///{tmp_path / name}.duckdb")


def _report(seed: int, tokens: list[int]) -> bytes:
    return dump_report(generate_report("kimi_k2", "GB300", "NVFP4", 8, tokens, seed=seed))


def _tables(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the upload tables, ordered by key, without the clock columns."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with store.engine.connect() as conn:
        for table, order in (
            ("uploads", "upload_id"),
            ("runs", "run_id"),
            ("candidates", "run_id, candidate_index"),
            ("upload_sightings", "sighting_id"),
        ):
            result = conn.execute(sa.text(f"SELECT * FROM {table} ORDER BY {order}"))
            keep = [i for i, c in enumerate(result.keys()) if c not in _CLOCK]
            out[table] = [tuple(row[i] for i in keep) for row in result]
    return out


def _answer(result: Any) -> Any:
    """What an upload's caller is told (or the error class)."""
    if not isinstance(result, IngestResult):
        return type(result).__name__
    return (
        result.upload_id,
        result.already_existed,
        result.same_measurements_other_bytes,
        tuple((r.run_id, r.sweep_key, r.n_candidates, r.created) for r in result.runs),
        result.differing_fields,
    )


def _both_ways(
    tmp_path: Path,
    first: tuple[list[Sweep], bytes],
    uploads: list[tuple[list[Sweep], bytes]],
    combined: tuple[int, ...] | None = None,
) -> tuple[list[Any], list[Any], Store, Store, GroupCommit]:
    """``first`` then ``uploads`` one by one into one store, and ``first`` alone then
    ``uploads`` queued into one shared transaction into another. ``combined``: the
    indexes in ``uploads`` of the plainly new ones (default all), which the batch writes
    before the others; the one-by-one store gets them in that order too."""
    alone, batched = _store(tmp_path, "alone"), _store(tmp_path, "batched")
    fresh = range(len(uploads)) if combined is None else combined
    order = [*fresh, *(i for i in range(len(uploads)) if i not in fresh)]
    expected = [alone.ingest(*first, META)] + [None] * len(uploads)
    for i in order:
        expected[i + 1] = alone.ingest(*uploads[i], META)
    calls = [lambda s=s, raw=raw: batched.ingest(s, raw, META) for s, raw in [first, *uploads]]
    got, group = queued_while_writing(batched, calls)
    return expected, got, alone, batched, group


def test_a_combined_batch_stores_what_one_by_one_stores(tmp_path: Path) -> None:
    raws = [_report(100 + i, [16, 64, 256]) for i in range(7)]
    uploads = [(parse_upload(raw, META, None), raw) for raw in raws]
    expected, got, alone, batched, group = _both_ways(tmp_path, uploads[0], uploads[1:])
    assert group.combined == 6 and group.solo_retries == 0
    assert [_answer(r) for r in got] == [_answer(r) for r in expected]
    tables = _tables(batched)
    assert tables == _tables(alone)
    assert len(tables["runs"]) == 7 and len(tables["candidates"]) > 7 * 10


def test_prepared_uploads_are_combined_the_same(tmp_path: Path) -> None:
    # what the parse pool hands over (Arrow rows made in another process)
    raws = [_report(200 + i, [64]) for i in range(5)]
    prepared = [prepare_upload(raw, parse_upload(raw, META, None), arrow=True) for raw in raws]
    alone, batched = _store(tmp_path, "alone"), _store(tmp_path, "batched")
    expected = [alone.ingest_prepared(p, META, uploaded_by="ci") for p in prepared]
    got, group = queued_while_writing(
        batched,
        [lambda p=p: batched.ingest_prepared(p, META, uploaded_by="ci") for p in prepared],
    )
    assert group.combined == 4
    assert [_answer(r) for r in got] == [_answer(r) for r in expected]
    assert _tables(batched) == _tables(alone)


def test_members_that_are_not_plainly_new_get_their_own_answer(tmp_path: Path) -> None:
    a, b, c, d = (make_sweep(12, seed=s) for s in (1, 2, 3, 4))
    twice = make_sweep(8, seed=5)
    uploads = [
        ([b], b"b"),
        ([a], b"a, other bytes"),  # the leader's measurements again: a sighting
        ([c], b"c"),
        ([b], b"b, other bytes"),  # sent by an earlier member of the same batch
        ([twice, twice], b"one sweep twice"),
        ([d], b"d"),
        ([a, make_sweep(6, seed=6)], b"a and a new one"),  # one stored, one new
    ]
    expected, got, alone, batched, group = _both_ways(
        tmp_path, ([a], b"a"), uploads, combined=(0, 2, 5)
    )
    assert group.solo_retries == 0
    assert group.combined == 3  # b, c and d; the others one by one after them
    assert [_answer(r) for r in got] == [_answer(r) for r in expected]
    assert _tables(batched) == _tables(alone)
    assert got[2].same_measurements_other_bytes and got[2].runs[0].run_id == got[0].runs[0].run_id
    assert [r.created for r in got[5].runs] == [True, False]


def test_a_value_that_does_not_fit_the_combined_form_is_written_one_by_one(
    tmp_path: Path,
) -> None:
    # a number where the runs table keeps text: the one-by-one insert lets DuckDB cast
    # it; the combined form does not guess, the batch goes one by one
    odd = make_sweep(5, seed=7, device_name=80)
    uploads = [
        ([make_sweep(5, seed=8)], b"plain"),
        ([odd], b"odd"),
        ([make_sweep(5, seed=9)], b"p2"),
    ]
    expected, got, alone, batched, group = _both_ways(
        tmp_path, ([make_sweep(5, seed=10)], b"first"), uploads, combined=()
    )
    assert group.combined == 0 and group.solo_retries == 0
    assert [_answer(r) for r in got] == [_answer(r) for r in expected]
    assert _tables(batched) == _tables(alone)


@pytest.mark.parametrize("with_items", [True, False])
def test_combine_sees_each_members_item_and_the_rest_run_after_it(with_items: bool) -> None:
    order: list[str] = []

    class Txn:
        def __enter__(self) -> Any:
            return "conn"

        def __exit__(self, *exc: object) -> None:
            return None

    def combine(conn: Any, items: list[Any]) -> list[Any]:
        order.append(f"combine {items}")
        return [f"combined {i}" if i % 2 == 0 else None for i in items]

    group = GroupCommit(Txn, combine=combine)
    gate, lead_in = threading.Event(), threading.Event()
    out: dict[int, Any] = {}

    def fn(i: int) -> Any:
        def write(_conn: Any) -> str:
            if i == 0:
                lead_in.set()
                gate.wait(30)
            order.append(f"fn {i}")
            return f"alone {i}"

        return write

    def work(i: int) -> None:
        out[i] = group.run(fn(i), i if with_items or i != 3 else None)

    threads = [threading.Thread(target=work, args=(0,))]
    threads[0].start()
    assert lead_in.wait(30)  # member 0 leads alone and holds its transaction open
    threads += [threading.Thread(target=work, args=(i,)) for i in range(1, 5)]
    for t in threads[1:]:
        t.start()
    deadline = time.monotonic() + 30
    while len(group._queue) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(group._queue) == 4
    gate.set()
    for t in threads:
        t.join(30)
    if with_items:  # members 1-4 shared a transaction: 2 and 4 combined, 1 and 3 after
        assert order == ["fn 0", "combine [1, 2, 3, 4]", "fn 1", "fn 3"]
        assert out == {0: "alone 0", 1: "alone 1", 2: "combined 2", 3: "alone 3", 4: "combined 4"}
        assert group.combined == 2
    else:  # a member without an item: nothing is combined
        assert order == ["fn 0", "fn 1", "fn 2", "fn 3", "fn 4"]
        assert group.combined == 0
