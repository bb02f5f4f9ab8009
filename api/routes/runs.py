"""/api/v1/runs: upload, list, get, candidates, raw bytes, delete."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from analysis import columns as C
from api.auth import get_config, get_store, require_read, require_scope
from api.config import ApiConfig
from api.jsonio import FastJSONResponse, frame_records
from api.limits import ParseBudget
from api.uploads import SpooledUpload, spool_form, spool_raw, spooled_raw_file, upload_size
from db.errors import Conflict, NotFound
from db.store import IngestResult, Store
from db.tokens import TokenInfo
from ingest.detect import parse_upload
from ingest.errors import InputError
from ingest.metadata import MetadataError, UploadMetadata, validate_metadata
from ingest.records import UploadMeta
from service.crossval_refresh import LedgerRefresher

router = APIRouter(prefix="/runs", tags=["runs"])

# Integer parameters are bounded so that no value reaches the database as an overflow
# (a BIGINT holds < 2**63): out of range is a 422 naming the parameter, never a 500.
MAX_ID = 2**62
MAX_OFFSET = 10**9
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="Run id (from the upload answer)")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Rows to skip")]

_BODY_TYPES = {
    "application/json",
    "text/json",
    "text/csv",
    "application/csv",
    "application/javascript",
    "text/javascript",
    "application/octet-stream",
    "text/plain",
}


def error(status: int, loc: list[str | int], msg: str, kind: str) -> HTTPException:
    return HTTPException(status_code=status, detail=[{"loc": loc, "msg": msg, "type": kind}])


def _result_body(result: IngestResult, request: Request) -> dict[str, Any]:
    base = str(request.url_for("get_run", run_id=0)).rsplit("/", 1)[0]
    return {
        "already_existed": result.already_existed,
        "upload_id": result.upload_id,
        "sha256": result.sha256,
        "n_candidates": result.n_candidates,
        "runs": [
            {
                "run_id": r.run_id,
                "sweep_key": r.sweep_key,
                "n_candidates": r.n_candidates,
                "created": r.created,
                "url": f"{base}/{r.run_id}",
            }
            for r in result.runs
        ],
    }


def _check_body_type(request: Request) -> str:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype and ctype != "multipart/form-data" and ctype not in _BODY_TYPES:
        raise error(
            415,
            ["header", "Content-Type"],
            f"unsupported content type {ctype!r}: send application/json (bench_moe report "
            "or dashboard data.js), text/csv (dashboard CSV) or multipart/form-data with a "
            "'file' part",
            "unsupported_media_type",
        )
    return ctype


async def _ingest(
    request: Request, body: SpooledUpload, meta: UploadMeta, token: TokenInfo, store: Store
) -> Response:
    """Parse and store a spooled body once the parse budget has room for it."""
    if body.size == 0:
        raise error(400, ["body"], "the request body is empty", "empty")
    budget: ParseBudget = request.app.state.parse_budget
    async with budget.hold(body.size):
        raw = await run_in_threadpool(body.read)
        if raw.isspace():  # isspace, not strip(): no copy of a big body
            raise error(400, ["body"], "the request body is empty", "empty")
        try:
            sweeps = await run_in_threadpool(parse_upload, raw, meta, meta.filename)
        except InputError as exc:
            loc: list[str | int] = ["body", exc.field] if exc.field else ["body"]
            if exc.field in UploadMetadata.model_fields:
                loc = ["query", exc.field]
            raise error(exc.status, loc, exc.problem, "invalid_report") from exc
        try:
            result = await run_in_threadpool(
                store.ingest, sweeps, raw, meta, uploaded_by=token.name
            )
        except Conflict as exc:
            raise error(409, ["query", exc.field], exc.problem, "conflict") from exc
        del raw, sweeps  # the budget is released below: free the memory first
    status = 200 if result.already_existed else 201
    if not result.already_existed:  # new sweeps: re-derive the stored ledger off-request
        refresher: LedgerRefresher | None = getattr(request.app.state, "ledger_refresher", None)
        if refresher is not None:
            refresher.request()
    return FastJSONResponse(_result_body(result, request), status_code=status)


@router.post(
    "",
    status_code=201,
    summary="Upload a bench_moe report (or NVIDIA dashboard data.js / CSV)",
    responses={
        200: {"description": "The same bytes were already stored; existing runs returned"},
        400: {"description": "Empty body"},
        401: {"description": "Missing or invalid token"},
        403: {"description": "Token lacks the upload scope"},
        409: {"description": "Same bytes already stored with different metadata"},
        413: {"description": "Body larger than MOEDASH_MAX_UPLOAD_BYTES"},
        415: {"description": "Unsupported content type or file format"},
        422: {"description": "Invalid report or metadata (field path in detail.loc)"},
    },
)
async def upload_run(
    request: Request,
    meta_in: Annotated[UploadMetadata, Query()],
    token: TokenInfo = Depends(require_scope("upload")),
    store: Store = Depends(get_store),
    config: ApiConfig = Depends(get_config),
) -> Response:
    """Upload one report. The body streams to a temporary file first (the entry layer
    has already bounded its size and its pace) and is parsed from there."""
    ctype = _check_body_type(request)
    if ctype == "multipart/form-data":
        upload, fields = await spool_form(request, config.max_upload_bytes)
        try:
            # form fields win over query parameters of the same name
            merged = {**meta_in.model_dump(exclude_none=True), **fields}
            try:
                form_meta = validate_metadata(merged)
            except MetadataError as exc:
                raise error(422, ["form", exc.field], exc.problem, "invalid") from exc
            body = SpooledUpload(upload.file, upload_size(upload), upload.filename)
            return await _ingest(request, body, form_meta.to_meta(upload.filename), token, store)
        finally:
            await upload.close()
    with spooled_raw_file() as handle:
        size = await spool_raw(request, handle)
        return await _ingest(
            request, SpooledUpload(handle, size), meta_in.to_meta(None), token, store
        )


@router.get("", summary="List runs (newest first)", dependencies=[Depends(require_read)])
def list_runs(
    store: Store = Depends(get_store),
    model: str | None = None,
    hardware: str | None = None,
    quant: str | None = None,
    world_size: Annotated[int | None, Query(ge=1, le=100000)] = None,
    source_format: Literal["bench_moe", "bench_moe_legacy", "nvidia_dashboard"] | None = None,
    synthetic: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Offset = 0,
) -> Response:
    page = store.list_runs(
        model=model,
        hardware=hardware,
        quant=quant,
        world_size=world_size,
        source_format=source_format,
        synthetic=synthetic,
        limit=limit,
        offset=offset,
    )
    return FastJSONResponse(
        {"total": page.total, "limit": limit, "offset": offset, "items": frame_records(page.items)}
    )


def _not_found(exc: NotFound) -> HTTPException:
    return error(404, ["path", "run_id"], str(exc), "not_found")


@router.get("/{run_id}", summary="One run with its metadata", dependencies=[Depends(require_read)])
def get_run(run_id: RunId, store: Store = Depends(get_store)) -> Response:
    try:
        return FastJSONResponse(store.get_run(run_id))
    except NotFound as exc:
        raise _not_found(exc) from exc


_CandidateOrder = Literal[
    "candidate_index", "score_ms", "num_tokens", "backend", "comm", "status", "parallel_mode"
]


@router.get(
    "/{run_id}/candidates",
    summary="Candidates of a run, skipped and failed included",
    dependencies=[Depends(require_read)],
)
def list_candidates(
    run_id: RunId,
    store: Store = Depends(get_store),
    status: Literal["success", "skipped", "failed"] | None = None,
    backend: str | None = None,
    comm: str | None = None,
    parallel_mode: str | None = None,
    failure_category: str | None = None,
    cuda_graph: bool | None = None,
    num_tokens: Annotated[int | None, Query(ge=0, le=2**31)] = None,
    order: _CandidateOrder = "candidate_index",
    desc: bool = False,
    limit: Annotated[int, Query(ge=1, le=10000)] = 100,
    offset: Offset = 0,
) -> Response:
    filters = {
        C.STATUS: status,
        C.BACKEND: backend,
        C.COMM: comm,
        C.PARALLEL_MODE: parallel_mode,
        C.FAILURE_CATEGORY: failure_category,
        C.CUDA_GRAPH: cuda_graph,
        C.NUM_TOKENS: num_tokens,
    }
    try:
        page = store.list_candidates(
            run_id, filters=filters, order=order, descending=desc, limit=limit, offset=offset
        )
    except NotFound as exc:
        raise _not_found(exc) from exc
    return FastJSONResponse(
        {"total": page.total, "limit": limit, "offset": offset, "items": frame_records(page.items)}
    )


@router.get(
    "/{run_id}/raw",
    summary="The original uploaded bytes",
    dependencies=[Depends(require_read)],
    response_class=Response,
)
def raw_upload(run_id: RunId, store: Store = Depends(get_store)) -> Response:
    try:
        raw = store.raw_upload(run_id)
    except NotFound as exc:
        raise _not_found(exc) from exc
    name = (raw.filename or f"run-{run_id}.json").rsplit("/", 1)[-1]
    safe = "".join(ch for ch in name if ch.isalnum() or ch in "._-") or f"run-{run_id}"
    media = "text/csv" if safe.endswith(".csv") else "application/json"
    return Response(
        raw.content,
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{safe}"'},
    )


@router.delete("/{run_id}", status_code=204, summary="Delete a run (admin scope)")
def delete_run(
    run_id: RunId,
    store: Store = Depends(get_store),
    _token: TokenInfo = Depends(require_scope("admin")),
) -> Response:
    try:
        store.delete_run(run_id)
    except NotFound as exc:
        raise _not_found(exc) from exc
    return Response(status_code=204)
