"""Answers of /health, /coverage and /runs*: stored runs, their candidates, uploads."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from api.schemas.common import Open, Page, Row, examples

_RUN: dict[str, Any] = {
    "run_id": 1,
    "upload_id": 1,
    "sweep_key": "",
    "source_format": "bench_moe",
    "model": "deepseek_v4_pro",
    "num_experts": 384,
    "top_k": 6,
    "hidden_size": 7168,
    "quant": "NVFP4",
    "hardware": "GB300",
    "world_size": 8,
    "trtllm_version": "v1.3.0rc26",
    "trtllm_commit": None,
    "run_date": "2026-09-13",
    "synthetic": False,
    "dispatch": None,
    "n_candidates": 7,
    "n_success": 5,
    "n_failed": 1,
    "n_skipped": 1,
    "created_at": "2026-12-02T06:20:01.022436+00:00",
}


_BYTES = {"type": "string", "format": "binary"}
RAW_UPLOAD: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The bytes as uploaded: a JSON report (as sent, so it may hold "
        "NaN or Infinity), or CSV rows for a dashboard-format run",
        "content": {
            "application/json": {"schema": {}, "example": {"meta": {}, "results": []}},
            "text/csv": {"schema": _BYTES},
        },
    }
}
RAW_SIGHTING: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The bytes the arrival came with",
        "content": {"application/octet-stream": {"schema": _BYTES}},
    }
}


class ParsePool(Open):
    """The upload parse pool (the one answer FastAPI validates: extras kept)."""

    size: int = Field(description="Worker processes the pool keeps at most")
    ready: int = Field(description="Workers started and waiting or working now")


class Health(Open):
    """Liveness: the database answered."""

    model_config = examples(
        {"status": "ok", "database": "duckdb", "schema_version": 7, "parse_pool": None}
    )

    status: str = Field(description='Always "ok" (a failing database answers 503)')
    database: str = Field(description="duckdb or postgresql")
    schema_version: int = Field(description="Migration revision number of the store")
    parse_pool: ParsePool | None = Field(
        description="The upload parse pool's workers (null: uploads parse in the server)"
    )


class CoverageRow(Row):
    model: str
    hardware: str
    quant: str
    world_size: int
    synthetic: bool | None = None
    runs: int = Field(description="Stored runs")
    candidates: int = Field(description="Stored candidate rows")
    workloads: int = Field(description="Distinct num_tokens measured")


class Coverage(Open):
    """What is stored, per model x hardware x quant x world size."""

    model_config = examples(
        {
            "items": [
                {
                    "model": "deepseek_v4_pro",
                    "hardware": "GB300",
                    "quant": "NVFP4",
                    "world_size": 8,
                    "synthetic": False,
                    "runs": 5,
                    "candidates": 39,
                    "workloads": 5,
                }
            ]
        }
    )

    items: list[CoverageRow]


class RunRow(Row):
    """A stored run: the sweep's metadata and its candidate counts."""

    run_id: int
    upload_id: int
    sweep_key: str | None = Field(None, description="Which sweep of the upload ('' if one)")
    source_format: str | None = Field(
        None, description="bench_moe, bench_moe_legacy or nvidia_dashboard"
    )
    model: str | None = None
    num_experts: int | None = None
    top_k: int | None = None
    quant: str | None = None
    hardware: str | None = None
    world_size: int | None = None
    trtllm_version: str | None = None
    trtllm_commit: str | None = None
    run_date: str | None = Field(None, description="YYYY-MM-DD")
    synthetic: bool | None = None
    dispatch: str | None = Field(None, description="Routing pattern label (null: balanced)")
    n_candidates: int | None = None
    n_success: int | None = None
    n_failed: int | None = None
    n_skipped: int | None = None


class RunPage(Page):
    """Runs, newest first."""

    model_config = examples({"total": 8, "limit": 1, "offset": 0, "items": [_RUN]})

    items: list[RunRow]


class Sighting(Row):
    """A later arrival of the run's upload (same bytes, or the same measurements)."""

    sighting_id: int
    sha256: str | None = None
    same_bytes: bool | None = None
    n_seen: int | None = Field(None, description="Arrivals counted")
    bytes_kept: bool | None = Field(None, description="Other bytes stored (see /raw)")


class Run(RunRow):
    """One run with its upload's metadata, its decoded JSON blocks and its sightings."""

    model_config = examples(
        {
            **_RUN,
            "filename": "report.json",
            "sha256": "5e7d53576e27a053cb1bca240d51bf7ce376826bae45a2d03a22485587ec62b1",
            "size_bytes": 18211,
            "uploaded_at": "2026-12-02T06:20:01.022436+00:00",
            "uploaded_by": "ci",
            "sightings": [],
            "blocks": {"model": {"name": "deepseek_v4_pro", "swiglu_limit": "Infinity"}},
        }
    )

    filename: str | None = None
    sha256: str | None = Field(None, description="SHA-256 of the uploaded bytes")
    size_bytes: int | None = Field(None, description="Size of the upload in bytes")
    uploaded_by: str | None = Field(None, description="Name of the token that uploaded it")
    sightings: list[Sighting] = Field(description="Later arrivals, oldest first")
    blocks: dict[str, Any] = Field(
        description="The report's JSON blocks (model, environment, search …), decoded"
    )


class CandidateRow(Row):
    """One measured (or skipped / failed) configuration of a run."""

    run_id: int
    candidate_index: int
    num_tokens: int | None = None
    parallel_mode: str | None = None
    moe_ep_size: int | None = None
    moe_tp_size: int | None = None
    backend: str | None = None
    comm: str | None = None
    cuda_graph: bool | None = None
    status: str | None = Field(None, description="success, skipped or failed")
    failure_category: str | None = None
    score_ms: float | None = Field(None, description="bench_moe score, ms (lower is better)")


class CandidatePage(Page):
    """Candidates of a run in the order asked for."""

    model_config = examples(
        {
            "total": 7,
            "limit": 1,
            "offset": 0,
            "items": [
                {
                    "run_id": 1,
                    "candidate_index": 0,
                    "num_tokens": 256,
                    "parallel_mode": "DEP",
                    "moe_ep_size": 8,
                    "moe_tp_size": 1,
                    "backend": "TRTLLM",
                    "comm": "NVLINK_ONE_SIDED",
                    "cuda_graph": True,
                    "status": "success",
                    "failure_category": None,
                    "score_ms": 1.0,
                }
            ],
        }
    )

    items: list[CandidateRow]


class StoredUpload(BaseModel):
    upload_id: int
    sha256: str


class SightingRef(BaseModel):
    sighting_id: int
    n_seen: int


class UploadRun(BaseModel):
    run_id: int
    sweep_key: str
    n_candidates: int
    created: bool = Field(description="False when the run was already stored")
    url: str = Field(description="Where to GET the run")


class UploadResult(Open):
    """What an upload stored (201) or found already stored (200)."""

    model_config = examples(
        {
            "already_existed": False,
            "same_measurements_other_bytes": False,
            "upload_id": 3,
            "sha256": "9f2c…",
            "stored_upload": None,
            "differing_fields": [],
            "sighting": None,
            "n_candidates": 40,
            "run_ids": [3],
            "regressions": [],
            "errors": [],
            "runs": [
                {
                    "run_id": 3,
                    "sweep_key": "",
                    "n_candidates": 40,
                    "created": True,
                    "url": "http://localhost:8050/api/v1/runs/3",
                }
            ],
        }
    )

    already_existed: bool = Field(description="These bytes (or measurements) were stored")
    same_measurements_other_bytes: bool
    upload_id: int
    sha256: str = Field(description="SHA-256 of the bytes sent")
    stored_upload: StoredUpload | None = Field(
        description="The stored upload with the same measurements, when the bytes differ"
    )
    differing_fields: list[str] = Field(description="Metadata fields that differ from it")
    sighting: SightingRef | None = Field(description="This arrival, when it was a repeat")
    n_candidates: int
    run_ids: list[int]
    regressions: list[dict[str, Any]] = Field(
        description="Regressions of the new runs against the latest earlier version"
    )
    errors: list[str] = Field(description="Checks that failed after storing (not fatal)")
    runs: list[UploadRun]
