"""/api/v1/serving-configs and /api/v1/crossval/*: serving-config import, workloads,
ledger, summary and end-to-end outcomes.

The ledger and the summary are computed on request (``analysis.crossval``) from the
stored workloads and the stored successful candidates of the same models and hardware,
so they always reflect the latest uploads.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import pandas as pd
import yaml
from fastapi import APIRouter, Body, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis.crossval import (
    DEFAULT_BAND_PCT,
    DEFAULT_TOKEN_TOLERANCE,
    ledger,
    outcomes_frame,
    summary,
)
from analysis.serving_map import map_workloads
from api.auth import get_config, get_store, require_read, require_scope
from api.config import ApiConfig
from api.jsonio import FastJSONResponse, frame_records
from api.routes.runs import error
from db.crossval_store import OutcomeConflict, ServingImportResult, iter_outcome_records
from db.errors import NotFound
from db.store import Store
from db.tokens import TokenInfo
from ingest.serving_configs import (
    ImportResult,
    import_directory,
    master_files,
    points_frame,
    recipe_configs,
)

router = APIRouter()
_cv = APIRouter(prefix="/crossval", tags=["crossval"])

Format = Literal["json", "csv"]
Phase = Literal["prefill", "decode"]
Status = Literal["Match", "Mismatch", "no data", "not mappable"]
# Candidate columns the ledger reads (run columns always come with candidate_frame).
_LEDGER_CANDIDATE_COLUMNS = [
    C.NUM_TOKENS, C.PARALLEL_MODE, C.ATTENTION_DP, C.CUDA_GRAPH, C.BACKEND,
    C.MOE_EP_SIZE, C.MOE_TP_SIZE, C.COMM, C.STATUS, C.SCORE_MS,
]  # fmt: skip
_MAX_FILES = 20_000  # the real data tree has ~1,200 recipes and 12 masters
_MAX_OUTCOMES = 10_000


# --------------------------------------------------------------------------- import
@dataclass(frozen=True)
class ServingImport:
    """A parsed serving-config tree and what the store did with it."""

    parsed: ImportResult
    stored: ServingImportResult


def import_serving_directory(store: Store, data_dir: Path, source: str | None) -> ServingImport:
    """Parse the masters and recipes under ``data_dir`` (laid out like ``shared/data``),
    map them to workloads and store them (idempotent, see ``Store.import_serving``).

    Raises ``ValueError`` (or ``yaml.YAMLError``) for a master that cannot be parsed.
    """
    parsed = import_directory(data_dir)
    points = points_frame(parsed)
    workloads = map_workloads(points, recipe_configs(parsed))
    stored = store.import_serving(points, workloads, parsed.content_hash, source)
    return ServingImport(parsed, stored)


def import_body(result: ServingImport) -> dict[str, Any]:
    """The JSON answer for an import (also what the CLI prints, as a table)."""
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


def _relative_path(name: str | None, index: int) -> str:
    """The part's filename as a safe path relative to the data root (422 otherwise)."""
    loc: list[str | int] = ["body", "files", index]
    if not name:
        raise error(
            422, loc, "each part needs a filename (its path under the data root)", "missing"
        )
    p = PurePosixPath(name)
    bad = (
        "\\" in name
        or "\0" in name
        or p.is_absolute()
        or any(part in ("", ".", "..") for part in name.split("/"))
    )
    if bad:
        raise error(
            422, [*loc[:2], name], "filename must be a relative path without '..'", "invalid_path"
        )
    if p.suffix.lower() not in (".yaml", ".yml"):
        raise error(422, [*loc[:2], name], "only .yaml/.yml files are imported", "invalid_path")
    return str(p)


def _check_yaml(files: dict[str, bytes]) -> None:
    for name, raw in files.items():
        try:
            yaml.safe_load(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise error(
                422,
                ["body", "files", name],
                f"{name}: not UTF-8 text ({exc.reason})",
                "invalid_yaml",
            ) from exc
        except yaml.YAMLError as exc:
            problem = " ".join(str(exc).split())
            raise error(
                422, ["body", "files", name], f"{name}: invalid YAML: {problem}", "invalid_yaml"
            ) from exc


def _import_files(store: Store, files: dict[str, bytes], source: str) -> ServingImport:
    _check_yaml(files)
    with tempfile.TemporaryDirectory(prefix="moedash-serving-") as tmp:
        root = Path(tmp)
        for name, raw in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(raw)
        if not any(f.is_file() for f in master_files(root)):
            raise error(
                422,
                ["body", "files"],
                "no NVIDIA master among the files: send inferencex/configs/nvidia-master.yaml "
                "and/or inferencex/configs/deprecated/nvidia-*-master.yaml (paths relative to "
                "the data root)",
                "missing",
            )
        try:
            return import_serving_directory(store, root, source)
        except ValueError as exc:
            # load_matrix names the master file and entry in the message.
            name = str(exc).split(":", 1)[0]
            loc: list[str | int] = ["body", "files", name] if name in files else ["body", "files"]
            raise error(422, loc, str(exc), "invalid_config") from exc


@router.post(
    "/serving-configs",
    tags=["crossval"],
    status_code=201,
    summary="Import InferenceX masters and srt-slurm recipes (multipart, field 'files')",
    responses={
        200: {"description": "These configs were already imported; nothing written"},
        401: {"description": "Missing or invalid token"},
        403: {"description": "Token lacks the upload scope"},
        413: {"description": "Body larger than MOEDASH_MAX_UPLOAD_BYTES"},
        415: {"description": "Not multipart/form-data"},
        422: {"description": "Bad path, bad YAML or no master (the file is named in loc)"},
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
            name = _relative_path(part.filename, i)
            if name in files:
                raise error(422, ["body", "files", name], "file sent twice", "duplicate")
            files[name] = await part.read()
    source = f"upload by {token.name}: {len(files)} files"
    result = await run_in_threadpool(_import_files, store, files, source)
    status = 200 if result.stored.already_existed else 201
    return FastJSONResponse(import_body(result), status_code=status)


@router.get(
    "/serving-configs",
    tags=["crossval"],
    summary="Serving-config imports, newest first",
    dependencies=[Depends(require_read)],
)
def list_serving_imports(store: Store = Depends(get_store)) -> Response:
    return FastJSONResponse({"items": frame_records(store.serving_imports())})


# --------------------------------------------------------------------------- reads
def _csv(frame: pd.DataFrame, name: str) -> Response:
    return Response(
        frame.to_csv(index=False),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


def workload_filters(
    model: str | None, hardware: str | None, phase: str | None, mappable: bool | None = None
) -> dict[str, Any]:
    return {
        C.MODEL: model,
        C.HARDWARE: hardware.upper() if hardware else None,
        cc.PHASE: phase,
        cc.MAPPABLE: mappable,
    }


def compute_ledger(
    store: Store, filters: dict[str, Any], token_tolerance: float = DEFAULT_TOKEN_TOLERANCE
) -> pd.DataFrame:
    """``analysis.crossval.ledger`` over the stored workloads matching ``filters`` and the
    stored successful candidates of their models and hardware."""
    workloads = store.serving_workloads(filters)
    ok = workloads[workloads[cc.MAPPABLE].fillna(False).astype(bool)]
    models = sorted({str(m) for m in ok[C.MODEL].dropna()})
    hardware = sorted({str(h) for h in ok[C.HARDWARE].dropna()})
    if models and hardware:
        candidates = store.candidate_frame(
            filters={C.MODEL: models, C.HARDWARE: hardware},
            success_only=True,
            columns=_LEDGER_CANDIDATE_COLUMNS,
        )
    else:
        candidates = pd.DataFrame()
    return ledger(workloads, candidates, token_tolerance)


def outcome_table(store: Store, band_pct: float) -> pd.DataFrame:
    """Stored outcomes classified at ``band_pct`` (OUTCOME_COLUMNS + provenance)."""
    stored = store.outcomes()
    classified = outcomes_frame(iter_outcome_records(stored), band_pct)
    extra = stored[[cc.WORKLOAD_ID, "source", "notes", "created_at", "updated_at"]]
    return classified.merge(extra, on=cc.WORKLOAD_ID, how="left")


def summary_table(store: Store, ledger_df: pd.DataFrame, band_pct: float) -> pd.DataFrame:
    """The guide's table (``SUMMARY_COLUMNS``) of ``ledger_df`` with the stored outcomes
    classified at ``band_pct``; ``GET /crossval/summary`` and the /crossval page."""
    return summary(ledger_df, outcome_table(store, band_pct), band_pct)


TokenTolerance = Annotated[
    float,
    Query(ge=1.0, le=1024.0, description="Nearest num_tokens within this factor (log axis)"),
]
BandPct = Annotated[
    float, Query(ge=0.0, le=100.0, description="±band (%) within which an outcome is Flat")
]


@_cv.get("/workloads", summary="Stored serving workloads", dependencies=[Depends(require_read)])
def list_workloads(
    store: Store = Depends(get_store),
    model: str | None = None,
    hardware: str | None = None,
    phase: Phase | None = None,
    mappable: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> Response:
    filters = workload_filters(model, hardware, phase, mappable)
    total = store.serving_workload_count(filters)
    items = store.serving_workloads(filters, limit=limit, offset=offset)
    return FastJSONResponse(
        {"total": total, "limit": limit, "offset": offset, "items": frame_records(items)}
    )


@_cv.get(
    "/ledger",
    summary="Deployed MoE config vs the best bench_moe candidate, per workload",
    dependencies=[Depends(require_read)],
)
def get_ledger(
    store: Store = Depends(get_store),
    model: str | None = None,
    hardware: str | None = None,
    phase: Phase | None = None,
    status: Status | None = None,
    token_tolerance: TokenTolerance = DEFAULT_TOKEN_TOLERANCE,
    format: Format = "json",
) -> Response:
    frame = compute_ledger(store, workload_filters(model, hardware, phase), token_tolerance)
    if status is not None:
        frame = frame[frame[cc.STATUS] == status].reset_index(drop=True)
    if format == "csv":
        return _csv(frame, "crossval-ledger")
    return FastJSONResponse(
        {"total": len(frame), "token_tolerance": token_tolerance, "items": frame_records(frame)}
    )


@_cv.get(
    "/summary",
    summary="The guide's table: Match rate and E2E outcomes per model and hardware",
    dependencies=[Depends(require_read)],
)
def get_summary(
    store: Store = Depends(get_store),
    model: str | None = None,
    hardware: str | None = None,
    band_pct: BandPct = DEFAULT_BAND_PCT,
    token_tolerance: TokenTolerance = DEFAULT_TOKEN_TOLERANCE,
    format: Format = "json",
) -> Response:
    led = compute_ledger(store, workload_filters(model, hardware, None), token_tolerance)
    table = summary_table(store, led, band_pct)
    if format == "csv":
        return _csv(table, "crossval-summary")
    return FastJSONResponse(
        {"band_pct": band_pct, "token_tolerance": token_tolerance, "items": frame_records(table)}
    )


# --------------------------------------------------------------------------- outcomes
PositiveTps = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]


class OutcomeIn(BaseModel):
    """One end-to-end result for a Mismatch workload (tokens/s/user at its serving point)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    workload_id: str = Field(min_length=1, max_length=200, description="<point_id>:<phase>")
    tps_per_user_deployed: PositiveTps
    tps_per_user_candidate: PositiveTps
    tps_per_user_candidate_perfect_routing: PositiveTps | None = None
    source: str | None = Field(None, max_length=2000, description="Where the numbers come from")
    notes: str | None = Field(None, max_length=4000)


_RECORD_ERR = re.compile(r"^records\[(?P<i>\d+)\]\.(?P<field>\w+): (?P<msg>.*)$", re.S)


@_cv.post(
    "/outcomes",
    status_code=201,
    summary="Store end-to-end outcomes (JSON list; all or none)",
    responses={
        200: {"description": "Every record was already stored with these values"},
        401: {"description": "Missing or invalid token"},
        403: {"description": "Token lacks the upload scope"},
        409: {"description": "Other values already stored for a workload (use replace=true)"},
        422: {"description": "Invalid record or unknown workload (loc: body, index, field)"},
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
        result = store.add_outcomes([r.model_dump() for r in records], replace=replace)
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
