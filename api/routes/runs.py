"""/api/v1/runs: upload, list, get, candidates, raw bytes (also of sightings), delete."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from analysis import columns as C
from api.auth import get_config, get_store, require_read, require_scope
from api.config import ApiConfig
from api.jsonio import FastJSONResponse, frame_records
from api.limits import ParseBudget
from api.parse_task import input_error
from api.routes.analysis import get_data
from api.schemas.common import merged
from api.schemas.errors import errors, run_errors
from api.schemas.runs import RAW_SIGHTING, RAW_UPLOAD, CandidatePage, Run, RunPage, UploadResult
from api.uploads import SpooledUpload, spool_form, spool_raw, spooled_raw_file, upload_size
from db.errors import Conflict, NotFound
from db.store import IngestResult, Store
from db.tokens import TokenInfo
from ingest.detect import parse_upload
from ingest.errors import InputError
from ingest.metadata import MetadataError, UploadMetadata, validate_metadata
from ingest.parse_pool import ParsePool, PoolUnavailable
from ingest.records import UploadMeta
from service.crossval_refresh import LedgerRefresher
from service.precompute import precompute_runs
from service.raw_download import run_raw_download
from service.regressions import RegressionThresholds, regressions_for_runs

router = APIRouter(prefix="/runs", tags=["runs"])

# Integer parameters are bounded so that no value reaches the database as an overflow
# (a BIGINT holds < 2**63): out of range is a 422 naming the parameter, never a 500.
MAX_ID = 2**62
MAX_OFFSET = 10**9
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="Run id (from the upload answer)")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Rows to skip")]
# A label filter (model, hardware, backend …): stored labels are far shorter
Label = Annotated[str | None, Query(max_length=100)]

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


class UploadParams(UploadMetadata):
    """The upload's query parameters: the upload metadata plus how to answer."""

    regression_threshold_pct: float | None = Field(
        None,
        ge=0,
        le=1000,
        description="Regression threshold in percent for this answer's `regressions`, "
        "replacing the server's MOEDASH_REGRESSION_THRESHOLDS",
    )

    def metadata(self) -> UploadMetadata:
        """The upload metadata alone."""
        return UploadMetadata(**self.model_dump(exclude={"regression_threshold_pct"}))


def _thresholds(request: Request, pct: float | None) -> RegressionThresholds:
    if pct is not None:
        return RegressionThresholds(default_pct=pct)
    settings = getattr(request.app.state, "settings", None)
    configured = getattr(settings, "regression_thresholds", None)
    return configured if isinstance(configured, RegressionThresholds) else RegressionThresholds()


def _regressions(
    store: Store, result: IngestResult, thresholds: RegressionThresholds
) -> tuple[list[dict[str, Any]], list[str]]:
    """Regressions of the runs this upload created (none when it created none), the
    conclusive ones and the slower rows inside the noise band ("inconclusive"). A
    failure here does not undo the stored upload: it is reported in ``errors``."""
    created = [r.run_id for r in result.runs if r.created and not result.already_existed]
    if not created:
        return [], []
    try:
        verdicts = ("regression", "inconclusive")
        return regressions_for_runs(store, created, thresholds, verdicts=verdicts), []
    except Exception as exc:  # the upload is stored; the check is reported, not fatal
        return [], [f"regressions: {type(exc).__name__}: {exc}"]


def _result_body(
    result: IngestResult,
    request: Request,
    regressions: list[dict[str, Any]],
    errors: list[str],
) -> dict[str, Any]:
    base = str(request.url_for("get_run", run_id=0)).rsplit("/", 1)[0]
    sighting = result.sighting
    return {
        "already_existed": result.already_existed,
        "same_measurements_other_bytes": result.same_measurements_other_bytes,
        "upload_id": result.upload_id,
        "sha256": result.sha256,
        "stored_upload": {"upload_id": result.upload_id, "sha256": result.stored_sha256}
        if result.same_measurements_other_bytes
        else None,
        "differing_fields": list(result.differing_fields),
        "sighting": None
        if sighting is None
        else {"sighting_id": sighting.sighting_id, "n_seen": sighting.n_seen},
        "n_candidates": result.n_candidates,
        "run_ids": [r.run_id for r in result.runs],
        "regressions": regressions,
        "errors": errors,
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


def _refused(exc: InputError) -> HTTPException:
    loc: list[str | int] = ["body", exc.field] if exc.field else ["body"]
    if exc.field in UploadMetadata.model_fields:
        loc = ["query", exc.field]
    return error(exc.status, loc, exc.problem, "invalid_report")


def _parse_and_store(
    store: Store, raw: bytes, meta: UploadMeta, token: TokenInfo, pool: ParsePool | None
) -> IngestResult:
    """Parse the body and store what it holds (a refused report: its 4xx); called once
    ``ingest_known`` has found these bytes not stored. A body of at most
    ``pool.max_bytes`` is parsed by the parse pool (``ingest.parse_pool``) when it can
    answer; otherwise, and for bigger bodies, here (the pool pauses meanwhile)."""
    if pool is not None and len(raw) <= pool.max_bytes:
        try:
            outcome = pool.run(raw, meta, meta.filename, store.dialect == "duckdb")
        except PoolUnavailable:
            pass  # parsed here instead, below
        else:
            if outcome[0] == "input_error":
                raise _refused(input_error(outcome))
            return store.ingest_prepared(outcome[1], meta, uploaded_by=token.name)
    with pool.paused() if pool is not None and len(raw) > pool.max_bytes else nullcontext():
        try:
            sweeps = parse_upload(raw, meta, meta.filename)
        except InputError as exc:
            raise _refused(exc) from exc
        return store.ingest(sweeps, raw, meta, uploaded_by=token.name, known_new=True)


async def _ingest(
    request: Request,
    body: SpooledUpload,
    meta: UploadMeta,
    token: TokenInfo,
    store: Store,
    thresholds: RegressionThresholds,
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
            # a retry of stored bytes is answered without parsing them again
            known = await run_in_threadpool(
                store.runs.ingest_known, raw, meta, uploaded_by=token.name
            )
            if known is None:
                pool = getattr(request.app.state, "parse_pool", None)
                result = await run_in_threadpool(_parse_and_store, store, raw, meta, token, pool)
            else:
                result = known
        except Conflict as exc:
            where = "query" if exc.field in UploadMetadata.model_fields else "body"
            raise error(409, [where, exc.field], exc.problem, "conflict") from exc
        del raw  # the budget is released below: free the memory first
    status = 200 if result.already_existed else 201
    if not result.already_existed:  # new sweeps: re-derive the stored ledger off-request
        refresher: LedgerRefresher | None = getattr(request.app.state, "ledger_refresher", None)
        if refresher is not None:
            refresher.request()
        # the changed cells' first answers, computed once for every replica, off-request
        created = [r.run_id for r in result.runs if r.created]
        if created:
            precompute_runs(get_data(request, store), created)
    regressions, errors = await run_in_threadpool(_regressions, store, result, thresholds)
    conclusive = [r for r in regressions if r["verdict"] == "regression"]
    body_out = _result_body(result, request, conclusive, errors)
    # slower, but inside what a re-run of the same software could give (analysis.noise)
    body_out["inconclusive"] = [r for r in regressions if r["verdict"] != "regression"]
    return FastJSONResponse(body_out, status_code=status)


@router.post(
    "",
    status_code=201,
    summary="Upload a bench_moe report (or NVIDIA dashboard data.js / CSV)",
    response_model=UploadResult,
    responses={
        200: {
            "model": UploadResult,
            "description": "The same bytes, or the same measurements in other bytes, were "
            "already stored: existing runs returned, the arrival recorded as a sighting",
        },
        **errors(
            400,
            401,
            403,
            408,
            409,
            413,
            415,
            422,
            429,
            503,
            e403="Token lacks the upload scope",
            e409="Contradicts what is stored: the same bytes with another "
            "hardware / trtllm_version / trtllm_commit / run_date / dispatch, or the same "
            "candidates with other rankings / search / base_config",
            e415="Unsupported content type or file format",
            e422="Invalid report or metadata (field path in detail.loc)",
            e429="Too many failed authentications, or too many uploads in flight "
            "(Retry-After says when to retry)",
        ),
    },
)
async def upload_run(
    request: Request,
    params: Annotated[UploadParams, Query()],
    token: TokenInfo = Depends(require_scope("upload")),
    store: Store = Depends(get_store),
    config: ApiConfig = Depends(get_config),
) -> Response:
    """Upload one report. The body streams to a temporary file first (the entry layer
    has already bounded its size and its pace) and is parsed from there. The answer
    lists the regressions of the runs it created against the latest earlier version
    on their slice (``service.regressions``)."""
    ctype = _check_body_type(request)
    meta_in = params.metadata()
    thresholds = _thresholds(request, params.regression_threshold_pct)
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
            meta = form_meta.to_meta(upload.filename)
            return await _ingest(request, body, meta, token, store, thresholds)
        finally:
            await upload.close()
    with spooled_raw_file() as handle:
        size = await spool_raw(request, handle)
        return await _ingest(
            request, SpooledUpload(handle, size), meta_in.to_meta(None), token, store, thresholds
        )


@router.get(
    "",
    summary="List runs (newest first)",
    dependencies=[Depends(require_read)],
    response_model=RunPage,
    responses=errors(401, 422, 429, 503),
)
def list_runs(
    store: Store = Depends(get_store),
    model: Label = None,
    hardware: Label = None,
    quant: Label = None,
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


@router.get(
    "/{run_id}",
    summary="One run with its metadata",
    dependencies=[Depends(require_read)],
    response_model=Run,
    responses=run_errors(),
)
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
    response_model=CandidatePage,
    responses=run_errors(),
)
def list_candidates(
    run_id: RunId,
    store: Store = Depends(get_store),
    status: Literal["success", "skipped", "failed"] | None = None,
    backend: Label = None,
    comm: Label = None,
    parallel_mode: Label = None,
    failure_category: Label = None,
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
    summary="The original uploaded bytes (a dashboard-format run: its own rows, as CSV)",
    dependencies=[Depends(require_read)],
    response_class=Response,
    responses=merged(RAW_UPLOAD, run_errors()),
)
def raw_upload(run_id: RunId, store: Store = Depends(get_store)) -> Response:
    try:
        raw = run_raw_download(store, run_id)
    except NotFound as exc:
        raise _not_found(exc) from exc
    return Response(
        raw.content,
        media_type=raw.media_type,
        headers={"Content-Disposition": f'attachment; filename="{raw.filename}"'},
    )


@router.get(
    "/{run_id}/sightings/{sighting_id}/raw",
    summary="The bytes a later arrival of the run's upload came with (see `sightings`)",
    dependencies=[Depends(require_read)],
    response_class=Response,
    responses=merged(RAW_SIGHTING, run_errors()),
)
def sighting_raw(
    run_id: RunId,
    sighting_id: Annotated[int, Path(ge=1, le=MAX_ID, description="Sighting id")],
    store: Store = Depends(get_store),
) -> Response:
    try:
        content = store.runs.sighting_raw(run_id, sighting_id)
    except NotFound as exc:
        field = "sighting_id" if exc.what == "sighting" else "run_id"
        raise error(404, ["path", field], str(exc), "not_found") from exc
    return Response(
        content,
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="run-{run_id}-sighting-{sighting_id}"'
        },
    )


@router.delete(
    "/{run_id}",
    status_code=204,
    summary="Delete a run (admin scope)",
    responses=errors(401, 403, 404, 422, 429, 503, e404="No such run"),
)
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
