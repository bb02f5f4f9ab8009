"""/api/v1/serving-configs and /api/v1/crossval/*: serving-config import, workloads,
ledger, summary and end-to-end outcomes.

Routes parse the request, call ``service.crossval`` (ledger, summary, outcomes, the
same functions the /crossval page calls) or ``service.crossval_import`` (serving-config
files -> stored workloads) and serialise the answer as JSON or CSV.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import pandas as pd
from fastapi import APIRouter, Body, Depends, HTTPException, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from analysis.crossval import DEFAULT_BAND_PCT, DEFAULT_TOKEN_TOLERANCE
from analysis.crossval_guide import guide_summary
from analysis.crossval_rules import DEFAULT_NOISE_PCT, RULE_DEFINITIONS
from api.auth import get_config, get_store, require_read, require_scope
from api.config import ApiConfig
from api.jsonio import FastJSONResponse, frame_records
from api.routes.runs import Label, Offset, error
from api.schemas import crossval as X
from api.schemas.common import CSV, alternatives, merged
from api.schemas.errors import JSON_BODY_400, READ, READ_NO_PARAMS, errors
from db.crossval_records import OutcomeConflict
from db.errors import NotFound
from db.store import Store
from db.tokens import TokenInfo
from service.crossval import (
    BAND_RANGE,
    NOISE_RANGE,
    TOL_RANGE,
    compute_ledger,
    guide_compare,
    narrow,
    outcome_table,
    rules_side_by_side,
    serving_imports,
    summary_table,
    workload_filters,
    workloads_page,
)
from service.crossval_import import (
    ServingFilesError,
    ServingImport,
    import_serving_files,
    relative_path,
)
from service.crossval_outcomes import add_outcomes
from service.crossval_sweeps import sweep_report

router = APIRouter()
_cv = APIRouter(prefix="/crossval", tags=["crossval"])

Format = Literal["json", "csv"]
Rule = Literal["exact", "backend", "within_noise", "same_layout"]
Phase = Literal["decode", "prefill"]  # as service.scope.Phase: one cached type
Status = Literal["Match", "Mismatch", "no data", "not mappable"]
_MAX_FILES = 20_000  # the real data tree has ~1,200 recipes and 12 masters
_MAX_OUTCOMES = 10_000


# --------------------------------------------------------------------------- import
def import_body(result: ServingImport) -> dict[str, Any]:
    """The JSON answer for an import."""
    s = result.stored
    return {
        "already_existed": s.already_existed,
        "import_id": s.import_id,
        "content_hash": s.content_hash,
        "source": s.source,
        "imported_at": s.imported_at,
        "n_entries": s.n_entries,
        "n_points": s.n_points,
        "n_workloads": s.n_workloads,
        "n_mappable": s.n_mappable,
        "n_unmappable": s.n_unmappable,
        "n_new_workloads": s.n_new_workloads,
        "n_existing_workloads": s.n_existing_workloads,
        "n_updated_workloads": s.n_updated_workloads,
        "n_recipes_resolved": len(result.parsed.recipes),
        "n_recipes_unresolved": len(result.parsed.unresolved),
    }


def _files_error(exc: ServingFilesError) -> HTTPException:
    return error(422, ["body", "files", *exc.loc], exc.msg, exc.kind)


@router.post(
    "/serving-configs",
    tags=["crossval"],
    status_code=201,
    summary="Import InferenceX masters and srt-slurm recipes (multipart, field 'files')",
    response_model=X.ServingImport,
    responses={
        200: {
            "model": X.ServingImport,
            "description": "These configs were already imported; nothing written",
        },
        **errors(
            401,
            403,
            408,
            413,
            415,
            422,
            429,
            503,
            e403="Token lacks the upload scope",
            e415="Not multipart/form-data",
            e422="Bad path, bad YAML or no master (the file is named in loc)",
        ),
    },
)
async def import_serving_configs(
    request: Request,
    token: TokenInfo = Depends(require_scope("upload")),
    store: Store = Depends(get_store),
    config: ApiConfig = Depends(get_config),
) -> Response:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "multipart/form-data":
        raise error(
            415,
            ["header", "Content-Type"],
            "send multipart/form-data with one 'files' part per YAML file, each part's "
            "filename being its path under the data root",
            "unsupported_media_type",
        )
    files: dict[str, bytes] = {}
    async with request.form(
        max_files=_MAX_FILES, max_fields=10, max_part_size=config.max_upload_bytes
    ) as form:
        parts = form.getlist("files")
        if not parts:
            raise error(422, ["body", "files"], "at least one 'files' part is required", "missing")
        for i, part in enumerate(parts):
            if not isinstance(part, UploadFile):
                raise error(422, ["body", "files", i], "'files' parts must be files", "invalid")
            try:
                name = relative_path(part.filename, i)
            except ServingFilesError as exc:
                raise _files_error(exc) from exc
            if name in files:
                raise error(422, ["body", "files", name], "file sent twice", "duplicate")
            files[name] = await part.read()
    source = f"upload by {token.name}: {len(files)} files"
    try:
        result = await run_in_threadpool(import_serving_files, store, files, source)
    except ServingFilesError as exc:
        raise _files_error(exc) from exc
    status = 200 if result.stored.already_existed else 201
    return FastJSONResponse(import_body(result), status_code=status)


@router.get(
    "/serving-configs",
    tags=["crossval"],
    summary="Serving-config imports, newest first",
    dependencies=[Depends(require_read)],
    response_model=X.ServingImports,
    responses=errors(*READ_NO_PARAMS),
)
def list_serving_imports(store: Store = Depends(get_store)) -> Response:
    return FastJSONResponse({"items": frame_records(serving_imports(store))})


# --------------------------------------------------------------------------- reads
def _csv(frame: pd.DataFrame, name: str) -> Response:
    return Response(
        frame.to_csv(index=False),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


TokenTolerance = Annotated[
    float,
    Query(
        ge=TOL_RANGE[0],
        le=TOL_RANGE[1],
        description="Nearest num_tokens within this factor (log axis)",
    ),
]
NoisePct = Annotated[
    float,
    Query(
        ge=NOISE_RANGE[0],
        le=NOISE_RANGE[1],
        description="rule within_noise: the deployed score may be this many % above the best",
    ),
]
RuleQ = Annotated[
    Rule,
    Query(description="; ".join(f"{k}: {v}" for k, v in RULE_DEFINITIONS.items())),
]
BandPct = Annotated[
    float,
    Query(
        ge=BAND_RANGE[0], le=BAND_RANGE[1], description="±band (%) within which an outcome is Flat"
    ),
]


@_cv.get(
    "/workloads",
    summary="Stored serving workloads",
    dependencies=[Depends(require_read)],
    response_model=X.Workloads,
    responses=errors(*READ),
)
def list_workloads(
    store: Store = Depends(get_store),
    model: Label = None,
    hardware: Label = None,
    phase: Phase | None = None,
    mappable: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 100,
    offset: Offset = 0,
) -> Response:
    page = workloads_page(store, workload_filters(model, hardware, phase, mappable), limit, offset)
    return FastJSONResponse(
        {
            "total": page.total,
            "limit": limit,
            "offset": offset,
            "items": frame_records(page.items),
        }
    )


@_cv.get(
    "/ledger",
    summary="Deployed MoE config vs the best bench_moe candidate, per workload",
    dependencies=[Depends(require_read)],
    response_model=X.Ledger,
    responses=merged(CSV, errors(*READ)),
)
def get_ledger(
    store: Store = Depends(get_store),
    model: Label = None,
    hardware: Label = None,
    phase: Phase | None = None,
    status: Status | None = None,
    token_tolerance: TokenTolerance = DEFAULT_TOKEN_TOLERANCE,
    rule: RuleQ = "exact",
    noise_pct: NoisePct = DEFAULT_NOISE_PCT,
    format: Format = "json",
) -> Response:
    filters = workload_filters(model, hardware, phase)
    led = compute_ledger(store, filters, token_tolerance, rule, noise_pct)
    frame = narrow(led, None, status)
    if format == "csv":
        return _csv(frame, f"crossval-ledger-{rule}")
    return FastJSONResponse(
        {
            "total": len(frame),
            "token_tolerance": token_tolerance,
            "rule": rule,
            "noise_pct": noise_pct,
            "items": frame_records(frame),
        }
    )


@_cv.get(
    "/summary",
    summary="The guide's table: Match rate and E2E outcomes per model and hardware",
    dependencies=[Depends(require_read)],
    response_model=X.Summary,
    responses=merged(CSV, errors(*READ)),
)
def get_summary(
    store: Store = Depends(get_store),
    model: Label = None,
    hardware: Label = None,
    band_pct: BandPct = DEFAULT_BAND_PCT,
    token_tolerance: TokenTolerance = DEFAULT_TOKEN_TOLERANCE,
    rule: RuleQ = "exact",
    noise_pct: NoisePct = DEFAULT_NOISE_PCT,
    format: Format = "json",
) -> Response:
    filters = workload_filters(model, hardware, None)
    led = compute_ledger(store, filters, token_tolerance, rule, noise_pct)
    table = summary_table(store, led, band_pct)
    if format == "csv":
        return _csv(table, f"crossval-summary-{rule}")
    return FastJSONResponse(
        {
            "band_pct": band_pct,
            "token_tolerance": token_tolerance,
            "rule": rule,
            "noise_pct": noise_pct,
            "items": frame_records(table),
        }
    )


@_cv.get(
    "/rules",
    summary="The summary's Match cell under every match rule, side by side",
    dependencies=[Depends(require_read)],
    response_model=X.Rules,
    responses=errors(*READ),
)
def get_rules(
    store: Store = Depends(get_store),
    model: Label = None,
    hardware: Label = None,
    token_tolerance: TokenTolerance = DEFAULT_TOKEN_TOLERANCE,
    noise_pct: NoisePct = DEFAULT_NOISE_PCT,
) -> Response:
    led = compute_ledger(store, workload_filters(model, hardware, None), token_tolerance)
    table = rules_side_by_side(led, noise_pct)
    return FastJSONResponse({"definitions": RULE_DEFINITIONS, "items": frame_records(table)})


@_cv.get(
    "/guide",
    summary="The guide's published table beside ours, per model, hardware and phase",
    dependencies=[Depends(require_read)],
    response_model=X.Guide,
    responses=merged(CSV, errors(*READ)),
)
def get_guide(
    store: Store = Depends(get_store),
    token_tolerance: TokenTolerance = DEFAULT_TOKEN_TOLERANCE,
    rule: RuleQ = "exact",
    noise_pct: NoisePct = DEFAULT_NOISE_PCT,
    format: Format = "json",
) -> Response:
    table = guide_compare(store, {}, token_tolerance, rule, noise_pct)
    if format == "csv":
        return _csv(table, f"crossval-guide-vs-ours-{rule}")
    return FastJSONResponse(
        {
            "rule": rule,
            "noise_pct": noise_pct,
            "published": frame_records(guide_summary()),
            "items": frame_records(table),
        }
    )


@_cv.get(
    "/sweeps",
    summary="bench_moe commands covering every no-data workload (JSON or a shell script)",
    dependencies=[Depends(require_read)],
    response_model=X.Sweeps,
    responses=merged(alternatives({"text/x-shellscript": X.SWEEP_SCRIPT}), errors(*READ)),
)
def get_sweeps(
    store: Store = Depends(get_store),
    model: Label = None,
    hardware: Label = None,
    phase: Phase | None = None,
    token_tolerance: TokenTolerance = DEFAULT_TOKEN_TOLERANCE,
    format: Literal["json", "sh"] = "json",
) -> Response:
    led = compute_ledger(store, workload_filters(model, hardware, None), token_tolerance)
    rep = sweep_report(led, model, hardware.upper() if hardware else None, phase)
    if format == "sh":
        return Response(
            rep.script,
            media_type="text/x-shellscript; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{rep.filename}"'},
        )
    return FastJSONResponse(
        {
            "filename": rep.filename,
            "n_commands": len(rep.plan),
            "items": frame_records(rep.plan),
            "coverage": frame_records(rep.coverage),
            "cannot_fill": frame_records(rep.cannot) if rep.cannot is not None else [],
        }
    )


# --------------------------------------------------------------------------- outcomes
PositiveTps = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]


class OutcomeIn(BaseModel):
    """One end-to-end result for a Mismatch workload (tokens/s/user at its serving point):
    the deployed config and the bench_moe candidate, each optionally under perfect
    routing."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    workload_id: str = Field(min_length=1, max_length=200, description="<point_id>:<phase>")
    tps_per_user_deployed: PositiveTps
    tps_per_user_candidate: PositiveTps
    tps_per_user_candidate_perfect_routing: PositiveTps | None = None
    tps_per_user_deployed_perfect_routing: PositiveTps | None = None
    source: str | None = Field(None, max_length=2000, description="Where the numbers come from")
    notes: str | None = Field(None, max_length=4000)

    @field_validator("workload_id", "source", "notes")
    @classmethod
    def _no_control_characters(cls, value: str | None) -> str | None:
        # PostgreSQL text cannot hold NUL (a 503 from the store otherwise); other control
        # characters do not belong in an id or a one-line source either (notes: \n, \t)
        if value is not None and _CONTROL.search(value.replace("\n", "").replace("\t", "")):
            raise ValueError("contains control characters (only \\n and \\t in text)")
        return value


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RECORD_ERR = re.compile(r"^records\[(?P<i>\d+)\]\.(?P<field>\w+): (?P<msg>.*)$", re.S)


@_cv.post(
    "/outcomes",
    status_code=201,
    summary="Store end-to-end outcomes (JSON list; all or none)",
    response_model=X.OutcomesStored,
    responses={
        200: {
            "model": X.OutcomesStored,
            "description": "Every record was already stored with these values",
        },
        **errors(
            400,
            401,
            403,
            408,
            409,
            413,
            422,
            429,
            503,
            examples={400: JSON_BODY_400},
            e400="The body is not JSON",
            e403="Token lacks the upload scope",
            e409="Other values already stored for a workload (use replace=true)",
            e422="Invalid record (NaN/Infinity/<= 0), a Match workload or an "
            "unknown workload (loc: body, index, field)",
        ),
    },
)
def post_outcomes(
    records: Annotated[list[OutcomeIn], Body(min_length=1, max_length=_MAX_OUTCOMES)],
    replace: bool = False,
    _token: TokenInfo = Depends(require_scope("upload")),
    store: Store = Depends(get_store),
) -> Response:
    index = {r.workload_id: i for i, r in enumerate(records)}
    try:
        result = add_outcomes(store, [r.model_dump() for r in records], replace=replace)
    except OutcomeConflict as exc:
        raise error(
            409, ["body", index[exc.workload_id], exc.field], exc.problem, "conflict"
        ) from exc
    except NotFound as exc:
        i = index.get(str(exc.ident), 0)
        raise error(
            422,
            ["body", i, "workload_id"],
            f"unknown workload {exc.ident!r}: import its serving configs first",
            "not_found",
        ) from exc
    except ValueError as exc:
        m = _RECORD_ERR.match(str(exc))
        loc: list[str | int] = ["body", int(m["i"]), m["field"]] if m else ["body"]
        raise error(422, loc, m["msg"] if m else str(exc), "invalid") from exc
    body = {
        "n_created": result.count("created"),
        "n_existing": result.count("already existed"),
        "n_replaced": result.count("replaced"),
        "items": [{"workload_id": w.workload_id, "state": w.state} for w in result.items],
    }
    wrote = body["n_created"] or body["n_replaced"]
    return FastJSONResponse(body, status_code=201 if wrote else 200)


@_cv.get(
    "/outcomes",
    summary="Stored end-to-end outcomes, classified at band_pct",
    dependencies=[Depends(require_read)],
    response_model=X.Outcomes,
    responses=merged(CSV, errors(*READ)),
)
def list_outcomes(
    store: Store = Depends(get_store),
    band_pct: BandPct = DEFAULT_BAND_PCT,
    format: Format = "json",
) -> Response:
    table = outcome_table(store, band_pct)
    if format == "csv":
        return _csv(table, "crossval-outcomes")
    return FastJSONResponse({"band_pct": band_pct, "items": frame_records(table)})


router.include_router(_cv)
