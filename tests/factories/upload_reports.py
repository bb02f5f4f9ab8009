"""bench_moe report bytes for upload tests: the example report as another TensorRT-LLM
version with a known slowdown, re-serialised, with an extra key or another ranking; how
tests post them and read a stored run back."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from fastapi.testclient import TestClient

from db.store import Store
from tests.factories import EXAMPLE


def post(client: TestClient, token: str, body: bytes, **params: str) -> Any:
    """POST ``body`` to /api/v1/runs as JSON with ``token`` (trtllm_version v1.3.0rc26
    unless ``params`` says otherwise)."""
    return client.post(
        "/api/v1/runs",
        content=body,
        params={"trtllm_version": "v1.3.0rc26", **params},
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )


def stored_run(store: Store, run_id: int) -> tuple[dict[str, Any], pd.DataFrame, bytes]:
    """What is stored of run ``run_id``, without what differs between two databases
    storing the same upload (ids, times, sightings): its fields, its candidates and its
    raw bytes."""
    run = store.get_run(run_id)
    for key in ("run_id", "upload_id", "created_at", "uploaded_at", "sightings"):
        run.pop(key, None)
    cands = store.list_candidates(run_id, limit=10_000).items.drop(columns=["run_id"])
    return run, cands.reset_index(drop=True), store.raw_upload(run_id).content


def example_report() -> dict[str, Any]:
    """The example report (tests/fixtures/bench_moe_example.json) as a dict."""
    doc: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return doc


def as_bytes(doc: dict[str, Any], *, indent: int | None = 2) -> bytes:
    return json.dumps(doc, indent=indent).encode()


def slower(factor: float, *, num_tokens: int | None = None) -> bytes:
    """The example with every successful score (``latency_ms.score`` and
    ``raw_score``) multiplied by ``factor``, at ``num_tokens`` only when given: what a
    slower TensorRT-LLM build measures. Upload it with another ``trtllm_version``."""
    doc = example_report()
    for row in doc["results"]:
        if row.get("status") != "success":
            continue
        if num_tokens is not None and row["workload"]["num_tokens"] != num_tokens:
            continue
        latency = row["latency_ms"]
        for key in ("score", "raw_score"):
            if isinstance(latency.get(key), float):
                latency[key] *= factor
    return as_bytes(doc)


def reserialised() -> bytes:
    """The same report in other bytes (compact separators, no indent)."""
    return as_bytes(example_report(), indent=None)


def with_extra_key() -> bytes:
    """The same measurements plus an unknown top-level key."""
    doc = example_report()
    doc["ci_extra"] = {"job": 2}
    return as_bytes(doc)


def with_other_ranking() -> bytes:
    """The same candidates, the ``rankings`` block reversed (an edited file)."""
    doc = example_report()
    doc["rankings"] = list(reversed(doc["rankings"]))
    return as_bytes(doc)
