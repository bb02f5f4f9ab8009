"""POST /api/v1/runs through the parse pool (ingest.parse_pool, db.prepared): real
worker processes, real HTTP through the ASGI app, real databases. The pool path stores
what the in-process path stores; a refused report answers the same 4xx body; a worker
that dies or hangs costs no upload; a big body parses in the server while the pool
stops its workers."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from db.store import Store, open_store
from ingest.parse_pool import ParsePool
from moedash.app import PARSE_TASK, create_app
from moedash.settings import Settings
from tests.factories import EXAMPLE
from tests.factories import upload_reports as R
from tests.factories.upload_reports import post, stored_run


@pytest.fixture(scope="module")
def module_pool() -> Iterator[ParsePool]:
    """One warm worker for the module (starting one costs seconds on a loaded machine);
    tests read its counters as differences, and a test that kills the worker leaves a
    warm replacement behind."""
    p = ParsePool(PARSE_TASK, 1, timeout_s=20)
    assert p.warm(120)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def pool(module_pool: ParsePool) -> ParsePool:
    assert module_pool.warm(120)  # ready again after an earlier test replaced its worker
    return module_pool


def _app(settings: Settings, store: Store, pool: ParsePool | None) -> TestClient:
    return TestClient(create_app(settings, store=store, parse_pool=pool))


def test_pool_path_stores_exactly_what_the_in_process_path_stores(
    tmp_path: Path, pool: ParsePool
) -> None:
    bodies = [EXAMPLE.read_bytes(), R.slower(1.5), R.with_extra_key()]
    versions = ["v1.3.0rc26", "v1.3.0rc27", "v1.3.0rc28"]
    stored: dict[str, list[Any]] = {}
    for name, parse_pool in (("pool", pool), ("in_process", None)):
        url = f"duckdb:///{tmp_path / (name + '.duckdb')}"
        store = open_store(url)
        try:
            token = store.tokens.create_token("ci", ["upload"])[1]
            settings = Settings(database_url=url, enable_dashboard=False)
            before = pool.completed
            with _app(settings, store, parse_pool) as client:
                answers = [
                    post(client, token, body, trtllm_version=v)
                    for body, v in zip(bodies, versions, strict=True)
                ]
            assert [a.status_code for a in answers] == [201, 201, 201], answers[0].text
            if parse_pool is not None:
                assert pool.completed - before == 3  # every upload went through a worker
            bodies_out = [a.json() for a in answers]
            stored[name] = [stored_run(store, b["run_ids"][0]) for b in bodies_out] + [
                [{k: v for k, v in b.items() if k != "runs"} for b in bodies_out]
            ]
        finally:
            store.close()
    for (run_a, cands_a, raw_a), (run_b, cands_b, raw_b) in zip(
        stored["pool"][:3], stored["in_process"][:3], strict=True
    ):
        assert run_a == run_b
        pd.testing.assert_frame_equal(cands_a, cands_b)
        assert raw_a == raw_b
    assert stored["pool"][3] == stored["in_process"][3]  # the same answers, ids included


@pytest.mark.parametrize(
    "body",
    [
        b'{"benchmark": "bench_moe", "environment": {"world_size": 8}}',
        b'{"benchmark": "other"}',
        b'{"results": [], "schema_version": 2}',
        b"\x89PNG\r\n",
        b'{"benchmark": "bench_moe", "results": [1,',
    ],
)
def test_a_refused_report_answers_the_same_body_from_the_pool(
    settings: Settings, store: Store, upload_token: str, pool: ParsePool, body: bytes
) -> None:
    with _app(settings, store, None) as client:
        direct = post(client, upload_token, body, hardware="GB300")
    before = pool.completed
    with _app(settings, store, pool) as client:
        pooled = post(client, upload_token, body, hardware="GB300")
    assert pool.completed == before + 1
    assert 400 <= direct.status_code < 500
    assert (pooled.status_code, pooled.json()) == (direct.status_code, direct.json())


def test_pool_path_on_every_database(
    settings: Settings, store: Store, upload_token: str, pool: ParsePool
) -> None:
    before = pool.completed
    with _app(settings, store, pool) as client:
        # the health check says whether the workers are up (a warm-up to wait for)
        assert client.get("/api/v1/health").json()["parse_pool"] == {"size": 1, "ready": 1}
        resp = post(client, upload_token, EXAMPLE.read_bytes())
        again = post(client, upload_token, EXAMPLE.read_bytes())
    assert resp.status_code == 201, resp.text
    assert again.status_code == 200 and again.json()["already_existed"] is True
    run_id = resp.json()["run_ids"][0]
    assert pool.completed >= before + 1
    assert store.raw_upload(run_id).content == EXAMPLE.read_bytes()
    assert store.list_candidates(run_id).total == resp.json()["n_candidates"]


def test_a_killed_worker_costs_no_upload(
    settings: Settings, store: Store, upload_token: str, pool: ParsePool
) -> None:
    (pid,) = pool.pids()
    replaced = pool.replaced
    os.kill(pid, signal.SIGKILL)
    with _app(settings, store, pool) as client:
        resp = post(client, upload_token, EXAMPLE.read_bytes())
        assert resp.status_code == 201, resp.text  # parsed in the server instead
        assert pool.replaced == replaced + 1 and pid not in pool.pids()
        assert pool.warm(120)  # a new worker took its place
        before = pool.completed
        second = post(client, upload_token, R.slower(2.0), trtllm_version="v1.3.0rc27")
    assert second.status_code == 201 and pool.completed == before + 1
    assert store.table_counts()["runs"] == 2


def test_a_hung_worker_is_replaced_and_the_uploadstored_run(
    settings: Settings, store: Store, upload_token: str
) -> None:
    pool = ParsePool(PARSE_TASK, 1, timeout_s=1.5)
    try:
        assert pool.warm(120)
        (pid,) = pool.pids()
        os.kill(pid, signal.SIGSTOP)
        with _app(settings, store, pool) as client:
            resp = post(client, upload_token, EXAMPLE.read_bytes())
        assert resp.status_code == 201, resp.text
        assert pool.replaced == 1 and pid not in pool.pids()
        assert store.table_counts()["runs"] == 1
    finally:
        pool.close()


def test_a_body_above_the_threshold_parses_in_the_server(
    settings: Settings, store: Store, upload_token: str
) -> None:
    body = EXAMPLE.read_bytes()
    pool = ParsePool(PARSE_TASK, 1, max_bytes=len(body) - 1)
    try:
        assert pool.warm(120)
        with _app(settings, store, pool) as client:
            resp = post(client, upload_token, body)
        assert resp.status_code == 201, resp.text
        assert pool.completed == 0  # not sent to a worker
        assert pool.pids() == []  # and the idle worker stopped for the big parse
    finally:
        pool.close()
