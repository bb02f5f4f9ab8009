"""POST /api/v1/runs lists the regressions of the runs it created against the latest
earlier TensorRT-LLM version on their slice (service.regressions), with the server's
thresholds or the request's ``regression_threshold_pct``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from service.regressions import RegressionThresholds
from tests.factories import EXAMPLE
from tests.factories import upload_reports as R

SLOW_TOKENS = 4096  # the example measures 128 and 4096 tokens


def post(client: TestClient, token: str, body: bytes, version: str, **params: str) -> Any:
    return client.post(
        "/api/v1/runs",
        content=body,
        params={"trtllm_version": version, **params},
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )


def test_slower_new_version_lists_its_regressions(client: TestClient, upload_token: str) -> None:
    base = post(client, upload_token, EXAMPLE.read_bytes(), "v1.3.0rc26").json()
    assert base["regressions"] == []  # nothing earlier to compare with
    resp = post(client, upload_token, R.slower(1.5, num_tokens=SLOW_TOKENS), "v1.3.0rc27")
    assert resp.status_code == 201, resp.text
    body = resp.json()
    head_run = body["run_ids"][0]
    found = body["regressions"]
    assert found and body["errors"] == []
    assert {r["num_tokens"] for r in found} == {SLOW_TOKENS}
    for item in found:
        assert item["run_id"] == head_run and item["verdict"] == "regression"
        assert (item["base_version"], item["head_version"]) == ("v1.3.0rc26", "v1.3.0rc27")
        assert item["base_run_ids"] == base["run_ids"]
        assert item["change_pct"] == pytest.approx(50.0)
        assert item["threshold_pct"] == 5.0
    # the same bytes again: nothing new was created, so nothing is reported
    again = post(client, upload_token, R.slower(1.5, num_tokens=SLOW_TOKENS), "v1.3.0rc27")
    assert again.status_code == 200 and again.json()["regressions"] == []


def test_request_threshold_replaces_the_servers(client: TestClient, upload_token: str) -> None:
    post(client, upload_token, EXAMPLE.read_bytes(), "v1.3.0rc26")
    resp = post(client, upload_token, R.slower(1.3), "v1.3.0rc27", regression_threshold_pct="40")
    assert resp.status_code == 201 and resp.json()["regressions"] == []  # +30 % < 40 %
    resp = post(client, upload_token, R.slower(1.69), "v1.3.0rc28", regression_threshold_pct="20")
    found = resp.json()["regressions"]  # against rc27, the latest earlier version: +30 %
    assert resp.status_code == 201 and found
    assert {r["base_version"] for r in found} == {"v1.3.0rc27"}
    assert {r["threshold_pct"] for r in found} == {20.0}
    assert all(r["change_pct"] == pytest.approx(30.0) for r in found)


def test_bad_request_threshold_is_422(client: TestClient, upload_token: str, store: Store) -> None:
    resp = post(
        client, upload_token, EXAMPLE.read_bytes(), "v1.3.0rc26", regression_threshold_pct="-1"
    )
    assert resp.status_code == 422
    assert resp.json()["detail"][0]["loc"] == ["query", "regression_threshold_pct"]
    assert store.table_counts()["uploads"] == 0


@pytest.fixture
def lenient_client(db_url: str, store: Store) -> Iterator[TestClient]:
    settings = Settings(
        database_url=db_url,
        enable_dashboard=False,
        regression_thresholds=RegressionThresholds(overrides={"kimi_k2/B200": 80.0}),
    )
    with TestClient(create_app(settings, store=store)) as c:
        yield c


def test_server_thresholds_per_model_and_hardware(
    lenient_client: TestClient, upload_token: str
) -> None:
    post(lenient_client, upload_token, EXAMPLE.read_bytes(), "v1.3.0rc26")
    resp = post(lenient_client, upload_token, R.slower(1.5), "v1.3.0rc27")
    assert resp.status_code == 201 and resp.json()["regressions"] == []
    resp = post(
        lenient_client, upload_token, R.slower(2.0), "v1.3.0rc28", regression_threshold_pct="5"
    )
    found = resp.json()["regressions"]  # rc28 (x2.0) against rc27 (x1.5): +33 %
    assert found and {r["threshold_pct"] for r in found} == {5.0}
