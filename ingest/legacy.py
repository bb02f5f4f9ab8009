"""Older bench_moe report formats (schema doc §6.5).

* **Pre-merge single-file ``bench_moe.py``** (``"schema_version": 2``, rows with
  ``latency_us``, rankings with ``score_us``): refused with :class:`UnsupportedFormat`.
  Converting it is not faithful: besides the unverified µs unit, its ``workload`` uses
  ``rank_distribution``/``expert_distribution`` instead of ``routing_control`` and its
  configs carry EPLB fields the current format has no place for, so a converted row
  would look comparable to current rows when it is not. The message says how to
  proceed (re-run with the current bench_moe).
* **Early package version** (``latency_ms`` with only ``score``/``score_type``/
  ``per_rank``; no ``raw_score`` and no ``raw_data``): the current parser reads it,
  the missing values become null, and the run is marked ``source_format =
  "bench_moe_legacy"``.
"""

from __future__ import annotations

from typing import Any

from ingest.errors import UnsupportedFormat

SCHEMA_V2_NAME = "pre-merge bench_moe.py report (schema_version 2, latency in µs)"


def is_schema_v2(doc: dict[str, Any]) -> bool:
    """True for a pre-merge report: schema_version 2, ``latency_us`` rows or ``score_us``."""
    if "schema_version" in doc:
        return True
    results = doc.get("results")
    if isinstance(results, list):
        for row in results[:50]:
            if isinstance(row, dict) and ("latency_us" in row or "phase_times_us" in row):
                return True
    rankings = doc.get("rankings")
    if isinstance(rankings, list):
        for group in rankings[:50]:
            entries = group.get("ranking") if isinstance(group, dict) else None
            best = group.get("best") if isinstance(group, dict) else None
            if isinstance(best, dict) and "score_us" in best:
                return True
            if isinstance(entries, list) and any(
                isinstance(e, dict) and "score_us" in e for e in entries[:5]
            ):
                return True
    return False


def reject_schema_v2(doc: dict[str, Any]) -> None:
    """Raise UnsupportedFormat (422) naming the pre-merge format and what to do."""
    version = doc.get("schema_version")
    detail = f" (schema_version {version!r})" if version not in (None, 2) else ""
    raise UnsupportedFormat(
        f"this is a {SCHEMA_V2_NAME}{detail}; it is not ingested because its latency "
        "units and workload fields differ from the current format. Re-run the sweep with "
        "the current bench_moe (tests/microbenchmarks/bench_moe in TensorRT-LLM) and "
        "upload that JSON report.",
        status=422,
    )
