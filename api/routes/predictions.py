"""/api/v1/predictions: scores for workloads not measured, with intervals; and how such
answers have fared on the stored data (``/predictions/validation``).

Thin handlers over :mod:`service.predictions`; a cell or world size the store cannot
answer is a 404 naming the parameter, in the API's error envelope."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from api.auth import require_read
from api.jsonio import FastJSONResponse
from api.routes.analysis import Data, _answer
from api.schemas.errors import read_errors
from api.schemas.predictions import PredictionAnswer, ValidationAnswer
from service import predictions as S
from service import predictions_shape as SX
from service.scope import Attention, Phase

router = APIRouter(tags=["predictions"], dependencies=[Depends(require_read)])

Model = Annotated[str, Query(min_length=1, max_length=64, description="bench_moe model name")]
Hardware = Annotated[str, Query(min_length=1, max_length=32, description="GB300, B300, H200 …")]
Quant = Annotated[str, Query(min_length=1, max_length=32, description="NVFP4, FP8 …")]
Confidence = Annotated[
    float, Query(ge=0.5, le=0.99, description="coverage the intervals are calibrated for")
]


@router.get(
    "/predictions",
    summary="Each configuration's score at an unmeasured token count or world size, with an "
    "interval",
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
    attention: Annotated[
        Attention | None, Query(description="dp or tp (unset: the one measured, dp first)")
    ] = None,
    phase: Annotated[
        Phase | None,
        Query(description="decode = CUDA graph on, prefill = off (unset: decode first)"),
    ] = None,
) -> Response:
    return FastJSONResponse(
        _answer(
            lambda: S.prediction(
                data,
                model,
                hardware,
                quant,
                num_tokens,
                world_size,
                dispatch,
                confidence,
                attention,
                phase,
            )  # fmt: skip
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


@router.get(
    "/predictions/shape",
    summary="Each configuration's predicted score for a model given by its shape",
    response_model=PredictionAnswer,
    responses=read_errors(),
)
def predictions_shape(
    data: Data,
    hardware: Hardware,
    quant: Quant,
    num_experts: Annotated[int, Query(ge=1, le=65536, description="routed experts")],
    top_k: Annotated[int, Query(ge=1, le=1024, description="experts per token")],
    hidden_size: Annotated[int, Query(ge=1, le=1_000_000)],
    intermediate_size: Annotated[int, Query(ge=1, le=1_000_000, description="per expert")],
    num_tokens: Annotated[int, Query(ge=1, le=10_000_000)],
    world_size: Annotated[int, Query(ge=1, le=4096)],
    attention: Annotated[Attention | None, Query(description="dp (default) or tp")] = None,
    phase: Annotated[Phase | None, Query(description="decode (default) or prefill")] = None,
    confidence: Confidence = 0.9,
) -> Response:
    shape = (num_experts, top_k, hidden_size, intermediate_size)
    return FastJSONResponse(
        _answer(
            lambda: SX.shape_prediction(
                data, hardware, quant, shape, world_size, num_tokens, attention, phase, confidence
            )
        )
    )
