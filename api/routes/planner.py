"""/api/v1/planner: MegaScale-Infer-style disaggregated deployment plans.

``GET /planner/catalog`` lists the editable model and GPU catalogues (with which stored
sweeps can fit Te for each model), ``POST /planner/plan`` runs the planner on a JSON
body and ``GET /planner/plan`` is the same with a few query parameters. Both plan
endpoints return one payload (``service.planner.run_plan``, which the /planner page
renders too); ``download=true`` adds a ``Content-Disposition`` header so a browser saves
it as ``plan-….json``.

Every search is bounded: ``service.planner_request.resolve`` estimates its work and
answers 422 (naming the field to reduce) over the cap, and ``run_plan`` stops at an
evaluation and wall-clock budget with ``truncated: true``. The search runs in the
thread pool, never on the event loop (health checks keep answering), and is cancelled
when the client disconnects.
"""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import StringConstraints, ValidationError
from starlette.concurrency import run_in_threadpool

from api.auth import get_store, require_read
from api.jsonio import FastJSONResponse
from api.routes.runs import error
from api.schemas.errors import JSON_BODY_400, READ, READ_NO_PARAMS, errors
from api.schemas.planner import Catalog, Plan
from db.store import Store
from service.planner import catalog, export_filename, run_plan, store_loader
from service.planner_request import (
    MAX_GPUS,
    NAME_PATTERN,
    FitIn,
    OptionsIn,
    PlanInputError,
    PlanRequest,
    WorkloadIn,
)

router = APIRouter(prefix="/planner", tags=["planner"])
StoreDep = Annotated[Store, Depends(get_store)]


@router.get(
    "/catalog",
    summary="Planner models and GPUs",
    dependencies=[Depends(require_read)],
    response_model=Catalog,
    responses=errors(*READ_NO_PARAMS),
)
def get_catalog(store: StoreDep) -> Response:
    return FastJSONResponse(catalog(store))


async def _plan_response(
    req: PlanRequest, store: Store, download: bool, where: str, request: Request
) -> Response:
    stop = threading.Event()
    task = asyncio.ensure_future(run_in_threadpool(run_plan, req, store_loader(store), stop.is_set))
    try:
        # poll for a vanished client while the search runs; it then stops at its next
        # plan evaluation instead of burning a worker thread for nothing
        while not task.done():
            await asyncio.wait({task}, timeout=0.25)
            if not task.done() and await request.is_disconnected():
                stop.set()
        payload = task.result()
    except PlanInputError as exc:
        raise error(422, [where, *exc.loc], exc.msg, "invalid_plan_request") from exc
    headers = {}
    if download:
        headers["Content-Disposition"] = f'attachment; filename="{export_filename(payload)}"'
    return FastJSONResponse(payload, headers=headers)


_RESPONSES: dict[int | str, dict[str, Any]] = errors(
    *READ, e422="Invalid or inconsistent request (field path in detail.loc)"
)


@router.post(
    "/plan",
    summary="Best disaggregated plan, alternatives, na sweep, co-located, timeline",
    dependencies=[Depends(require_read)],
    response_model=Plan,
    responses={
        **_RESPONSES,
        **errors(400, 408, 413, e400="The body is not JSON", examples={400: JSON_BODY_400}),
    },
)
async def post_plan(
    req: PlanRequest,
    store: StoreDep,
    request: Request,
    download: bool = False,
) -> Response:
    return await _plan_response(req, store, download, "body", request)


@router.get(
    "/plan",
    summary="The same plan from query parameters (catalogue figures only)",
    dependencies=[Depends(require_read)],
    response_model=Plan,
    responses=_RESPONSES,
)
async def get_plan(
    store: StoreDep,
    request: Request,
    model: Annotated[str, Query(max_length=64, pattern=NAME_PATTERN)] = "mixtral_8x22b",
    seq_len: Annotated[float, Query(ge=1, le=10_000_000, allow_inf_nan=False)] = 650,
    slo_tbt_ms: Annotated[float, Query(gt=0, le=1_000_000, allow_inf_nan=False)] = 150.0,
    gpu: Annotated[
        list[Annotated[str, StringConstraints(max_length=64)]], Query(max_length=MAX_GPUS)
    ] = ["H20"],  # noqa: B006
    mode: Literal["homogeneous", "heterogeneous"] = "homogeneous",
    max_micro_batches: Annotated[int, Query(ge=1, le=8)] = 4,
    max_gpus: Annotated[int | None, Query(ge=2, le=1_000_000)] = None,
    near_best_pct: Annotated[float, Query(ge=0, le=100, allow_inf_nan=False)] = 2.0,
    experts_per_node: Annotated[int | None, Query(ge=1, le=4096)] = None,
    quant: Annotated[str | None, Query(max_length=64, pattern=NAME_PATTERN)] = None,
    use_stored: bool = True,
    top: Annotated[int, Query(ge=1, le=1000)] = 20,
    download: bool = False,
) -> Response:
    for i, name in enumerate(gpu):
        if not re.match(NAME_PATTERN, name):
            raise error(422, ["query", "gpu", i], "not a GPU name", "string_pattern_mismatch")
    try:
        req = PlanRequest(
            model=model,
            workload=WorkloadIn(seq_len=seq_len, slo_tbt_ms=slo_tbt_ms),
            gpus=gpu,
            mode=mode,
            options=OptionsIn(
                max_micro_batches=max_micro_batches,
                min_micro_batches=min(3, max_micro_batches),
                experts_per_node=[experts_per_node] if experts_per_node else None,
                max_gpus=max_gpus,
                near_best_pct=near_best_pct,
            ),
            fit=FitIn(quant=quant, use_stored=use_stored),
            top=top,
        )
    except ValidationError as exc:  # the distinct-GPU-names check
        first = exc.errors()[0]
        raise error(422, ["query", "gpu"], first["msg"], first["type"]) from exc
    return await _plan_response(req, store, download, "query", request)
