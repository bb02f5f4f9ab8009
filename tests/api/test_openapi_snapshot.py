"""The OpenAPI document is a reviewed contract: it equals the committed
docs/openapi.json, every route documents its answer and its errors, and every example in
it matches its own schema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
import pytest
from fastapi.testclient import TestClient

from api.schemas.document import answer_schemas
from scripts.openapi_snapshot import COMMAND, SNAPSHOT, difference, render

SUCCESS = ("200", "201", "204")


@pytest.fixture
def document(client: TestClient) -> dict[str, Any]:
    resp = client.get("/api/v1/openapi.json")
    assert resp.status_code == 200
    doc: dict[str, Any] = resp.json()
    return doc


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m.upper(), p, op) for p, ops in doc["paths"].items() for m, op in ops.items()]


def schema_errors(doc: dict[str, Any], schema: dict[str, Any], instance: Any) -> list[str]:
    validator = jsonschema_rs.validator_for({**schema, "components": doc["components"]})
    return [f"{list(e.instance_path)}: {e.message[:160]}" for e in validator.iter_errors(instance)]


def test_document_equals_the_committed_snapshot(document: dict[str, Any]) -> None:
    committed = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else ""
    diff = difference(committed, render(document))
    assert not diff, (
        f"The API's OpenAPI document differs from {SNAPSHOT.relative_to(SNAPSHOT.parents[1])}."
        f" If the change is intended, run `{COMMAND}` (make openapi) and commit the file.\n" + diff
    )


def test_difference_names_what_changed() -> None:
    before = {
        "paths": {"/a": {"get": {"summary": "old"}}, "/gone": {"get": {}}},
        "components": {"schemas": {"A": {"type": "object"}}},
    }
    after = {
        "paths": {"/a": {"get": {"summary": "new"}}, "/b": {"post": {}}},
        "components": {"schemas": {"A": {"type": "object"}, "B": {}}},
    }
    diff = difference(render(before), render(after))
    head = diff.split("\n\n")[0].splitlines()
    assert head == ["changed:", "~ GET /a", "- GET /gone", "+ POST /b", "+ schema B"]
    assert '-        "summary": "old"' in diff and '+        "summary": "new"' in diff
    assert difference(render(before), render(before)) == ""


def test_every_operation_documents_a_json_answer_or_its_media_types(
    document: dict[str, Any],
) -> None:
    bare = []
    for method, path, op in operations(document):
        ok = [c for c in SUCCESS if c in op["responses"]]
        assert ok, f"{method} {path}: no success status documented"
        if ok[0] == "204":
            continue
        content = op["responses"][ok[0]].get("content", {})
        schemas = [c.get("schema", {}) for c in content.values()]
        if not content or all(s == {} for s in schemas):
            bare.append(f"{method} {path}")
    assert bare == [], "give the route a response_model (or responses= with media types)"


def test_every_operation_documents_its_errors_in_the_envelope(document: dict[str, Any]) -> None:
    envelope = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for method, path, op in operations(document):
        errors = {c: r for c, r in op["responses"].items() if c.startswith(("4", "5"))}
        assert "503" in errors, f"{method} {path}: the database can fail"
        if op.get("parameters") or op.get("requestBody"):
            assert "422" in errors, f"{method} {path}: has parameters, so 422"
        if "{" in path:
            assert "404" in errors, f"{method} {path}: a path resource can be missing"
        for code, resp in errors.items():
            body = resp["content"]["application/json"]
            assert body["schema"] == envelope, (method, path, code)
            assert schema_errors(document, envelope, body["example"]) == [], (method, path, code)


def test_every_json_answer_has_a_valid_example(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    checked = 0
    for method, path, op in operations(document):
        ok = next(c for c in SUCCESS if c in op["responses"])
        schema = op["responses"][ok].get("content", {}).get("application/json", {}).get("schema")
        if not schema or "$ref" not in schema:
            continue
        examples = schemas[schema["$ref"].rsplit("/", 1)[1]].get("examples")
        assert examples, f"{method} {path}: its answer model has no example"
        for example in examples:
            assert schema_errors(document, schema, example) == [], (method, path)
            checked += 1
    assert checked >= 35


def test_examples_keep_their_nulls(document: dict[str, Any]) -> None:
    # FastAPI drops nulls from the document it generates; api.schemas.document puts the
    # examples back whole, so an answer's example still shows every key it always has
    example = document["components"]["schemas"]["Health"]["examples"][0]
    assert example["parse_pool"] is None
    pareto = document["components"]["schemas"]["Pareto"]["examples"][0]
    assert pareto["dispatch"]["requested"] is None


def test_snapshot_is_the_rendered_form() -> None:
    text = SNAPSHOT.read_text(encoding="utf-8")
    assert render(json.loads(text)) == text


def test_reads_take_the_token_as_optional_and_writes_require_it(
    document: dict[str, Any], client: TestClient
) -> None:
    writes = {
        ("POST", "/api/v1/runs"),
        ("DELETE", "/api/v1/runs/{run_id}"),
        ("POST", "/api/v1/serving-configs"),
        ("POST", "/api/v1/crossval/outcomes"),
    }
    for method, path, op in operations(document):
        if (method, path) in writes:
            assert op["security"] == [{"HTTPBearer": []}], (method, path)
        elif path != "/api/v1/health":
            assert op["security"] == [{"ReadToken": []}, {}], (method, path)
    # as documented: a read without credentials is answered, a write is refused
    assert client.get("/api/v1/runs").status_code == 200
    assert client.delete("/api/v1/runs/1").status_code == 401


def test_every_answer_field_is_described(document: dict[str, Any]) -> None:
    names = answer_schemas(document)
    assert {"Pareto", "Run", "ErrorEnvelope", "Dispatch", "TreeNode"} <= names
    bare = [
        f"{name}.{field}"
        for name in sorted(names)
        for field, prop in document["components"]["schemas"][name].get("properties", {}).items()
        if not prop.get("description")
    ]
    assert bare == [], (
        "answer fields without a description: give them Field(description=...) (with the "
        "unit) or add their name to api/schemas/glossary.py"
    )


def test_every_phase_literal_spells_one_order() -> None:
    """typing caches ``X | None`` by value and ``Literal`` types compare equal whatever
    their order, so one ``Literal["prefill", "decode"]`` made before the others would
    reorder every phase enum in the document, depending on which test imported what
    first (seen in CI). Every Literal naming both phases says "decode" first."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"Literal\[([^\]]*)\]")
    wrong = []
    for package in ("analysis", "ingest", "db", "service", "api", "dashboard", "moedash"):
        for path in (repo / package).rglob("*.py"):
            for args in pattern.findall(path.read_text(encoding="utf-8")):
                names = re.findall(r"[\"']([a-z_]+)[\"']", args)
                if {"decode", "prefill"} <= set(names) and names.index("prefill") < names.index(
                    "decode"
                ):
                    wrong.append(f"{path.relative_to(repo)}: Literal[{args}]")
    assert wrong == []
