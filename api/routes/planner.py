"""/api/v1/planner: MegaScale-Infer-style disaggregated deployment plans.

``GET /planner/catalog`` lists the editable model and GPU catalogues (with which stored
sweeps can fit Te for each model), ``POST /planner/plan`` runs the planner on a JSON
body and ``GET /planner/plan`` is the same with a few query parameters. Both plan
endpoints return one payload (see :func:`run_plan`); ``download=true`` adds a
``Content-Disposition`` header so a browser saves it as ``plan-….json``.

The request/compute code here is shared with the dashboard's /planner page, so the page's
"Download plan JSON" button and the API return the same document.

Bounds: the heterogeneous search tries every (attention GPU, expert GPU) pair and every
experts-per-node choice; over all 10 catalogue GPUs that takes about a minute, so it
accepts at most :data:`HETERO_MAX_GPUS` GPUs unless ``options.experts_per_node`` pins the
choice. The search runs in the thread pool, never on the event loop.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

import pandas as pd
from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.concurrency import run_in_threadpool

from analysis import columns as C
from analysis.planner import (
    GPUS,
    MODELS,
    Fit,
    GPUSpec,
    ModelSpec,
    PlanResult,
    SearchOptions,
    Workload,
    fit_expert_time,
    search_heterogeneous,
    search_plans,
    timeline,
    user_fit,
)
from analysis.planner.perf_model import expert_time_roofline
from analysis.planner.plans import ALTERNATIVE_COLUMNS, NA_SWEEP_COLUMNS
from api.auth import get_store, require_read
from api.jsonio import FastJSONResponse, frame_records
from db.store import Store

router = APIRouter(prefix="/planner", tags=["planner"])
StoreDep = Annotated[Store, Depends(get_store)]

HETERO_MAX_GPUS = 4
MAX_GPUS = 10
_NAME = r"^[A-Za-z0-9][A-Za-z0-9 _.+\-]{0,63}$"

# The paper's three pipeline constraints, as the UI and the export label them.
CONSTRAINT_LABELS: dict[str, str] = {
    "balance": "Ta ≈ Te",
    "comm_hidden": "Tc < Tf",
    "pipeline_depth": "m ≥ 2·(1 + Tc/Tf)",
}
MODEL_FIELDS: tuple[str, ...] = (
    "num_experts",
    "top_k",
    "hidden_size",
    "intermediate_size",
    "num_layers",
    "gqa_groups",
    "attention_param_bytes",
    "expert_param_bytes",
    "dense_layers",
    "activation_bytes",
    "attention_weight_bytes_per_param",
)
GPU_FIELDS: tuple[str, ...] = (
    "memory_gb",
    "bandwidth_gb_s",
    "bf16_tflops",
    "price",
    "power_w",
    "nic_gbps",
    "intra_node_gb_s",
    "gpus_per_node",
)
_FIT_COLUMNS = (
    C.STATUS,
    C.NUM_TOKENS,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.SCORE_MS,
    C.CUDA_GRAPH,
    C.DISPATCH,
    C.ATTENTION_DP,
)


class PlanInputError(ValueError):
    """A request that is well-formed but names something unknown or inconsistent."""

    def __init__(self, loc: Sequence[str | int], msg: str) -> None:
        super().__init__(msg)
        self.loc = list(loc)
        self.msg = msg


def error(status: int, loc: list[str | int], msg: str, kind: str) -> HTTPException:
    return HTTPException(status_code=status, detail=[{"loc": loc, "msg": msg, "type": kind}])


# ------------------------------------------------------------------ request models
class ModelOverrides(BaseModel):
    """Fields of :class:`analysis.planner.ModelSpec` to change (bytes are bytes)."""

    model_config = ConfigDict(extra="forbid")

    num_experts: int | None = Field(None, ge=1, le=4096, description="E")
    top_k: int | None = Field(None, ge=1, le=256, description="K")
    hidden_size: int | None = Field(None, ge=16, le=131072, description="h")
    intermediate_size: int | None = Field(None, ge=16, le=524288, description="h'")
    num_layers: int | None = Field(None, ge=1, le=1024, description="L, MoE layers")
    gqa_groups: float | None = Field(None, gt=0, le=4096, description="g: KV = 4h/g B/token/layer")
    attention_param_bytes: float | None = Field(None, gt=0, le=1e14, description="Pa, bytes")
    expert_param_bytes: float | None = Field(None, gt=0, le=1e13, description="Pe, bytes")
    dense_layers: int | None = Field(None, ge=0, le=1024)
    activation_bytes: float | None = Field(None, gt=0, le=8)
    attention_weight_bytes_per_param: float | None = Field(None, gt=0, le=8)


class GPUOverrides(BaseModel):
    """Fields of :class:`analysis.planner.GPUSpec` to change (price in L20 = 1 units)."""

    model_config = ConfigDict(extra="forbid")

    memory_gb: float | None = Field(None, gt=0, le=10000)
    bandwidth_gb_s: float | None = Field(None, gt=0, le=1e6)
    bf16_tflops: float | None = Field(None, gt=0, le=1e6)
    price: float | None = Field(None, gt=0, le=1e6)
    power_w: float | None = Field(None, gt=0, le=1e6)
    nic_gbps: float | None = Field(None, gt=0, le=1e5)
    intra_node_gb_s: float | None = Field(None, gt=0, le=1e5)
    gpus_per_node: int | None = Field(None, ge=1, le=72)


class WorkloadIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq_len: float = Field(2048, gt=0, le=10_000_000, description="average tokens in KV")
    slo_tbt_ms: float = Field(150.0, gt=0, le=1_000_000, description="time-between-tokens SLO")


class OptionsIn(BaseModel):
    """Search knobs (a subset of :class:`analysis.planner.SearchOptions`)."""

    model_config = ConfigDict(extra="forbid")

    max_micro_batches: int = Field(4, ge=2, le=8, description="Nm")
    experts_per_node: list[Annotated[int, Field(ge=1, le=4096)]] | None = Field(
        None, min_length=1, max_length=16, description="x choices; null = powers of two"
    )
    tp_choices: list[Annotated[int, Field(ge=1, le=72)]] = Field(
        [1, 2, 4, 8], min_length=1, max_length=8
    )
    max_gpus: int | None = Field(None, ge=2, le=1_000_000)
    balance_tolerance: float = Field(0.25, gt=0, le=1)
    usable_memory: float = Field(0.9, gt=0, le=1)
    max_na: int = Field(512, ge=1, le=4096)


class FitIn(BaseModel):
    """How Te is fitted from stored bench_moe sweeps of the same model shape."""

    model_config = ConfigDict(extra="forbid")

    use_stored: bool = True
    quant: str | None = Field(None, max_length=64, pattern=_NAME)
    dispatch: str | None = Field("balanced", max_length=64, pattern=_NAME)
    cuda_graph: bool | None = True
    attention_dp: bool | None = None
    min_points: int = Field(3, ge=2, le=100_000)
    hardware: dict[str, Annotated[str, Field(max_length=64, pattern=_NAME)]] = Field(
        default_factory=dict, description="GPU name -> stored hardware label (default: name)"
    )


class LinearIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slope_ms: float = Field(ge=0, le=1e6)
    intercept_ms: float = Field(ge=-1e6, le=1e6)


class AttentionFitIn(LinearIn):
    gpu: str = Field(max_length=64, pattern=_NAME)
    tpa: int = Field(ge=1, le=72)


class PlanRequest(BaseModel):
    """What ``POST /planner/plan`` takes. Every field has a default."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    model: str = Field("mixtral_8x22b", max_length=64, pattern=_NAME)
    model_overrides: ModelOverrides | None = None
    workload: WorkloadIn = Field(default_factory=WorkloadIn)
    gpus: list[Annotated[str, Field(max_length=64, pattern=_NAME)]] = Field(
        default_factory=lambda: ["H20"], min_length=1, max_length=MAX_GPUS
    )
    gpu_overrides: dict[str, GPUOverrides] = Field(default_factory=dict)
    mode: Literal["homogeneous", "heterogeneous"] = "homogeneous"
    options: OptionsIn = Field(default_factory=OptionsIn)
    fit: FitIn = Field(default_factory=FitIn)
    expert_fits: dict[str, LinearIn] = Field(
        default_factory=dict, description="GPU name -> your own Te per expert (k3, k4)"
    )
    attention_fits: list[AttentionFitIn] = Field(default_factory=list, max_length=100)
    top: int = Field(20, ge=1, le=1000, description="alternatives returned")
    timeline_layers: int = Field(1, ge=1, le=8)

    @field_validator("gpus")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        upper = [v.upper() for v in value]
        if len(set(upper)) != len(upper):
            raise ValueError("GPU names must be distinct")
        return upper

    @field_validator("gpu_overrides", "expert_fits")
    @classmethod
    def _upper_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        return {k.strip().upper(): v for k, v in value.items()}


# ------------------------------------------------------------------ resolution
@dataclasses.dataclass(frozen=True)
class Resolved:
    model: ModelSpec
    gpus: tuple[GPUSpec, ...]
    workload: Workload
    options: SearchOptions


def resolve(req: PlanRequest) -> Resolved:
    """Catalogue entries with the request's overrides applied; PlanInputError if not."""
    over = req.model_overrides.model_dump(exclude_none=True) if req.model_overrides else {}
    base = MODELS.get(req.model)
    if base is None:
        missing = [f for f in MODEL_FIELDS[:8] if f not in over]
        if missing:
            raise PlanInputError(
                ["model"],
                f"unknown model {req.model!r} (catalogue: {', '.join(sorted(MODELS))}); "
                f"a custom model needs model_overrides with {', '.join(missing)}",
            )
        model = ModelSpec(name=req.model, source="user-defined", **over)
    else:
        model = dataclasses.replace(base, **over) if over else base
        if over:
            model = dataclasses.replace(model, source=f"{base.source}; edited: {', '.join(over)}")
    if model.top_k > model.num_experts:
        raise PlanInputError(["model_overrides", "top_k"], "top_k must not exceed num_experts")
    if model.dense_layers < 0:
        raise PlanInputError(["model_overrides", "dense_layers"], "must be >= 0")

    gpus = []
    for i, name in enumerate(req.gpus):
        g_over = req.gpu_overrides.get(name)
        fields = g_over.model_dump(exclude_none=True) if g_over else {}
        base_gpu = GPUS.get(name)
        if base_gpu is None:
            missing = [f for f in GPU_FIELDS[:-1] if f not in fields]
            if missing:
                raise PlanInputError(
                    ["gpus", i],
                    f"unknown GPU {name!r} (catalogue: {', '.join(GPUS)}); a custom GPU "
                    f"needs gpu_overrides[{name!r}] with {', '.join(missing)}",
                )
            gpus.append(GPUSpec(name=name, source="user-defined", **fields))
        else:
            gpus.append(dataclasses.replace(base_gpu, **fields) if fields else base_gpu)
    for key in req.gpu_overrides:
        if key not in req.gpus:
            raise PlanInputError(["gpu_overrides", key], f"{key!r} is not in gpus")
    for key in req.expert_fits:
        if key not in req.gpus:
            raise PlanInputError(["expert_fits", key], f"{key!r} is not in gpus")
    for i, af in enumerate(req.attention_fits):
        if af.gpu.upper() not in req.gpus:
            raise PlanInputError(["attention_fits", i, "gpu"], f"{af.gpu!r} is not in gpus")

    opt = req.options
    if opt.experts_per_node is not None and not any(
        model.num_experts % x == 0 for x in opt.experts_per_node
    ):
        raise PlanInputError(
            ["options", "experts_per_node"],
            f"no choice divides the model's {model.num_experts} experts",
        )
    if req.mode == "heterogeneous" and len(gpus) > HETERO_MAX_GPUS and not opt.experts_per_node:
        raise PlanInputError(
            ["gpus"],
            f"the heterogeneous search over {len(gpus)} GPUs ({len(gpus) ** 2} pairs) can "
            f"take about a minute: pick at most {HETERO_MAX_GPUS} GPUs or set "
            "options.experts_per_node",
        )
    options = SearchOptions(
        tp_choices=tuple(sorted(set(opt.tp_choices))),
        max_micro_batches=opt.max_micro_batches,
        experts_per_node=tuple(sorted(set(opt.experts_per_node))) if opt.experts_per_node else None,
        usable_memory=opt.usable_memory,
        balance_tolerance=opt.balance_tolerance,
        max_na=opt.max_na,
        max_gpus=opt.max_gpus,
    )
    workload = Workload(req.workload.seq_len, req.workload.slo_tbt_ms)
    return Resolved(model, tuple(gpus), workload, options)


# ------------------------------------------------------------------ the computation
CandidateLoader = Callable[[ModelSpec, Sequence[str]], pd.DataFrame]


def store_loader(store: Store) -> CandidateLoader:
    """Success candidates of the same model shape on the given hardware labels."""

    def load(model: ModelSpec, labels: Sequence[str]) -> pd.DataFrame:
        filters = {
            C.NUM_EXPERTS: model.num_experts,
            C.TOP_K: model.top_k,
            C.HIDDEN_SIZE: model.hidden_size,
            C.INTERMEDIATE_SIZE: model.intermediate_size,
            C.HARDWARE: sorted(set(labels)),
        }
        return store.candidate_frame(filters=filters, success_only=True, columns=_FIT_COLUMNS)

    return load


def fit_record(gpu: GPUSpec, fit: Fit, label: str, roofline: Fit) -> dict[str, Any]:
    return {
        "gpu": gpu.name,
        "hardware_label": label,
        "source": fit.source,
        "slope_ms": fit.slope_ms,
        "intercept_ms": fit.intercept_ms,
        "n_points": fit.n_points,
        "r2": fit.r2,
        "residual_std_ms": fit.residual_std_ms,
        "residual_max_ms": fit.residual_max_ms,
        "roofline_slope_ms": roofline.slope_ms,
        "roofline_intercept_ms": roofline.intercept_ms,
        "note": fit.note,
    }


def expert_fits(
    req: PlanRequest, res: Resolved, load: CandidateLoader | None
) -> tuple[dict[str, Fit], list[dict[str, Any]]]:
    """Te per GPU: the request's own coefficients, else a fit on stored sweeps, else the
    roofline (fit_expert_time's fallback). Returns the fits and their JSON records."""
    labels = {g.name: req.fit.hardware.get(g.name, g.name).upper() for g in res.gpus}
    frame = None
    if req.fit.use_stored and load is not None:
        needed = [g.name for g in res.gpus if g.name not in req.expert_fits]
        frame = load(res.model, [labels[n] for n in needed]) if needed else None
    fits: dict[str, Fit] = {}
    records = []
    for gpu in res.gpus:
        roof = expert_time_roofline(res.model, gpu, res.options.efficiency)
        own = req.expert_fits.get(gpu.name)
        if own is not None:
            fit = user_fit(own.slope_ms, own.intercept_ms, note="given in the request")
        elif frame is not None:
            fit = fit_expert_time(
                frame,
                res.model,
                gpu,
                hardware=labels[gpu.name],
                quant=req.fit.quant,
                cuda_graph=req.fit.cuda_graph,
                dispatch=req.fit.dispatch,
                attention_dp=req.fit.attention_dp,
                min_points=req.fit.min_points,
                efficiency=res.options.efficiency,
            )
        else:
            fit = dataclasses.replace(roof, note=roof.note + " (stored sweeps not used)")
        fits[gpu.name] = fit
        records.append(fit_record(gpu, fit, labels[gpu.name], roof))
    return fits, records


def search(req: PlanRequest, res: Resolved, efits: Mapping[str, Fit]) -> PlanResult:
    """Homogeneous: each listed GPU on its own (same-type pairs), best kept. Heterogeneous:
    every (attention, expert) pair of the listed GPUs."""
    afits = {
        (a.gpu.upper(), a.tpa): user_fit(a.slope_ms, a.intercept_ms, "given in the request")
        for a in req.attention_fits
    }
    if req.mode == "heterogeneous":
        return search_heterogeneous(
            res.model,
            res.workload,
            list(res.gpus),
            options=res.options,
            expert_fits=efits,
            attention_fits=afits,
        )
    results = [
        search_plans(
            res.model, res.workload, g, options=res.options, expert_fits=efits, attention_fits=afits
        )
        for g in res.gpus
    ]
    if len(results) == 1:
        return results[0]
    with_plan = [r for r in results if r.best is not None]
    if with_plan:
        chosen = max(with_plan, key=lambda r: r.best.tput_per_cost)  # type: ignore[union-attr]
    else:
        chosen = next((r for r in results if r.colocated is not None), results[0])
    frames = [r.alternatives for r in results if len(r.alternatives)]
    alts = (
        pd.concat(frames, ignore_index=True)
        .sort_values("tput_per_cost", ascending=False, kind="stable")
        .reset_index(drop=True)
        if frames
        else chosen.alternatives
    )
    notes = tuple(dict.fromkeys(n for r in results for n in r.notes))
    return PlanResult(chosen.best, alts, chosen.na_sweep, chosen.colocated, notes)


def finite(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, str | bytes):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _constraints(plan: Any) -> list[dict[str, Any]]:
    return [
        {"label": CONSTRAINT_LABELS.get(c.name, c.name), **dataclasses.asdict(c)}
        for c in plan.constraints
    ]


def _verdict(result: PlanResult) -> str:
    gain = result.disaggregation_gain
    if result.best is None:
        if result.colocated is not None:
            return "no disaggregated plan fits; the co-located deployment does"
        return "nothing fits the memory and the SLO"
    if gain is None:
        return "no co-located deployment on the same GPUs meets the SLO: disaggregation wins"
    if gain >= 1:
        return f"disaggregation pays: {gain:.2f}× the co-located throughput per cost"
    return (
        f"disaggregation does not pay: {gain:.2f}× the co-located throughput per cost "
        "(deploy co-located)"
    )


def run_plan(req: PlanRequest, load: CandidateLoader | None) -> dict[str, Any]:
    """The whole planner answer as a JSON-ready dict (also the exported document)."""
    started = time.perf_counter()
    res = resolve(req)
    efits, fit_records = expert_fits(req, res, load)
    result = search(req, res, efits)
    best = result.best
    best_body = None
    tl: list[dict[str, Any]] = []
    if best is not None:
        best_body = dataclasses.asdict(best)
        best_body["constraints"] = _constraints(best)
        best_body["all_constraints_met"] = all(c.met for c in best.constraints)
        tl = frame_records(timeline(best, req.timeline_layers))
    alts = result.alternatives
    payload = {
        "request": req.model_dump(mode="json"),
        "model": dataclasses.asdict(res.model),
        "gpus": [dataclasses.asdict(g) for g in res.gpus],
        "workload": dataclasses.asdict(res.workload),
        "mode": req.mode,
        "expert_fits": fit_records,
        "best": best_body,
        "colocated": dataclasses.asdict(result.colocated) if result.colocated else None,
        "disaggregation_gain": result.disaggregation_gain,
        "verdict": _verdict(result),
        "n_alternatives": len(alts),
        "alternative_columns": list(ALTERNATIVE_COLUMNS),
        "alternatives": frame_records(alts.head(req.top)),
        "na_sweep_columns": list(NA_SWEEP_COLUMNS),
        "na_sweep": frame_records(result.na_sweep),
        "timeline": tl,
        "notes": list(result.notes),
        "elapsed_ms": (time.perf_counter() - started) * 1e3,
    }
    return finite(payload)  # type: ignore[no-any-return]


def export_filename(payload: Mapping[str, Any]) -> str:
    best = payload.get("best") or {}
    gpus = (
        f"{best.get('attention_gpu')}-{best.get('expert_gpu')}"
        if best
        else "-".join(g["name"] for g in payload.get("gpus", []))
    )
    stem = f"plan-{payload.get('model', {}).get('name', 'model')}-{gpus}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", stem)[:120] + ".json"


def catalog(store: Store | None) -> dict[str, Any]:
    """Models and GPUs of the catalogue; per model, the stored sweeps of its shape."""
    runs = store.list_runs(limit=10_000).items if store is not None else pd.DataFrame()
    shapes: dict[tuple[int, int, int, int], list[dict[str, Any]]] = {}
    if len(runs):
        cols = [C.NUM_EXPERTS, C.TOP_K, C.HIDDEN_SIZE, C.INTERMEDIATE_SIZE]
        ok = runs.dropna(subset=cols)
        grouped = ok.groupby([*cols, C.HARDWARE, C.QUANT], dropna=False).size()
        for (e, k, h, hf, hw, q), n in grouped.items():
            shapes.setdefault((int(e), int(k), int(h), int(hf)), []).append(
                {"hardware": hw, "quant": q, "runs": int(n)}
            )
    models = []
    for m in MODELS.values():
        key = (m.num_experts, m.top_k, m.hidden_size, m.intermediate_size)
        models.append({**dataclasses.asdict(m), "stored_sweeps": shapes.get(key, [])})
    catalog: dict[str, Any] = finite(
        {
            "models": models,
            "gpus": [dataclasses.asdict(g) for g in GPUS.values()],
            "modes": ["homogeneous", "heterogeneous"],
            "limits": {"max_gpus": MAX_GPUS, "heterogeneous_max_gpus": HETERO_MAX_GPUS},
            "defaults": PlanRequest().model_dump(mode="json"),
        }
    )
    return catalog


# ------------------------------------------------------------------ endpoints
@router.get("/catalog", summary="Planner models and GPUs", dependencies=[Depends(require_read)])
def get_catalog(store: StoreDep) -> Response:
    return FastJSONResponse(catalog(store))


async def _plan_response(req: PlanRequest, store: Store, download: bool, where: str) -> Response:
    try:
        payload = await run_in_threadpool(run_plan, req, store_loader(store))
    except PlanInputError as exc:
        raise error(422, [where, *exc.loc], exc.msg, "invalid_plan_request") from exc
    headers = {}
    if download:
        headers["Content-Disposition"] = f'attachment; filename="{export_filename(payload)}"'
    return FastJSONResponse(payload, headers=headers)


_RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"description": "Invalid or inconsistent request (field path in detail.loc)"}
}


@router.post(
    "/plan",
    summary="Best disaggregated plan, alternatives, na sweep, co-located, timeline",
    dependencies=[Depends(require_read)],
    responses=_RESPONSES,
)
async def post_plan(
    req: PlanRequest,
    store: StoreDep,
    download: bool = False,
) -> Response:
    return await _plan_response(req, store, download, "body")


@router.get(
    "/plan",
    summary="The same plan from query parameters (catalogue figures only)",
    dependencies=[Depends(require_read)],
    responses=_RESPONSES,
)
async def get_plan(
    store: StoreDep,
    model: Annotated[str, Query(max_length=64, pattern=_NAME)] = "mixtral_8x22b",
    seq_len: Annotated[float, Query(gt=0, le=10_000_000)] = 2048,
    slo_tbt_ms: Annotated[float, Query(gt=0, le=1_000_000)] = 150.0,
    gpu: Annotated[list[str], Query(max_length=MAX_GPUS)] = ["H20"],  # noqa: B006
    mode: Literal["homogeneous", "heterogeneous"] = "homogeneous",
    max_micro_batches: Annotated[int, Query(ge=2, le=8)] = 4,
    experts_per_node: Annotated[int | None, Query(ge=1, le=4096)] = None,
    quant: Annotated[str | None, Query(max_length=64, pattern=_NAME)] = None,
    use_stored: bool = True,
    top: Annotated[int, Query(ge=1, le=1000)] = 20,
    download: bool = False,
) -> Response:
    for i, name in enumerate(gpu):
        if not re.match(_NAME, name):
            raise error(422, ["query", "gpu", i], "not a GPU name", "string_pattern_mismatch")
    try:
        req = PlanRequest(
            model=model,
            workload=WorkloadIn(seq_len=seq_len, slo_tbt_ms=slo_tbt_ms),
            gpus=gpu,
            mode=mode,
            options=OptionsIn(
                max_micro_batches=max_micro_batches,
                experts_per_node=[experts_per_node] if experts_per_node else None,
            ),
            fit=FitIn(quant=quant, use_stored=use_stored),
            top=top,
        )
    except ValidationError as exc:  # the distinct-GPU-names check
        first = exc.errors()[0]
        raise error(422, ["query", "gpu"], first["msg"], first["type"]) from exc
    return await _plan_response(req, store, download, "query")
