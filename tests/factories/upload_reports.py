"""bench_moe report bytes for upload tests: the example report as another TensorRT-LLM
version with a known slowdown, re-serialised, with an extra key or another ranking."""

from __future__ import annotations

import json
from typing import Any

from tests.factories import EXAMPLE


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
