"""Bodies refused with 422 naming the field, never 500: numbers a bound lets through but
arithmetic cannot take (subnormal floats) in the planner's form."""

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
