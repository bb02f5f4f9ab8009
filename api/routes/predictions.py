"""/api/v1/predictions: scores for workloads not measured, with intervals; and how such
answers have fared on the stored data (``/predictions/validation``).

Thin handlers over :mod:`service.predictions`; a cell or world size the store cannot
answer is a 404 naming the parameter, in the API's error envelope."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import Field

from api.auth import require_read
from api.jsonio import FastJSONResponse
from api.routes.analysis import Data, _answer
from api.schemas.common import Open, examples
from api.schemas.errors import read_errors
from service import predictions as S

router = APIRouter(tags=["predictions"], dependencies=[Depends(require_read)])

Model = Annotated[str, Query(min_length=1, max_length=64, description="bench_moe model name")]
Hardware = Annotated[str, Query(min_length=1, max_length=32, description="GB300, B300, H200 …")]
Quant = Annotated[str, Query(min_length=1, max_length=32, description="NVFP4, FP8 …")]
Confidence = Annotated[
    float, Query(ge=0.5, le=0.99, description="coverage the intervals are calibrated for")
]


class PredictionAnswer(Open):
    """One workload's answer: per configuration a score (predicted or measured) with its
    interval and P(fastest), the pick, the measured neighbours."""

    model_config = examples(
        {
            "cell": {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"},
            "workload": {"num_tokens": 3000, "world_size": 8, "dispatch": "balanced"},
            "kind": "predicted",
            "pick": "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1",
            "verdict": "tie: either",
            "confidence": 0.9,
            "below": {"num_tokens": 2048, "best": "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1"},
            "above": {"num_tokens": 4096, "best": "CUTLASS · NVLINK_ONE_SIDED · DEP EP8 TP1"},
            "notes": [],
            "method": "…",
            "items": [],
        }
    )

    kind: str = Field(description="measured (the token count was measured) or predicted")
    pick: str = Field(description="the configuration with the smallest score")
    verdict: str = Field(
        description="deploy / tie: either / measure first (analysis.confidence): how far "
        "to trust the pick"
    )
    confidence: float = Field(description="coverage the intervals are calibrated for")
    items: list[dict[str, Any]] = Field(
        description="per configuration: its columns, config, kind, score_ms, lo_ms, hi_ms "
        "(the interval), p_fastest, n_token_counts; fastest first"
    )


class ValidationAnswer(Open):
    """Leave-one-token-count-out validation of one cell."""

    model_config = examples(
        {
            "cell": {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"},
            "confidence": 0.9,
            "summary": {"n_queries": 32, "coverage": 0.91},
            "items": [],
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
    measure_next: list[dict[str, Any]] = Field(
        description="what to measure next: unmeasured token counts ranked by the expected "
        "regret of their predicted pick (world_size, num_tokens, pick, p_fastest, "
        "expected_regret_pct, extrapolated, the bench_moe command)"
    )


@router.get(
    "/predictions",
    summary="Each configuration's score at an unmeasured token count, with an interval",
    response_model=PredictionAnswer,
    responses=read_errors(),
)
def predictions(
    data: Data,
    model: Model,
    hardware: Hardware,
    quant: Quant,
    num_tokens: Annotated[int, Query(ge=1, le=10_000_000)],
    world_size: Annotated[int, Query(ge=1, le=4096)],
    dispatch: Annotated[str | None, Query(max_length=64)] = None,
    confidence: Confidence = 0.9,
) -> Response:
    return FastJSONResponse(
        _answer(
            lambda: S.prediction(
                data, model, hardware, quant, num_tokens, world_size, dispatch, confidence
            )
        )
    )


@router.get(
    "/predictions/validation",
    summary="How the predictions fared on held-out token counts of one cell",
    response_model=ValidationAnswer,
    responses=read_errors(),
)
def predictions_validation(
    data: Data, model: Model, hardware: Hardware, quant: Quant, confidence: Confidence = 0.9
) -> Response:
    return FastJSONResponse(_answer(lambda: S.validation(data, model, hardware, quant, confidence)))
