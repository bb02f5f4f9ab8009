"""The one error envelope over real HTTP: database outages (503), HTTP errors, request
validation echoing NaN / Infinity / bytes, and unexpected exceptions (500)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from db.store import Store, open_store
from ingest.records import UploadMeta
from moedash.app import create_app
from moedash.settings import Settings
from tests.db.outage import Outage, outage_database
from tests.factories.sweeps import make_sweep

READS = (
    "/api/v1/health",
    "/api/v1/runs",
    "/api/v1/runs/1",
    "/api/v1/runs/1/candidates",
    "/api/v1/pareto",
    "/api/v1/best",
    "/api/v1/coverage",
    "/api/v1/crossval/workloads",
)


def strict_json(text: str) -> Any:
    """Parse as strict JSON: NaN / Infinity literals are an error."""

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def assert_envelope(resp: Any, status: int, kind: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body = strict_json(resp.text)
    assert set(body) == {"detail"} and len(body["detail"]) >= 1
    for item in body["detail"]:
        assert {"loc", "msg", "type"} <= set(item) and isinstance(item["loc"], list)
    assert body["detail"][0]["type"] == kind
    first: dict[str, Any] = body["detail"][0]
    return first


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def outage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Outage]:
    with outage_database(str(request.param), tmp_path) as o:
        yield o


def test_reads_during_a_database_outage_answer_json_503(outage: Outage) -> None:
    store = open_store(outage.url)
    try:
        store.ingest([make_sweep(8)], b"seed", UploadMeta(hardware="GB300"))
        settings = Settings(database_url=outage.url, enable_dashboard=False)
        with TestClient(create_app(settings, store=store)) as client:
            assert client.get("/api/v1/runs/1").status_code == 200
            outage.cut(store)
            for path in READS:
                item = assert_envelope(client.get(path), 503, "store_error")
                assert item["loc"] == [] and " failed: " in item["msg"], (path, item)
                assert "Traceback" not in item["msg"] and "SELECT" not in item["msg"]
    finally:
        store.close()


def test_a_write_during_an_outage_answers_json_503(outage: Outage) -> None:
    store = open_store(outage.url)
    try:
        secret = store.tokens.create_token("ci", ["upload"])[1]
        settings = Settings(database_url=outage.url, enable_dashboard=False)
        with TestClient(create_app(settings, store=store)) as client:
            outage.cut(store)
            resp = client.post(
                "/api/v1/crossval/outcomes",
                json=[
                    {
                        "workload_id": "p:decode",
                        "tps_per_user_deployed": 1.0,
                        "tps_per_user_candidate": 2.0,
                    }
                ],
                headers={"Authorization": f"Bearer {secret}"},
            )
            # the token check is the first read, and it fails the same way
            assert_envelope(resp, 503, "store_error")
    finally:
        store.close()


def test_validation_names_nan_and_infinity_fields_in_strict_json(
    client: TestClient, upload_token: str
) -> None:
    resp = client.post(
        "/api/v1/crossval/outcomes",
        content=b'[{"workload_id": "w", "tps_per_user_deployed": NaN,'
        b' "tps_per_user_candidate": -Infinity}]',
        headers={"Authorization": f"Bearer {upload_token}", "content-type": "application/json"},
    )
    assert_envelope(resp, 422, "finite_number")
    items = {tuple(i["loc"]): i for i in strict_json(resp.text)["detail"]}
    assert set(items) == {
        ("body", 0, "tps_per_user_deployed"),
        ("body", 0, "tps_per_user_candidate"),
    }
    assert all("input" not in item for item in items.values())  # the value is not echoed


def test_validation_does_not_echo_undecodable_bytes(client: TestClient, upload_token: str) -> None:
    resp = client.post(
        "/api/v1/crossval/outcomes",
        content=b"\xff\xfe\x00 not json " + b"x" * 5000,
        headers={
            "Authorization": f"Bearer {upload_token}",
            "content-type": "application/octet-stream",
        },
    )
    item = assert_envelope(resp, 422, "list_type")
    assert item["loc"] == ["body"]
    assert "input" not in item and "not json" not in resp.text  # nothing sent comes back
    assert len(resp.content) < 500


def test_query_validation_keeps_the_field_path(client: TestClient) -> None:
    item = assert_envelope(client.get("/api/v1/runs?limit=0"), 422, "greater_than_equal")
    assert item["loc"] == ["query", "limit"] and item["ctx"] == {"ge": 1}
    assert "input" not in item


def test_http_errors_use_the_envelope(client: TestClient, store: Store) -> None:
    item = assert_envelope(client.get("/api/v1/no-such-thing"), 404, "not_found")
    assert item == {"loc": [], "msg": "Not Found", "type": "not_found"}
    resp = client.delete("/api/v1/coverage")
    assert_envelope(resp, 405, "http_405")
    assert resp.headers["allow"] == "GET"
    # a route's own error passes unchanged
    item = assert_envelope(client.get("/api/v1/runs/424242"), 404, "not_found")
    assert item["loc"] == ["path", "run_id"]
    resp = client.post("/api/v1/runs", content=b"{}")
    assert_envelope(resp, 401, "unauthorized")
    assert resp.headers["www-authenticate"].startswith("Bearer")


def test_unexpected_errors_are_json_500_logged_not_shown(
    settings: Settings, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(settings, store=store)

    # Routes added for this test only: a bug, and a NotFound no route answered itself.
    @app.get("/api/v1/test-bug")
    def bug() -> None:
        raise RuntimeError("secret internals 0xdeadbeef")

    @app.get("/api/v1/test-unanswered")
    def unanswered() -> dict[str, Any]:
        return store.get_run(424242)

    with caplog.at_level(logging.ERROR, logger="moedash.api"), TestClient(app) as client:
        resp = client.get("/api/v1/test-bug")
        item = assert_envelope(resp, 500, "internal_error")
        assert item["loc"] == []
        assert "0xdeadbeef" not in resp.text and "Traceback" not in resp.text
        assert_envelope(client.get("/api/v1/test-unanswered"), 404, "not_found")
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 1 and "/api/v1/test-bug" in logged[0].getMessage()
    assert "0xdeadbeef" in str(logged[0].exc_info[1])  # type: ignore[index]


def test_a_held_duckdb_file_answers_503_with_the_one_line(settings: Settings, store: Store) -> None:
    from db.errors import DatabaseLocked

    app = create_app(settings, store=store)

    @app.get("/api/v1/test-locked")
    def locked() -> None:
        raise DatabaseLocked("/var/x.duckdb", "/usr/bin/python3", 4242)

    with TestClient(app) as client:
        item = assert_envelope(client.get("/api/v1/test-locked"), 503, "store_error")
    assert "PID 4242" in item["msg"] and "PostgreSQL" in item["msg"]
