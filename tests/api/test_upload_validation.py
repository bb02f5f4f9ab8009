"""Uploads refused with 422 naming the field, nothing stored: a key twice in one object
(the later value valid, the earlier not), more per-rank token counts than ranks, model
names that look like another (a Cyrillic letter, a zero-width or bidi character), and an
oversized free-text environment value. A full-width spelling is the same model as the
plain one (NFKC)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from db.store import Store
from ingest import lenient_json
from tests.factories import EXAMPLE

BASE = EXAMPLE.read_text(encoding="utf-8")


def report(edit: Any = None) -> bytes:
    doc = lenient_json.loads(BASE)
    if edit is not None:
        edit(doc)
    return lenient_json.dumps(doc).encode()


def post(client: TestClient, token: str, body: bytes) -> Any:
    return client.post(
        "/api/v1/runs",
        content=body,
        params={"trtllm_version": "v1.3.0rc26"},
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )


def set_model(name: str) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        doc["model"]["name"] = name

    return edit


def test_duplicate_key_is_refused(client: TestClient, upload_token: str, store: Store) -> None:
    body = BASE.replace('"world_size": 4,', '"world_size": "four", "world_size": 4,', 1)
    assert body != BASE
    resp = post(client, upload_token, body.encode())
    assert resp.status_code == 422, resp.text
    item = resp.json()["detail"][0]
    assert "world_size" in json.dumps(item["loc"]) and "twice" in item["msg"]
    assert store.list_runs().total == 0


def test_more_per_rank_counts_than_ranks_is_refused(
    client: TestClient, upload_token: str, store: Store
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["results"][0]["workload"]["per_rank_num_tokens"] = [1] * 100_000

    resp = post(client, upload_token, report(edit))
    assert resp.status_code == 422, resp.text
    assert "per_rank_num_tokens" in json.dumps(resp.json()["detail"][0]["loc"])
    assert store.list_runs().total == 0


@pytest.mark.parametrize(
    "name",
    ["kimi_k2\u200b", "kimi_k2\u202e", "kim\u0456_k2", "\u200fkimi_k2"],
    ids=["zero-width", "bidi-override", "cyrillic-i", "rtl-mark"],
)
def test_lookalike_model_names_are_refused(
    client: TestClient, upload_token: str, store: Store, name: str
) -> None:
    resp = post(client, upload_token, report(set_model(name)))
    assert resp.status_code == 422, resp.text
    assert "model" in json.dumps(resp.json()["detail"][0]["loc"])
    assert store.list_runs().total == 0


def test_full_width_model_name_is_the_plain_one(
    client: TestClient, upload_token: str, store: Store
) -> None:
    resp = post(client, upload_token, report(set_model("ｋｉｍｉ_ｋ２")))
    assert resp.status_code == 201, resp.text
    assert set(store.list_runs().items["model"]) == {"kimi_k2"}


def test_oversized_hostname_is_refused(client: TestClient, upload_token: str, store: Store) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["environment"]["hostname"] = "h" * 100_000

    resp = post(client, upload_token, report(edit))
    assert resp.status_code == 422, resp.text
    item = resp.json()["detail"][0]
    assert "hostname" in json.dumps(item["loc"]) and "hhhh" not in resp.text
    assert store.list_runs().total == 0
