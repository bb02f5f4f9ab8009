"""Answers of /recommendation, /export and a candidate's export: what to deploy."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from api.schemas.common import DISPATCH_EXAMPLE, Dispatch, Open, examples

_CELL: dict[str, Any] = {
    "model": "deepseek_v4_pro",
    "hardware": "GB300",
    "quant": "NVFP4",
    "world_size": 8,
}
_PICK: dict[str, Any] = {
    "parallel_mode": "DEP",
    "moe_ep_size": 8,
    "moe_tp_size": 1,
    "backend": "TRTLLM",
    "comm": "AUTO",
    "force_comm": False,
    "expected_comm": "NVLINK_ONE_SIDED",
    "phase": "decode",
    "activated_tokens_per_rank": 192.0,
    "dispatch_kb": 672.0,
    "in_guide_coverage": True,
    "coverage": "inside the guide's coverage",
    "notes": [],
    "path": [
        {
            "step": "phase",
            "question": "decode or prefill?",
            "answer": "decode",
            "threshold_name": None,
            "threshold_value": None,
            "observed": None,
        }
    ],
    "env": None,
    "low_precision_combine": None,
}
_TOKENS = "How num_tokens was computed from concurrency / max_num_tokens (null: given)"


class TreeStep(Open):
    step: str
    question: str
    answer: str
    threshold_name: str | None
    threshold_value: float | None
    observed: float | None


class Pick(Open):
    """A configuration to deploy: the guide's tree walked, or the measured best."""

    parallel_mode: str
    moe_ep_size: int
    moe_tp_size: int
    backend: str
    comm: str = Field(description="The comm to set (AUTO: let TensorRT-LLM pick)")
    force_comm: bool = Field(description="TRTLLM_FORCE_COMM_METHOD needed")
    expected_comm: str | None = Field(description="The comm AUTO is expected to pick")
    phase: str
    activated_tokens_per_rank: float | None = Field(description="Tokens per rank")
    dispatch_kb: float | None = Field(description="Dispatch size per rank, KiB")
    in_guide_coverage: bool
    coverage: str = Field(
        description="The coverage sentence the page and the YAML comment show (one answer)"
    )
    notes: list[str]
    path: list[TreeStep] = Field(description="The tree's questions and answers, in order")
    env: str | None = Field(description="The environment line to set (null: none)")
    low_precision_combine: bool | None


class TokenCount(Open):
    num_tokens: int
    phase: str
    tokens_per_rank: float | None
    attention_dp_ranks: int | None
    batch_per_rank: float | None
    batch_per_rank_padded: float | None
    cuda_graph: bool | None
    formula: str
    notes: list[str]


class Measured(Pick):
    """The measured best at the nearest stored workload."""

    measured_num_tokens: int
    exact: bool = Field(description="Measured at the asked num_tokens")
    score_ms: float | None = Field(description="ms")
    runner_up_score_ms: float | None = Field(description="ms")
    margin_pct: float | None
    n_candidates: int
    provenance: dict[str, Any]
    agrees_with_tree: bool | None


class Neighbour(Open):
    """A measured workload next to the asked one."""

    num_tokens: int = Field(description="tokens")
    pick: str = Field(description="backend · comm · parallel mode")
    score_ms: float = Field(description="ms")
    verdict: str = Field(description="deploy / tie: either / measure first, at that count")
    note: str = Field(description="Its confidence note, as the Best table gives it")


class Confidence(Open):
    """The confidence panel: measured or not at the asked workload, the plain verdict
    and its reasons, in the Best table's words."""

    measured: bool = Field(description="The asked num_tokens itself was measured")
    verdict: Literal["deploy", "tie: either", "measure first"]
    note: str = Field(description="Margin vs noise band and its source, runs, versions, date")
    neighbours: list[Neighbour] = Field(
        description="Not measured: the measured token counts below and above"
    )
    disagree: bool = Field(description="The neighbours pick different configurations")
    crossover: list[int] | None = Field(
        description="Token counts (below, above) a switch lies between, when they disagree"
    )
    command: str | None = Field(description="The bench_moe command that measures the asked count")


class Recommendation(Open):
    """The guide's tree and the measured best for one deployment."""

    model_config = examples(
        {
            "deployment": {**_CELL, "attention": "dp", "phase": "decode", "num_tokens": 256},
            "num_tokens_from": None,
            "thresholds": "published",
            "dispatch": DISPATCH_EXAMPLE,
            "repeats": "median",
            "tree": _PICK,
            "measured": None,
            "agreement": None,
            "confidence": None,
            "capability_conflicts": [],
        }
    )

    deployment: dict[str, Any] = Field(description="The request, with the model's shape")
    num_tokens_from: TokenCount | None = Field(description=_TOKENS)
    thresholds: str = Field(description="published, derived or validated")
    dispatch: Dispatch | None
    repeats: str
    tree: Pick = Field(description="What the guide's decision tree advises")
    measured: Measured | None = Field(description="The measured best (null: none stored)")
    agreement: dict[str, Any] | None = Field(description="Tree vs measured, one row")
    confidence: Confidence | None = Field(
        None, description="How far the measured pick can be trusted (null: nothing stored)"
    )
    capability_conflicts: list[str] = Field(
        description="Where the stored measurements contradict the hand tables for this "
        "hardware (the answers use the data)"
    )


class ExportProvenance(Open):
    run_ids: list[int]
    trtllm_version: str | None
    produced_by: str
    confidence: str | None = Field(
        None,
        description="The confidence panel in one line (measured source): deploy / tie: "
        "either / measure first and why, as on the page and in the YAML's comments",
    )


class LaunchWorker(Open):
    """One trtllm-serve worker of the launch: its ``extra_llm_api_options`` document (as
    a dict and as the YAML text), command line and environment."""

    role: str = Field(description="prefill | decode")
    options: dict[str, Any] = Field(description="extra_llm_api_options document")
    yaml: str = Field(description="The options document as YAML, with its # comments")
    command: str = Field(description="trtllm-serve command line, environment included")
    environment: dict[str, str] = Field(description="Variables to set (TRTLLM_FORCE_COMM_METHOD)")
    warnings: list[str]


class Export(Pick):
    """The recommended configuration (``format=json``)."""

    model_config = examples(
        {
            **_PICK,
            "warnings": [],
            "num_tokens": 256,
            "num_tokens_from": None,
            "dispatch": None,
            "provenance": {
                "run_ids": [],
                "trtllm_version": None,
                "produced_by": "moedash decision tree (published thresholds)",
            },
            "release": "1.3.0rc26",
            "workers": [],
            "capability_conflicts": [],
        }
    )

    warnings: list[str] = Field(description="Capability warnings of this TensorRT-LLM")
    release: str = Field(description="TensorRT-LLM release the options were checked for")
    workers: list[LaunchWorker] = Field(
        description="the workers to launch: one, or prefill then decode (disaggregated)"
    )
    capability_conflicts: list[str] = Field(
        description="Where the stored measurements contradict the hand tables for this "
        "hardware (the answers use the data)"
    )
    num_tokens: int
    num_tokens_from: TokenCount | None = Field(description=_TOKENS)
    dispatch: Dispatch | None
    provenance: ExportProvenance


class CapabilityRow(Open):
    hardware: str
    world_size: int
    quant: str
    backend: str
    comm: str
    n_success: int = Field(description="Measurement rows with status success")
    n_runs: int


class CapabilityConflict(Open):
    hardware: str
    subject: str = Field(description="mnnvl, or backend <NAME> x <quant>")
    table: str = Field(description="What the hand table says")
    data: str = Field(description="What ran, with world sizes")
    used: str = Field(description="Which one the answers use (always data)")


class Capabilities(Open):
    """What ran (status success) per hardware x world size x quant x backend x comm, and
    where that contradicts the hand tables."""

    model_config = examples(
        {
            "items": [
                {
                    "hardware": "B300",
                    "world_size": 8,
                    "quant": "NVFP4",
                    "backend": "CUTLASS",
                    "comm": "NVLINK_ONE_SIDED",
                    "n_success": 12,
                    "n_runs": 1,
                }
            ],
            "conflicts": [
                {
                    "hardware": "B300",
                    "subject": "mnnvl",
                    "table": "the hand table lists no MNNVL for B300",
                    "data": "NVLINK_ONE_SIDED at world size 4, 8 ran successfully",
                    "used": "data",
                }
            ],
        }
    )

    items: list[CapabilityRow] = Field(description="What ran, one row per key")
    conflicts: list[CapabilityConflict] = Field(
        description="Where the data contradicts the hand tables (the answers use the data)"
    )


class CandidateExport(BaseModel):
    """One measured candidate as trtllm-serve files (``format=json``)."""

    model_config = examples(
        {
            "run_id": 1,
            "candidate_index": 1,
            "yaml": "moe_config:\n  backend: MEGAMOE_CUTEDSL\n",
            "yaml_filename": "moe_config_deepseek_v4_pro_GB300_NVFP4_ws8_256tok_run1_cand1.yaml",
            "env": "# comm stays AUTO\n",
            "env_filename": "moe_config_deepseek_v4_pro_GB300_NVFP4_ws8_256tok_run1_cand1.env",
            "warnings": [],
        }
    )

    run_id: int
    candidate_index: int
    yaml: str = Field(description="The --extra_llm_api_options file")
    yaml_filename: str
    env: str = Field(description="The TRTLLM_FORCE_COMM_METHOD line (a comment for AUTO)")
    env_filename: str
    warnings: list[str]
