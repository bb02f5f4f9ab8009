"""Answers of /compare and /history*: changes across TensorRT-LLM versions."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api.schemas.common import (
    DISPATCH_EXAMPLE,
    PROVENANCE_EXAMPLE,
    Dispatch,
    Open,
    Page,
    Provenance,
    Row,
    SideProvenance,
    Table,
    examples,
)

_CELL: dict[str, Any] = {
    "model": "deepseek_v4_pro",
    "hardware": "GB300",
    "quant": "NVFP4",
    "world_size": 8,
}
_SIDES: dict[str, Any] = {
    "base": {"requested": "1.2.0rc9", "kind": "version", "version": "1.2.0rc9", "run_ids": [3]},
    "head": {"requested": "1.2.0rc28", "kind": "version", "version": "1.2.0rc28", "run_ids": [6]},
}
_VERSION: dict[str, Any] = {
    "version": "1.2.0rc9",
    "parsed": "1.2.0rc9",
    "first_run_date": "2026-08-01",
    "last_run_date": "2026-08-01",
    "n_runs": 1,
    "run_ids": "3",
    "trtllm_commits": "c0ffee0",
    "order": 0,
}
_SIDE_PROV = {"base": PROVENANCE_EXAMPLE, "head": PROVENANCE_EXAMPLE}


class Side(Open):
    """One side of a comparison: what was asked and what it resolved to."""

    requested: str = Field(description="As given: a run id or a TensorRT-LLM version")
    kind: str = Field(description="run or version")
    version: str | None = Field(description="TensorRT-LLM version")
    run_ids: list[int] = Field(description="Runs on this side (repeats pooled)")


class VersionRow(Row):
    version: str
    first_run_date: str | None = None
    last_run_date: str | None = None
    n_runs: int | None = None
    run_ids: str | None = Field(None, description="Comma-separated run ids")
    order: int | None = Field(None, description="Position in version order")


class CompareRow(Row):
    """One workload x configuration on both sides."""

    num_tokens: int | None = None
    config: str | None = Field(None, description="Configuration label")
    base_ms: float | None = Field(None, description="ms")
    head_ms: float | None = Field(None, description="ms")
    change_pct: float | None = Field(None, description="head / base - 1, %")
    noise_pct: float | None = Field(None, description="Noise band, %")
    verdict: str | None = Field(None, description="regression, improvement, unchanged …")


class Compare(Page):
    """Per workload x configuration change between two runs or versions."""

    model_config = examples(
        {
            **_SIDES,
            "threshold_pct": 5.0,
            "noise_rule": "regression/improvement: |change| > threshold_pct and > noise_pct",
            "counts": {"regression": 1, "improvement": 0, "unchanged": 5, "best_changed": 1},
            "dispatch": DISPATCH_EXAMPLE,
            "repeats": "median",
            "provenance": _SIDE_PROV,
            "filename": "compare-deepseek_v4_pro-GB300-NVFP4-1.2.0rc9-vs-1.2.0rc28.csv",
            "best_changes": [
                {**_CELL, "num_tokens": 256, "base_best": "TRTLLM", "head_best": "CUTEDSL"}
            ],
            "total": 12,
            "limit": 1,
            "offset": 0,
            "items": [
                {
                    **_CELL,
                    "num_tokens": 256,
                    "config": "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1",
                    "base_ms": 1.0,
                    "head_ms": 1.1,
                    "change_pct": 10.0,
                    "noise_pct": 2.5,
                    "verdict": "regression",
                }
            ],
        }
    )

    base: Side
    head: Side
    threshold_pct: float = Field(description="Changes below this % are unchanged")
    noise_rule: str
    counts: dict[str, int] = Field(description="Rows per verdict (over every row)")
    dispatch: Dispatch
    repeats: str
    provenance: SideProvenance
    filename: str = Field(description="Name of the CSV download")
    best_changes: list[Row] = Field(description="Workloads whose best configuration changed")
    items: list[CompareRow]


class RunRef(Row):
    run_id: int
    trtllm_version: str | None = None
    trtllm_commit: str | None = None
    run_date: str | None = None


class HistoryVersions(Open):
    """A slice's versions in version order and its runs, newest first."""

    model_config = examples(
        {
            "dispatch": DISPATCH_EXAMPLE,
            "versions": [_VERSION],
            "runs": [
                {
                    "run_id": 3,
                    "trtllm_version": "1.2.0rc9",
                    "trtllm_commit": "c0ffee0",
                    "run_date": "2026-08-01",
                }
            ],
        }
    )

    dispatch: Dispatch
    versions: list[VersionRow]
    runs: list[RunRef]


class HistoryRow(Row):
    workload: str | None = None
    config: str | None = None
    trtllm_version: str | None = None
    run_id: int | None = None
    score_ms: float | None = Field(None, description="ms")
    tokens_per_s_per_gpu: float | None = None
    change_pct_vs_prev: float | None = Field(None, description="% against the previous point")


class History(Page, Table):
    """Score per workload x configuration over versions (or runs)."""

    model_config = examples(
        {
            "by": "version",
            "repeats": "median",
            "dispatch": DISPATCH_EXAMPLE,
            "provenance": PROVENANCE_EXAMPLE,
            "versions": [_VERSION],
            "total": 24,
            "limit": 1,
            "offset": 0,
            "items": [
                {
                    "workload": "deepseek_v4_pro · GB300 · NVFP4 · ws 8 · 256 tokens",
                    "config": "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1",
                    "trtllm_version": "1.2.0rc9",
                    "run_id": 3,
                    "score_ms": 1.0,
                    "tokens_per_s_per_gpu": 32000.0,
                    "change_pct_vs_prev": None,
                }
            ],
        }
    )

    by: str = Field(description="version or run")
    repeats: str
    dispatch: Dispatch
    provenance: Provenance
    versions: list[VersionRow]
    items: list[HistoryRow]


class FrontierPoint(Row):
    trtllm_version: str | None = None
    score_ms: float | None = Field(None, description="ms")
    tokens_per_s_per_gpu: float | None = None


class HistoryFrontier(Table):
    """Frontier points per slice and version."""

    model_config = examples(
        {
            "dispatch": DISPATCH_EXAMPLE,
            "provenance": PROVENANCE_EXAMPLE,
            "versions": [_VERSION],
            "x": "score_ms",
            "y": "tokens_per_s_per_gpu",
            "items": [
                {
                    "trtllm_version": "1.2.0rc9",
                    "score_ms": 1.0,
                    "tokens_per_s_per_gpu": 32000.0,
                }
            ],
        }
    )

    dispatch: Dispatch
    provenance: Provenance
    versions: list[VersionRow]
    x: str
    y: str
    items: list[FrontierPoint]


class SliceChange(Open):
    slice: dict[str, Any] = Field(description="model, hardware, quant, world_size, phase")
    summary: dict[str, Any] = Field(
        description="Points, min latency (ms), max tokens/s/GPU per side; throughput, "
        "latency and hypervolume change (%)"
    )
    at_latency: list[Row] = Field(description="Throughput change at fixed latencies")
    at_throughput: list[Row] = Field(description="Latency change at fixed throughputs")


class FrontierChange(Open):
    """Frontier change between two versions, per slice."""

    model_config = examples(
        {
            **_SIDES,
            "dispatch": DISPATCH_EXAMPLE,
            "provenance": _SIDE_PROV,
            "method": "step frontier; medians over breakpoints",
            "slices": [
                {
                    "slice": {**_CELL, "phase": "decode"},
                    "summary": {"throughput_change_pct": 11.1, "latency_change_pct": 10.0},
                    "at_latency": [
                        {
                            "latency_ms": 1.1,
                            "base_tps": 32000.0,
                            "head_tps": 29090.9,
                            "change_pct": -9.1,
                        }
                    ],
                    "at_throughput": [],
                }
            ],
        }
    )

    base: Side
    head: Side
    dispatch: Dispatch
    provenance: SideProvenance
    method: str
    slices: list[SliceChange]
