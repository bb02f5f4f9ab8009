"""Property-based requests from the OpenAPI document (schemathesis), on DuckDB and (in
the PostgreSQL tier, `make test-pg`) on PostgreSQL: every GET operation, on a store
holding something for each of them, answers no 5xx, only statuses it documents, in media
types it documents, with bodies that match its schemas, and refuses (4xx) every request
its parameters' schemas forbid; every POST operation, sent generated and
schema-violating bodies without a token, answers no 5xx and only documented statuses.

The GET requests are of three kinds: generated from the parameters' schemas alone (mostly
refusals: unknown models, values the store does not hold); with the parameters that name
stored data pinned (:data:`KNOWN`) and the rest generated, so the answers with data are
checked against their schemas too; and schema-violating ones (negative mode: a number
out of range, a string too long), which must be refused.

Bounded: :data:`EXAMPLES` requests of each kind per operation (fewer for the slow ones),
:data:`POST_EXAMPLES` bodies of each kind per POST operation, derandomized (the same
requests on every run), no example database. The operations are read from the committed
docs/openapi.json, which tests/api/test_openapi_snapshot.py keeps equal to the app's
document. ``MOEDASH_FUZZ_COUNTS=file.json`` writes the answers by status per database."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode, checks

from db.store import open_store
from moedash.app import create_app
from moedash.settings import Settings
from scripts.openapi_snapshot import SNAPSHOT
from tests.factories import routing, version_sweeps
from tests.factories.api_contract import seed_every_route

EXAMPLES = 4  # requests of each kind per operation
POST_EXAMPLES = 10  # bodies of each kind per POST operation
SLOW = {"/api/v1/planner/plan", "/api/v1/agreement", "/api/v1/thresholds"}
SLOW_PREFIX = ("/api/v1/crossval/", "/api/v1/thresholds/")
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]
GET_PATHS = sorted(
    path
    for path, ops in json.loads(SNAPSHOT.read_text(encoding="utf-8"))["paths"].items()
    if "get" in ops
)
SLICE = {
    "model": version_sweeps.MODEL,
    "hardware": version_sweeps.HARDWARE,
    "quant": version_sweeps.QUANT,
    "world_size": version_sweeps.WORLD_SIZE,
    "num_tokens": 256,
    "base": version_sweeps.RC9,
    "head": version_sweeps.RC28,
}
KNOWN: dict[str, dict[str, Any]] = {
    "/api/v1/routing-skew": {
        "model": routing.MODEL,
        "hardware": routing.HARDWARE,
        "quant": routing.QUANT,
        "world_size": routing.WORLD_SIZE,
        "num_tokens": 256,
    },
    "/api/v1/crossval/workloads": {"hardware": "h200"},
}
# path parameters of the pinned kind: the dashboard's known run (its candidate 1 is measured)
PATH_PARAMETERS = {"candidate_index": 1, "sighting_id": 1}
# the seeded store holds no later arrival of an upload: this one answers 404 only
NOTHING_STORED = {"/api/v1/runs/{run_id}/sightings/{sighting_id}/raw"}


# The bytes as uploaded, not re-encoded: a bench_moe report may hold NaN, which strict
# JSON has not, so its body is checked for status and media type but not parsed.
AS_UPLOADED = {"/api/v1/runs/{run_id}/raw"}


def checks_for(path: str) -> list[Any]:
    if path in AS_UPLOADED:
        return [c for c in CHECKS if c is not checks.response_schema_conformance]
    return CHECKS


def examples_for(path: str) -> int:
    """Requests of each kind: fewer for the operations that compute for a second."""
    return 2 if path in SLOW or path.startswith(SLOW_PREFIX) else EXAMPLES


@pytest.fixture(scope="module")
def seeded(module_db_url: str) -> Iterator[tuple[FastAPI, dict[str, int]]]:
    """The app over a store seeded for every route, and the seeded run ids by name; on
    DuckDB (a copy of the migrated template) and, in the PostgreSQL tier, on a fresh
    PostgreSQL schema (module_db_url)."""
    store = open_store(module_db_url, upgrade=not module_db_url.startswith("duckdb"))
    try:
        ids = seed_every_route(store)
        settings = Settings(database_url=module_db_url, enable_dashboard=False)
        yield create_app(settings, store=store), ids
    finally:
        store.close()


# Requests sent and answers by status, over the module (written to the JSON file named by
# MOEDASH_FUZZ_COUNTS when set: the figures of docs/security.md)
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _tally(module_db_url: str) -> Iterator[None]:
    TALLY.clear()
    yield
    out = os.environ.get("MOEDASH_FUZZ_COUNTS")
    if out:
        kind = "duckdb" if module_db_url.startswith("duckdb") else "postgresql"
        path = Path(out)
        old = json.loads(path.read_text()) if path.exists() else {}
        old[kind] = dict(TALLY)
        path.write_text(json.dumps(old, indent=1, sort_keys=True))


@pytest.fixture(scope="module")
def schema(seeded: tuple[FastAPI, dict[str, int]]) -> Any:
    return schemathesis.openapi.from_asgi("/api/v1/openapi.json", seeded[0])


@pytest.fixture(scope="module")
def path_parameters(seeded: tuple[FastAPI, dict[str, int]]) -> dict[str, int]:
    return {**PATH_PARAMETERS, "run_id": seeded[1]["known"]}


def pinned(operation: Any, path: str, stored: dict[str, int]) -> st.SearchStrategy[Any]:
    """Cases whose data-naming parameters name stored data (``stored``: path parameters)
    and the others generated."""
    names = {p.name for p in operation.query}
    query = {k: v for k, v in KNOWN.get(path, SLICE).items() if k in names}
    params = {p.name: stored[p.name] for p in operation.path_parameters}
    return operation.as_strategy(query=query or None, path_parameters=params or None)


def kinds(operation: Any, path: str, stored: dict[str, int]) -> list[st.SearchStrategy[Any]]:
    """The three kinds of request of the module docstring (no schema-violating one for
    an operation without parameters: there is nothing to violate)."""
    out = [operation.as_strategy(), pinned(operation, path, stored)]
    if list(operation.query) or list(operation.path_parameters):
        out.append(operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))
    return out


@pytest.mark.parametrize("path", GET_PATHS)
def test_get_operation_keeps_its_contract(
    schema: Any, path_parameters: dict[str, int], path: str
) -> None:
    operation = schema[path]["GET"]
    seen: Counter[int] = Counter()
    for kind in kinds(operation, path, path_parameters):  # each kind has its own budget

        @settings(
            max_examples=examples_for(path),
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=kind)
        def requests(case: Any) -> None:
            response = case.call_and_validate(checks=checks_for(path))
            seen[response.status_code] += 1
            TALLY[f"GET {response.status_code}"] += 1

        requests()
    # a run of refusals alone would check the error envelope only
    assert seen[200] > 0 or path in NOTHING_STORED, seen


POST_PATHS = sorted(
    path
    for path, ops in json.loads(SNAPSHOT.read_text(encoding="utf-8"))["paths"].items()
    if "post" in ops
)


@pytest.mark.parametrize("path", POST_PATHS)
def test_post_operation_never_answers_5xx(schema: Any, path: str) -> None:
    """Bodies generated from the POST operations' schemas, without a token (what anyone
    can send): no 5xx, only documented statuses. (Uploads answer 401 before reading the
    body; the planner computes or refuses.)"""
    operation = schema[path]["POST"]
    post_checks = [
        checks.not_a_server_error,
        checks.status_code_conformance,
        checks.content_type_conformance,
    ]
    for kind in (
        operation.as_strategy(),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    ):

        @settings(
            max_examples=POST_EXAMPLES,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=kind)
        def requests(case: Any) -> None:
            response = case.call_and_validate(checks=post_checks)
            TALLY[f"POST {response.status_code}"] += 1

        requests()
