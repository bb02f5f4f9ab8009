"""Requests refused with 422 naming the field, never 500: numbers a bound lets through but
arithmetic cannot take (subnormal floats) in the planner's form, and run_id lists (each
id within the store's range, at most 1000 of them)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"workload": {"seq_len": 1e-320}}, ["body", "workload", "seq_len"]),
        ({"workload": {"slo_tbt_ms": 5e-324}}, ["body", "workload", "slo_tbt_ms"]),
    ],
)
def test_subnormal_planner_numbers_are_422(
    client: TestClient, body: dict[str, object], loc: list[str]
) -> None:
    resp = client.post("/api/v1/planner/plan", json=body)
    assert resp.status_code == 422, resp.text
    item = resp.json()["detail"][0]
    assert item["loc"] == loc and "input" not in item


@pytest.mark.parametrize(
    "query",
    [
        "run_id=0",
        "run_id=9223372036854775808",
        "&".join(f"run_id={i}" for i in range(1, 1002)),
    ],
    ids=["zero", "beyond-int64", "1001-items"],
)
def test_run_id_lists_are_bounded(client: TestClient, query: str) -> None:
    resp = client.get(f"/api/v1/best?{query}")
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"][0]["loc"][:2] == ["query", "run_id"]


@pytest.mark.parametrize("field", ["workload_id", "source", "notes"])
def test_outcome_text_with_nul_is_422_not_a_store_error(
    client: TestClient, upload_token: str, field: str
) -> None:
    record = {"workload_id": "w", "tps_per_user_deployed": 1.0, "tps_per_user_candidate": 2.0}
    record[field] = "a\u0000b"
    resp = client.post(
        "/api/v1/crossval/outcomes",
        json=[record],
        headers={"Authorization": f"Bearer {upload_token}"},
    )
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"][0]["loc"] == ["body", 0, field]
