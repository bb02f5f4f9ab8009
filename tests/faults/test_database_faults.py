"""Database faults, bounded: a real `moedash serve` on a private PostgreSQL cluster
(tests/factories/pg_cluster.py) that the test freezes (SIGSTOP), stops, and blocks with a
lock. Every request answers 503 with Retry-After, in the JSON envelope, naming no host or
port; an upload whose body has arrived is never blamed on the client (408); the server
answers again once the database is back.

Small timeouts keep it short (statement 3 s, connect 2 s, lock 2 s, pool 3 s). The HTTP
client's own timeout (60 s) only detects a hang: without the bounds a frozen database
keeps every request waiting as long as it stays frozen."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from db.store import open_store
from ingest import lenient_json
from tests.factories import EXAMPLE
from tests.factories.pg_cluster import Cluster, private_cluster
from tests.factories.servers import running_server

pytestmark = pytest.mark.faults

ENV = {
    "MOEDASH_DB_STATEMENT_TIMEOUT_S": "3",
    "MOEDASH_DB_CONNECT_TIMEOUT_S": "2",
    "MOEDASH_DB_LOCK_TIMEOUT_S": "2",
    "MOEDASH_DB_POOL_TIMEOUT_S": "3",
    "MOEDASH_WARM_CACHE": "false",
    "MOEDASH_ENABLE_DASHBOARD": "false",
    "MOEDASH_PARSE_WORKERS": "0",
    # a short grace and a high minimum body pace (loopback is fast): a pace clock that
    # counted the server's own wait on the database would cut a waiting upload with 408
    "MOEDASH_BODY_GRACE_S": "0.5",
    "MOEDASH_BODY_MIN_RATE": str(1024 * 1024),
}
HANG = 60.0  # an answer later than this is a hang, not a bounded wait


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with private_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def token(cluster: Cluster) -> str:
    store = open_store(cluster.url)
    try:
        return store.tokens.create_token("ci", ["upload"])[1]
    finally:
        store.close()


@pytest.fixture(scope="module")
def server(cluster: Cluster, token: str) -> Iterator[str]:
    with running_server(cluster.url, env=ENV) as base:
        yield base


def assert_outage(resp: httpx.Response, cluster: Cluster) -> None:
    assert resp.status_code == 503, resp.text
    assert int(resp.headers["retry-after"]) >= 1
    item = resp.json()["detail"][0]
    assert item["type"] == "store_error"
    assert "127.0.0.1" not in resp.text and str(cluster.port) not in resp.text, resp.text


def wait_recovered(base: str) -> None:
    """Health answers 200 again (a few requests may still meet dropped connections)."""
    for _ in range(40):
        try:
            if httpx.get(f"{base}/api/v1/health", timeout=HANG).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("the server did not recover after the database came back")


def upload(base: str, token: str) -> httpx.Response:
    return httpx.post(
        f"{base}/api/v1/runs",
        content=EXAMPLE.read_bytes(),
        params={"trtllm_version": "v1.3.0rc26", "hardware": "GB300"},
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=HANG,
    )


def test_frozen_database_answers_503_not_a_hang(server: str, cluster: Cluster, token: str) -> None:
    assert httpx.get(f"{server}/api/v1/runs", timeout=HANG).status_code == 200
    cluster.freeze()
    try:
        assert_outage(httpx.get(f"{server}/api/v1/runs", timeout=HANG), cluster)
        assert_outage(httpx.get(f"{server}/api/v1/health", timeout=HANG), cluster)
        # the whole body arrives at once; the token check then waits on the database:
        # that wait is the server's, so 503 (retried by the CLI), never 408
        assert_outage(upload(server, token), cluster)
    finally:
        cluster.thaw()
    wait_recovered(server)
    first = upload(server, token)
    assert first.status_code in (200, 201), first.text


def test_stopped_database_answers_503_and_recovers(server: str, cluster: Cluster) -> None:
    cluster.stop()
    try:
        assert_outage(httpx.get(f"{server}/api/v1/runs", timeout=HANG), cluster)
        assert_outage(httpx.get(f"{server}/api/v1/coverage", timeout=HANG), cluster)
    finally:
        cluster.start()
    wait_recovered(server)
    assert httpx.get(f"{server}/api/v1/runs", timeout=HANG).status_code == 200


def test_lock_wait_is_bounded(server: str, cluster: Cluster) -> None:
    engine = sa.create_engine(cluster.url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
            resp = httpx.get(f"{server}/api/v1/runs", timeout=HANG)
        assert_outage(resp, cluster)
        assert "timeout" in resp.json()["detail"][0]["msg"]
    finally:
        engine.dispose()
    assert httpx.get(f"{server}/api/v1/runs", timeout=HANG).status_code == 200


def test_upload_waiting_on_a_slow_database_is_not_cut_as_a_slow_body(
    server: str, cluster: Cluster, token: str
) -> None:
    # a report of several MiB (many body chunks), sent at once while the database is
    # frozen for about a second: the token check waits, then the body is read from the
    # socket where it has been waiting all along
    doc = lenient_json.loads(EXAMPLE.read_text(encoding="utf-8"))
    doc["notes_padding"] = "x" * (4 * 1024 * 1024)
    body = lenient_json.dumps(doc).encode()
    cluster.freeze()
    thaw = threading.Timer(1.0, cluster.thaw)
    thaw.start()
    try:
        resp = httpx.post(
            f"{server}/api/v1/runs",
            content=body,
            params={"trtllm_version": "v1.3.0rc27", "hardware": "GB300"},
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            timeout=HANG,
        )
    finally:
        thaw.join()
    # stored (the database answered in time) or 503 (it did not): never 408
    assert resp.status_code in (200, 201, 503), resp.text
    assert resp.status_code != 408
