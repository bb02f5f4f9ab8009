"""Answers of /pareto, /best and /agreement."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from api.schemas.common import (
    DISPATCH_EXAMPLE,
    PROVENANCE_EXAMPLE,
    Dispatch,
    Provenance,
    Row,
    Table,
    examples,
)

_CELL: dict[str, Any] = {
    "model": "deepseek_v4_pro",
    "hardware": "GB300",
    "quant": "NVFP4",
    "world_size": 8,
}


class Answer(Table):
    """An analysis answer: where it came from and which routing pattern it covers."""

    provenance: Provenance
    dispatch: Dispatch | None = Field(description="Routing pattern covered")
    repeats: str = Field(description="median (of repeat runs), latest or per_run")


class ParetoPoint(Row):
    """A frontier point: a measured configuration no other one beats on both axes."""

    score_ms: float | None = Field(None, description="Latency, ms (median over repeats)")
    tokens_per_s_per_gpu: float | None = Field(None, description="Throughput, tokens/s/GPU")
    num_tokens: int | None = None
    activated_tokens_per_rank: float | None = Field(None, description="Tokens per rank")
    backend: str | None = None
    comm: str | None = None
    run_id: int | None = None
    candidate_index: int | None = None


class Pareto(Answer):
    """The Pareto frontier per slice (model, hardware, quant, world size, phase)."""

    model_config = examples(
        {
            "x": "score_ms",
            "y": "tokens_per_s_per_gpu",
            "provenance": PROVENANCE_EXAMPLE,
            "dispatch": DISPATCH_EXAMPLE,
            "repeats": "median",
            "items": [
                {
                    **_CELL,
                    "phase": "decode",
                    "score_ms": 0.8,
                    "tokens_per_s_per_gpu": 40000.0,
                    "num_tokens": 256,
                    "activated_tokens_per_rank": 192.0,
                    "backend": "MEGAMOE_CUTEDSL",
                    "comm": "NONE",
                    "run_id": 1,
                    "candidate_index": 1,
                }
            ],
        }
    )

    x: str = Field(description="x axis: score_ms or activated_tokens_per_rank")
    y: str = Field(description="y axis: tokens_per_s_per_gpu")
    items: list[ParetoPoint]


class BestRow(Row):
    """The best configuration of a workload, its runner-up and the margin between them."""

    num_tokens: int | None = None
    best_backend: str | None = None
    best_comm: str | None = None
    best_parallel_mode: str | None = None
    best_score_ms: float | None = Field(None, description="ms")
    runner_up_backend: str | None = None
    runner_up_score_ms: float | None = Field(None, description="ms")
    margin_pct: float | None = Field(None, description="Runner-up slower by this %")
    noise_band_pct: float | None = Field(None, description="Run-to-run noise, %")
    is_tie: bool | None = Field(None, description="Margin within the noise band")
    measured: bool | None = Field(None, description="The winner was measured (always on Best)")
    confidence: Literal["deploy", "tie: either", "measure first"] | None = Field(
        None,
        description="deploy: the margin is beyond what a re-run could give; tie: either: "
        "inside it; measure first: too little evidence (analysis.confidence)",
    )
    evidence_runs: int | None = Field(None, description="Runs behind the winner's score")
    evidence_versions: str | None = Field(None, description="Their TensorRT-LLM version(s)")
    evidence_date: str | None = Field(None, description="Newest run date among them")
    top3_only: bool | None = Field(
        None, description="The source keeps the top 3 per workload only (NVIDIA's dashboard)"
    )
    confidence_note: str | None = Field(
        None, description="The confidence panel in one line, as the page and export say it"
    )


class Best(Answer):
    """The best configuration per workload."""

    model_config = examples(
        {
            "grouping": "dashboard",
            "provenance": PROVENANCE_EXAMPLE,
            "dispatch": DISPATCH_EXAMPLE,
            "repeats": "median",
            "items": [
                {
                    **_CELL,
                    "num_tokens": 256,
                    "best_backend": "MEGAMOE_CUTEDSL",
                    "best_comm": "NONE",
                    "best_parallel_mode": "DEP",
                    "best_score_ms": 0.8,
                    "runner_up_backend": "TRTLLM",
                    "runner_up_score_ms": 1.0,
                    "margin_pct": 25.0,
                    "noise_band_pct": 3.1,
                    "is_tie": False,
                    "measured": True,
                    "confidence": "deploy",
                    "evidence_runs": 3,
                    "evidence_versions": "1.3.0rc26",
                    "evidence_date": "2026-10-03",
                    "top3_only": False,
                    "confidence_note": "deploy; margin 25.0 % beyond the noise band 3.1 % "
                    "(repeats); 3 runs; TensorRT-LLM 1.3.0rc26 (2026-10-03); measured",
                }
            ],
        }
    )

    grouping: str = Field(description="dashboard (per workload) or bench_moe (per run)")
    items: list[BestRow]


class AgreementRow(Row):
    """Summary per model x hardware x phase (``detail=true``: one row per workload)."""

    model: str | None = None
    hardware: str | None = None
    phase: str | None = None
    n_workloads: int | None = None
    n_pick_measured: int | None = Field(
        None, description="Workloads where the tree's pick was measured (compared)"
    )
    agreement_pct: float | None = Field(
        None, description="% of measured picks where they agree (null: nothing compared, N/A)"
    )
    median_regret_pct: float | None = Field(None, description="Tree pick slower by, %")


class Agreement(Answer):
    """Tree pick vs measured best over every stored workload."""

    model_config = examples(
        {
            "provenance": PROVENANCE_EXAMPLE,
            "dispatch": DISPATCH_EXAMPLE,
            "repeats": "median",
            "compares": "backend and comm",
            "items": [
                {
                    "model": "deepseek_v4_pro",
                    "hardware": "GB300",
                    "phase": "decode",
                    "n_workloads": 2,
                    "n_pick_measured": 2,
                    "agreement_pct": 50.0,
                    "median_regret_pct": 12.0,
                }
            ],
        }
    )

    compares: str = Field(description="What must agree")
    items: list[AgreementRow]
