"""One validation contract on both databases (runs on DuckDB and, marker postgres, on
PostgreSQL through the ``db_url`` fixture): control characters in text, integer
parameters out of range, required model fields, non-finite numbers in a JSON body."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories.hostile import encode, minimal_report


def _post(client: TestClient, token: str, doc: Any) -> Any:
    return client.post(
        "/api/v1/runs",
        content=encode(doc) if not isinstance(doc, bytes) else doc,
        params={"trtllm_version": "v1.3.0rc26"},
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )


def test_control_characters_in_free_text_are_stored_escaped(
    client: TestClient, upload_token: str
) -> None:
    doc = minimal_report()
    doc["results"][1]["skip_reason"] = "budget\x00 exceeded \x1b[31mred\x1b[0m\tx"
    doc["results"][0]["bottleneck"] = "nul\x00"
    doc["results"][0]["workload"]["unknown\x00key"] = "value\x00"  # kept in extra_json
    resp = _post(client, upload_token, doc)
    assert resp.status_code == 201, resp.text
    run_id = resp.json()["runs"][0]["run_id"]
    items = client.get(f"/api/v1/runs/{run_id}/candidates").json()["items"]
    assert items[1]["skip_reason"] == "budget\\x00 exceeded \\x1b[31mred\\x1b[0m\tx"
    assert items[0]["bottleneck"] == "nul\\x00"
    assert "value\\u0000" in items[0]["extra_json"]  # JSON text escapes NUL itself


@pytest.mark.parametrize(
    ("path", "value", "loc"),
    [
        (("results", 0, "requested_config", "backend"), "T\x00", "results[0].requested_config.backend"),  # noqa: E501
        (("model", "name"), "tiny\x00", "model.name"),
        (("environment", "device_name"), "NVIDIA\x00B200", "environment.device_name"),
    ],
)  # fmt: skip
def test_control_characters_in_labels_are_refused_naming_the_field(
    client: TestClient, upload_token: str, path: tuple[Any, ...], value: str, loc: str
) -> None:
    doc = minimal_report()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    resp = _post(client, upload_token, doc)
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"][0]["loc"] == ["body", loc]
    assert client.get("/api/v1/runs").json()["total"] == 0


@pytest.mark.parametrize("missing", ["num_experts", "top_k", "hidden_size"])
def test_required_model_fields_missing_is_422_naming_them(
    client: TestClient, upload_token: str, missing: str
) -> None:
    doc = minimal_report()
    del doc["model"][missing]
    resp = _post(client, upload_token, doc)
    assert resp.status_code == 422, resp.text
    item = resp.json()["detail"][0]
    assert item["loc"] == ["body", f"model.{missing}"] and f"model.{missing}" in item["msg"]
    assert client.get("/api/v1/runs").json()["total"] == 0


def test_all_missing_model_fields_are_named_in_one_answer(
    client: TestClient, upload_token: str
) -> None:
    doc = minimal_report()
    doc["model"]["top_k"] = None
    del doc["model"]["hidden_size"]
    msg = _post(client, upload_token, doc).json()["detail"][0]["msg"]
    assert "model.top_k" in msg and "model.hidden_size" in msg


@pytest.mark.parametrize(
    ("url", "loc"),
    [
        ("/api/v1/runs/99999999999999999999999", ["path", "run_id"]),
        ("/api/v1/runs/0", ["path", "run_id"]),
        ("/api/v1/runs/-5/candidates", ["path", "run_id"]),
        ("/api/v1/runs/9223372036854775808/raw", ["path", "run_id"]),
        ("/api/v1/runs?offset=99999999999999999999", ["query", "offset"]),
        ("/api/v1/runs/1/candidates?offset=10000000000", ["query", "offset"]),
        ("/api/v1/runs/1/candidates?num_tokens=99999999999999999999", ["query", "num_tokens"]),
        ("/api/v1/runs?world_size=99999999999999999999", ["query", "world_size"]),
    ],
)
def test_integer_parameters_out_of_range_are_422(
    client: TestClient, url: str, loc: list[str]
) -> None:
    resp = client.get(url)
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"][0]["loc"] == loc


def test_non_finite_numbers_in_a_json_body_answer_422_not_500(
    client: TestClient, upload_token: str
) -> None:
    body = b'{"workload": {"isl": NaN, "osl": Infinity}, "hardware": -Infinity}'
    resp = client.post(
        "/api/v1/planner/plan",
        content=body,
        headers={"Authorization": f"Bearer {upload_token}", "Content-Type": "application/json"},
    )
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"]  # the envelope, serialisable (strict JSON)
    json.loads(resp.text)
