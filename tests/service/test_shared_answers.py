"""Answers computed once per cell version and shared through the database: a second
replica (another DashData on the same database) reads them instead of computing, reads
exactly what the first one answers, never a stale version, and a visitor's GET never
writes one."""

from __future__ import annotations

import threading
import time
from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from db.store import Store, open_store
from service import shared_answers as shared
from service.best import best_table, cell_best
from service.config_stats import cell_config_stats
from service.frames import Cell, DashData
from service.pareto import pareto_table
from service.precompute import precomputer
from service.scope import Scope
from tests.factories import EXAMPLE
from tests.service.stores import upload_generated

CELL = Cell("deepseek_v4_pro", "GB300", "NVFP4")
OTHER = Cell("kimi_k2", "B300", "NVFP4")
SCOPE = Scope(model=CELL.model, hardware=CELL.hardware, quant=CELL.quant)


@pytest.fixture
def seeded(store: Store) -> Store:
    upload_generated(store, CELL, 1)
    upload_generated(store, CELL, 2)
    upload_generated(store, OTHER, 3)
    return store


def _answers(data: DashData) -> dict[str, Any]:
    return {
        "best": best_table(data, SCOPE),
        "best_bench_moe": best_table(data, SCOPE, "bench_moe"),
        "cell_best": cell_best(data, CELL, "dashboard"),
        "pareto": pareto_table(data, SCOPE),
        "stats": cell_config_stats(data, CELL),
    }


def _no_cell_reads(data: DashData) -> None:
    """Make the replica fail loudly if it reads a cell's rows."""

    def refuse(*_a: object, **_k: object) -> pd.DataFrame:
        raise AssertionError("read the cell's rows instead of the shared answer")

    data.cell_frame = refuse  # type: ignore[method-assign]
    data.bounded_frame = refuse  # type: ignore[method-assign]


def _equal(a: Any, b: Any) -> None:
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
        return
    if hasattr(a, "__dataclass_fields__"):
        assert type(a) is type(b)
        for name in a.__dataclass_fields__:
            _equal(getattr(a, name), getattr(b, name))
        return
    assert a == b


def test_a_second_replica_reads_what_the_first_computed(seeded: Store) -> None:
    first = DashData(seeded, version_ttl=0.0)
    with shared.writing():
        computed = _answers(first)
    kinds = sorted(k for k, _ in seeded.answers.listing())
    # the five answers, and the cell's noise model the Best tables read
    assert kinds == [
        "best",
        "best-scope",
        "best-scope",
        "config-stats",
        "noise-model",
        "pareto-table",
    ]
    assert seeded.answers.summary()[1] > 0

    second = DashData(seeded, version_ttl=0.0)
    _no_cell_reads(second)
    read = _answers(second)
    for name in computed:
        _equal(computed[name], read[name])
    assert len(read["best"].items) > 0 and len(read["pareto"].items) > 0


def test_an_upload_makes_the_stored_answer_stale_for_its_cell_only(seeded: Store) -> None:
    first = DashData(seeded, version_ttl=0.0)
    other_scope = Scope(model=OTHER.model, hardware=OTHER.hardware, quant=OTHER.quant)
    with shared.writing():
        best_table(first, SCOPE)
        other_before = best_table(first, other_scope)
    new_run = upload_generated(seeded, CELL, 4)

    second = DashData(seeded, version_ttl=0.0)
    fresh = best_table(second, SCOPE)  # computed again: the stored one is of the old version
    assert new_run in fresh.provenance["run_ids"]
    _no_cell_reads(second)
    _equal(best_table(second, other_scope), other_before)  # the other cell's is still good


def test_replicas_warming_one_answer_at_once_compute_it_once(seeded: Store, db_url: str) -> None:
    # two replicas (each its own store on the one database) warm the same answer at
    # once: on PostgreSQL one computes it under an advisory lock, the other waits and
    # reads what was stored; DuckDB is one process (no replicas): each computes
    second_store = open_store(db_url, upgrade=False)
    replicas = [DashData(seeded, version_ttl=0.0), DashData(second_store, version_ttl=0.0)]
    calls: list[str] = []
    got: dict[int, Any] = {}

    def compute() -> dict[str, int]:
        calls.append(threading.current_thread().name)
        time.sleep(1.5)  # long enough for the other replica to ask meanwhile
        return {"rows": 42}

    def warm(i: int) -> None:
        with shared.writing():
            got[i] = replicas[i].cached(("single-flight",), compute, CELL, share=True)

    try:
        threads = [threading.Thread(target=warm, args=(i,), name=f"r{i}") for i in (0, 1)]
        for t in threads:
            t.start()
            time.sleep(0.3)  # r0 takes the lock first
        for t in threads:
            t.join(30)
        assert got == {0: {"rows": 42}, 1: {"rows": 42}}
        if seeded.dialect == "postgresql":
            assert calls == ["r0"]
        else:
            assert sorted(calls) == ["r0", "r1"]
        assert [k for k, _ in seeded.answers.listing()] == ["single-flight"]
        # a visitor (not storing) never holds the lock: nobody waits on it; a writer
        # does hold it: the next one waits
        with (
            seeded.answers.computing("k", "p", "v", 5.0, hold=False) as waited,
            second_store.answers.computing("k", "p", "v", 5.0) as other_waited,
        ):
            assert (waited, other_waited) == (False, False)
            t0 = time.monotonic()
            with seeded.answers.computing("k", "p", "v", 0.6) as third_waited:
                pass
            postgres = seeded.dialect == "postgresql"
            assert third_waited is postgres and (time.monotonic() - t0 >= 0.5) is postgres
    finally:
        second_store.close()


def test_a_visitors_read_writes_nothing(seeded: Store) -> None:
    data = DashData(seeded, version_ttl=0.0)
    _answers(data)  # outside shared.writing(): a GET
    assert seeded.answers.summary() == (0, 0)


def test_an_unreadable_payload_is_recomputed(seeded: Store) -> None:
    first = DashData(seeded, version_ttl=0.0)
    with shared.writing():
        want = best_table(first, SCOPE)
    for kind in ("best-scope",):
        assert [k for k, _ in seeded.answers.listing()].count(kind) == 1
        # same key, same version, garbage payload: the replica computes instead of failing
        version = repr(first.scope_version(SCOPE.filters()))
        params = shared.digest(("best-scope", SCOPE.key(), "dashboard", "median"))
        seeded.answers.put(kind, params, version, [CELL.key], b"garbage")
    again = best_table(DashData(seeded, version_ttl=0.0), SCOPE)
    _equal(want, again)


def test_codec_round_trips_and_refuses_what_it_cannot_give_back() -> None:
    frame = pd.DataFrame(
        {
            "a": [1, 2],
            "b": [0.5, float("nan")],
            "c": pd.Categorical(["x", "y"]),
            "d": [[1, 2], []],
            "e": ["s", None],
            "t": pd.to_datetime(["2026-01-01", "2026-02-01"], utc=True),
        }
    )
    value = {"f": frame, "t": (1, "a", None, float("inf")), 3: [True, 2.5]}
    back = shared.decode(shared.encode(value))
    pd.testing.assert_frame_equal(back["f"], frame)
    assert back["t"] == (1, "a", None, float("inf")) and back[3] == [True, 2.5]
    with pytest.raises(shared.Unshareable):
        shared.encode(
            pd.DataFrame({"a": [1, None]}, dtype=object)
        )  # ints with None: would turn float
    with pytest.raises(shared.Unshareable):
        shared.encode(object())
    with pytest.raises(ValueError):
        shared.decode(b"not a payload")


def test_decode_builds_only_registered_classes() -> None:
    payload = shared.encode({"x": 1}).replace(b"MDA1", b"MDA1")
    assert shared.decode(payload) == {"x": 1}
    import json
    import struct
    import zlib

    head = zlib.compress(json.dumps({"__dc": "subprocess.Popen", "f": {"args": "true"}}).encode())
    evil = b"MDA1" + struct.pack("<I", len(head)) + head
    with pytest.raises(ValueError, match="unknown shared class"):
        shared.decode(evil)


def test_an_upload_over_http_has_its_cells_answers_computed_for_every_replica(
    client: TestClient, upload_token: str, store: Store
) -> None:
    resp = client.post(
        "/api/v1/runs",
        content=EXAMPLE.read_bytes(),
        params={"trtllm_version": "v1.3.0rc26"},
        headers={"Authorization": f"Bearer {upload_token}", "Content-Type": "application/json"},
    )
    assert resp.status_code == 201, resp.text
    data: DashData = client.app.state.data  # type: ignore[attr-defined]
    assert precomputer(data).wait(timeout=120)
    run = store.get_run(resp.json()["run_ids"][0])
    cell = Cell(run["model"], run["hardware"], run["quant"])
    kinds = {k for k, _ in _stored(store)}
    assert {"best-scope", "best", "pareto-table", "noise-model"} <= kinds

    replica = DashData(store, version_ttl=0.0)  # another process on the same database
    _no_cell_reads(replica)
    scope = Scope(model=cell.model, hardware=cell.hardware, quant=cell.quant)
    answer = client.get("/api/v1/best", params=scope.model_dump(exclude_none=True)).json()
    shared_best = best_table(replica, scope)
    assert [r["best_backend"] for r in answer["items"]] == list(shared_best.items["best_backend"])


def _stored(store: Store) -> list[tuple[str, str]]:
    return store.answers.listing()
