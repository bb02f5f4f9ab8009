"""The query-parameter contract, over every GET route of the app's own OpenAPI document, on
DuckDB and PostgreSQL: a control character in any string parameter, an integer beyond what
the database holds in any integer parameter, a number that is not finite or underflows,
and an overlong value answer 4xx naming the parameter (never 5xx), before any database
call, without echoing the whole input back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from db.store import Store
from tests.factories import version_sweeps
from tests.factories.api_contract import seed_every_route

NUL = "a\x00b"
INT_OVER = "9223372036854775808"  # 2**63: one past PostgreSQL's and DuckDB's BIGINT
INT_UNDER = "-9223372036854775809"
CASE_WORDS = {"a", "b"}


def _schema_type(schema: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The parameter's non-null type and its schema (``anyOf`` with null unwrapped)."""
    for option in schema.get("anyOf", [schema]):
        if option.get("type") not in (None, "null"):
            return option["type"], option
    return None, schema


def _valid(schema: dict[str, Any]) -> Any:
    """A value the parameter's schema accepts (the baseline the broken value replaces)."""
    kind, sub = _schema_type(schema)
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if "enum" in sub:
        return sub["enum"][0]
    if kind == "integer":
        return max(int(sub.get("minimum", 1)), 1)
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return "false"
    if kind == "array":
        return [_valid(sub["items"])]
    return "x"


def _cases(
    doc: dict[str, Any], known: dict[str, Any] | None = None
) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(path, parameter, broken value, other parameters) for every GET operation; the
    other parameters named in ``known`` take its values (so that the request reaches
    stored data), the rest their defaults or a valid placeholder."""
    pins = known or {}
    for template, ops in doc["paths"].items():
        if "get" not in ops:
            continue
        params = [p for p in ops["get"].get("parameters", []) if p["in"] in ("query", "path")]
        for target in params:
            kind, sub = _schema_type(target["schema"])
            item_kind = _schema_type(sub["items"])[0] if kind == "array" else kind
            broken = {
                "string": [NUL, "x" * 5000],
                "integer": [INT_OVER, INT_UNDER],
                "number": ["1e-320", "1e309", "nan"],
            }.get(item_kind or "", [])
            for value in broken:
                path, query = template, {}
                for p in params:
                    v = value if p is target else pins.get(p["name"], _valid(p["schema"]))
                    if p["in"] == "path":
                        path = path.replace("{" + p["name"] + "}", str(v).replace("\x00", "%00"))
                    elif p is target or p.get("required") or p["name"] in pins:
                        query[p["name"]] = [v] if kind == "array" and p is target else v
                yield path, target["name"], value, query


@pytest.fixture
def openapi(client: TestClient) -> dict[str, Any]:
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    doc: dict[str, Any] = response.json()
    return doc


def _sweep(client: TestClient, openapi: dict[str, Any], known: dict[str, Any] | None) -> None:
    answered, failures = 0, []
    for path, name, value, query in _cases(openapi, known):
        response = client.get(path, params=query)
        answered += 1
        if response.status_code >= 500:
            failures.append((path, name, value[:20], response.status_code, response.text[:200]))
    assert answered > 300  # every GET route's string and integer parameters were tried
    assert failures == [], "\n".join(map(str, failures))


def test_no_broken_query_value_answers_5xx(client: TestClient, openapi: dict[str, Any]) -> None:
    _sweep(client, openapi, None)


def test_no_broken_query_value_answers_5xx_over_stored_data(
    store: Store, client: TestClient, openapi: dict[str, Any]
) -> None:
    # the other parameters name a stored cell and run, so each broken value meets the
    # code paths that have data to work on (an empty store answers most requests early)
    ids = seed_every_route(store)
    known = {
        "model": version_sweeps.MODEL,
        "hardware": version_sweeps.HARDWARE,
        "quant": version_sweeps.QUANT,
        "world_size": version_sweeps.WORLD_SIZE,
        "num_tokens": 256,
        "base": version_sweeps.RC9,
        "head": version_sweeps.RC28,
        "run_id": ids["known"],
        "candidate_index": 1,
        "sighting_id": 1,
    }
    _sweep(client, openapi, known)


def test_control_characters_in_query_answer_422_naming_the_parameter(
    client: TestClient, openapi: dict[str, Any]
) -> None:
    wrong = []
    for path, name, value, query in _cases(openapi):
        if value != NUL or "{" + name + "}" in next(
            t for t in openapi["paths"] if _matches(t, path)
        ):
            continue
        response = client.get(path, params=query)
        locs = [d["loc"] for d in response.json()["detail"]] if response.status_code == 422 else []
        if ["query", name] not in locs:
            wrong.append((path, name, response.status_code, response.text[:200]))
    assert wrong == []


def _matches(template: str, path: str) -> bool:
    t, p = template.split("/"), path.split("/")
    return len(t) == len(p) and all(a == b or a.startswith("{") for a, b in zip(t, p, strict=True))


@pytest.mark.parametrize("char", ["\x00", "\x01", "\t", "\x1b", "\x7f", "\x85"])
def test_each_control_character_is_refused_before_the_database(
    client: TestClient, char: str
) -> None:
    response = client.get("/api/v1/runs", params={"model": f"mixtral{char}x"})
    assert response.status_code == 422
    (item,) = response.json()["detail"]
    assert item["loc"] == ["query", "model"]
    assert item["type"] == "control_character"
    assert char not in response.text


def test_control_character_in_an_unknown_parameter_is_refused_too(client: TestClient) -> None:
    response = client.get("/api/v1/health", params={"x": "\x00"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "x"]


def test_text_in_other_scripts_passes(client: TestClient) -> None:
    # accented and CJK names are ordinary text: they reach the route (an empty list, not
    # a refusal), as does a value as long as the longest declared one
    for model in ("modèle", "模型", "mixtral 8x22b", "x" * 100):
        response = client.get("/api/v1/runs", params={"model": model})
        assert response.status_code == 200, response.text


def test_offset_beyond_bigint_on_crossval_workloads_answers_422_with_the_bound(
    client: TestClient,
) -> None:
    response = client.get("/api/v1/crossval/workloads", params={"offset": INT_OVER})
    assert response.status_code == 422
    (item,) = response.json()["detail"]
    assert item["loc"] == ["query", "offset"]
    assert item["type"] == "less_than_equal"
    assert "1000000000" in item["msg"]


def test_integer_beyond_bigint_in_any_integer_parameter_answers_422(client: TestClient) -> None:
    response = client.get("/api/v1/runs/9223372036854775808")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["path", "run_id"]


@pytest.mark.parametrize("seq_len", ["1e-320", "1e-300", "0.0001"])
def test_planner_seq_len_below_its_bound_answers_422(client: TestClient, seq_len: str) -> None:
    response = client.get("/api/v1/planner/plan", params={"seq_len": seq_len})
    assert response.status_code == 422
    (item,) = response.json()["detail"]
    assert item["loc"] == ["query", "seq_len"]
    assert item["type"] == "greater_than_equal"


def test_overlong_query_value_is_refused_without_echoing_it(client: TestClient) -> None:
    value = "h" * 50_000
    response = client.get("/api/v1/runs", params={"hardware": value})
    assert response.status_code == 422
    (item,) = response.json()["detail"]
    assert item["loc"] == ["query", "hardware"]
    assert len(response.content) < 2_000
