"""Answers of /predictions*: scores for workloads not measured, with intervals, and how
such answers fared on the stored data."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api.schemas.common import Open, examples


class MeasureShape(Open):
    """How to measure a model given by its shape with bench_moe."""

    command: str = Field(
        description="the bench_moe command line: the GPU's launcher, --world_size, the model "
        "(--model PRESET, or the shape flags), --quant, every --parallel_mode of the attention "
        "family, --search backend comm, --balanced_total_num_tokens <num_tokens>, "
        "--no_cuda_graph for prefill, --use_low_precision_moe_combine (as the stored sweeps "
        "ran) and --output_file",
        examples=[
            "PYTHONPATH=tests/microbenchmarks:${PYTHONPATH:-} mpirun … -np 8 python3 -m "
            "bench_moe --world_size 8 --num_experts 512 --top_k 10 --hidden_size 4096 "
            "--intermediate_size 1024 --routing_method RENORMALIZE --quant NVFP4 …"
        ],
    )
    preset: str | None = Field(
        description="the bench_moe built-in model (--model) whose shape this is; null: no "
        "preset has it, the shape flags describe the model",
        examples=[None, "glm_5"],
    )
    model_args: str = Field(
        description="the arguments that describe the model: --model PRESET, or --num_experts "
        "--top_k --hidden_size --intermediate_size with --routing_method RENORMALIZE (bench_moe "
        "requires a routing method for a custom shape and a shape does not name one: pass the "
        "model's own when it has one -- DEEPSEEK_V3 also needs --n_group and --topk_group)",
        examples=["--model glm_5"],
    )


class PredictionAnswer(Open):
    """One workload's answer: per configuration a score (predicted or measured) with its
    interval and P(fastest), the pick, the measured neighbours."""

    model_config = examples(
        {
            "cell": {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"},
            "workload": {
                "num_tokens": 3000,
                "world_size": 8,
                "dispatch": "balanced",
                "attention": "dp",
                "phase": "decode",
            },
            "kind": "predicted",
            "pick": "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1",
            "verdict": "tie: either",
            "confidence": 0.9,
            "below": {"num_tokens": 2048, "best": "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1"},
            "above": {"num_tokens": 4096, "best": "CUTLASS · NVLINK_ONE_SIDED · DEP EP8 TP1"},
            "split": {
                "below": {
                    "num_tokens": 2048,
                    "best": "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1",
                    "best_ms": 0.41,
                    "other_ms": 0.43,
                },
                "above": {
                    "num_tokens": 4096,
                    "best": "CUTLASS · NVLINK_ONE_SIDED · DEP EP8 TP1",
                    "best_ms": 0.70,
                    "other_ms": 0.72,
                },
                "crossover_tokens": 2896.3,
                "command": "mpirun -n 8 … --balanced_total_num_tokens 2435 2896 3000 3444 …",
            },
            "notes": [],
            "method": "…",
            "items": [],
        }
    )

    kind: str = Field(description="measured (the token count was measured) or predicted")
    source: str | None = Field(
        None,
        description="shape model: answered by the model across shapes (a model given by "
        "its shape, or a world size the cell did not measure); absent: the cell's curves",
    )
    pick: str = Field(description="the configuration with the smallest score")
    verdict: str = Field(
        description="deploy / tie: either / measure first (analysis.confidence): how far "
        "to trust the pick"
    )
    confidence: float = Field(description="coverage the intervals are calibrated for")
    workload: dict[str, Any] = Field(
        description="num_tokens, world_size, dispatch, attention (dp/tp) and phase "
        "(decode/prefill) the answer is for"
    )
    split: dict[str, Any] | None = Field(
        None,
        description="when the measured neighbours below and above have different winners: "
        "both (num_tokens, best, best_ms, other_ms = the other winner's score there, null "
        "when the source did not keep it), crossover_tokens (where their log-log segments "
        "cross; null when unknown) and the bench_moe command that settles it",
    )
    measure: MeasureShape | None = Field(
        None,
        description="GET /predictions/shape only: the bench_moe command that would measure "
        "the asked shape at the asked workload, so the prediction can be replaced by a "
        "measurement",
    )
    items: list[dict[str, Any]] = Field(
        description="per configuration: its columns, config, kind, score_ms, lo_ms, hi_ms "
        "(the interval, ms; null beyond the 32 configurations that can be the pick), "
        "p_fastest, n_token_counts, neighbour_ms (log-log between the measured neighbours, "
        "ms), picked; the pick first"
    )


class ValidationAnswer(Open):
    """Leave-one-token-count-out validation of one cell."""

    model_config = examples(
        {
            "cell": {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"},
            "confidence": 0.9,
            "summary": {"n_queries": 32, "coverage": 0.91},
            "items": [],
            "leave_one_model_out": {"summary": {}, "items": []},
            "measure_next": [],
        }
    )

    confidence: float = Field(description="coverage the intervals are calibrated for")
    summary: dict[str, Any] = Field(
        description="n_queries; predicted and nearest: n, median/p90/worst regret (%), "
        "wrong picks; coverage (share of held-out scores inside their interval)"
    )
    items: list[dict[str, Any]] = Field(
        description="per held-out query: world_size, dispatch, num_tokens, n_predicted, "
        "n_measured, regret_pct, nearest_tokens, nearest_regret_pct, n_covered, edge"
    )
    leave_one_model_out: dict[str, Any] = Field(
        description="the cell's GPU and quant, each stored model held out in turn and "
        "answered by the shape model: summary (predicted, tree, nearest model: n, censored, "
        "median/p90/worst regret %, wrong picks; paired with the tree; coverage) and this "
        "model's held-out workloads"
    )
    measure_next: list[dict[str, Any]] = Field(
        description="what to measure next: unmeasured token counts ranked by the expected "
        "regret of their predicted pick (world_size, num_tokens, pick, p_fastest, "
        "expected_regret_pct, extrapolated, the bench_moe command)"
    )
