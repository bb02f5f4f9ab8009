"""Recommendation for one deployment: the guide's tree and the measured best beside it.

``/api/v1/recommendation``, ``/api/v1/export`` and the Recommend page all call
:func:`recommendation`, so they agree on the model shape, the thresholds, the workload
size, the routing pattern, the nearest measured workload (``analysis.measured``:
nearest in log2(num_tokens), ties to the larger count), the winner inside it and
whether the data agree with the tree (``service.agreement.workload_agreement``, the
row ``/api/v1/agreement?detail=true`` shows for that workload).

Workload size: ``num_tokens`` as bench_moe counts it, or -- instead -- the serving load
it comes from (``analysis.concurrency``): ``concurrency`` (+ ``mtp``, ``max_batch_size``)
for decode, ``max_num_tokens`` (+ ``isl``, ``max_batch_size``) for prefill.

Measured rows: configurations (median over repeat runs, or the latest run: ``repeats``)
of one routing pattern (``dispatch``; default balanced where measured).

Model shape (num_experts, top_k, hidden_size): given explicitly (all three), else the
newest stored run of the model that records it, else the built-in tables
(``analysis.planner.MODELS`` and ``analysis.serving_map``; they agree where they
overlap); else :class:`~service.errors.InvalidQuery` on ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from analysis import columns as C
from analysis.capabilities import mnnvl_at
from analysis.concurrency import TokenCount, decode_tokens, prefill_tokens
from analysis.identity import Repeats
from analysis.measured import MeasuredPick, measured_top, nearest_measured_best
from analysis.planner import MODELS
from analysis.serving_map import CUSTOM_SHAPES, MODEL_SHAPES
from analysis.tree import Deployment, Recommendation, recommend
from service.agreement import workload_agreement
from service.capabilities import mnnvl_proven
from service.errors import InvalidQuery
from service.frames import Cell, DashData
from service.recommend_confidence import RecommendConfidence, recommend_confidence
from service.scope import Attention, Phase, Routing, Scope, route, scoped_frame
from service.thresholds import ThresholdSource, tree_thresholds

Shape = tuple[int, int, int]
BUILTIN_SHAPES: dict[str, Shape] = {
    **{name: (m.num_experts, m.top_k, m.hidden_size) for name, m in MODELS.items()},
    **{name: (e, k, h) for name, (e, k, h, _) in {**CUSTOM_SHAPES, **MODEL_SHAPES}.items()},
}


class DeploymentRequest(BaseModel):
    """A deployment to recommend for. The model shape comes from the stored runs of
    ``model`` unless num_experts/top_k/hidden_size are all given. The workload is
    ``num_tokens``, or the serving load it is computed from (see module docstring)."""

    # an endpoint's other query parameters share the query string
    model_config = ConfigDict(extra="ignore")

    hardware: str = Field(..., max_length=32, description="GB300, B300, H200 …")
    quant: str = Field(
        ..., max_length=64, description="NVFP4, W4A8_MXFP4_MXFP8, FP8_BLOCK_SCALES …"
    )
    world_size: int = Field(..., ge=1, le=100000)
    attention: Attention = "dp"
    phase: Phase = "decode"
    num_tokens: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="bench_moe num_tokens (global under attention DP, per rank under TP); "
        "or give concurrency (decode) / max_num_tokens (prefill) instead",
    )
    concurrency: int | None = Field(
        None, ge=1, le=10_000_000, description="decode: requests in flight on the instance"
    )
    mtp: int = Field(
        0,
        ge=0,
        le=64,
        description="MTP draft tokens per request (decode load; both workers' "
        "speculative_config in the export)",
    )
    max_batch_size: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="requests per attention rank at most (decode: also the CUDA-graph "
        "max_batch_size, default 128)",
    )
    max_num_tokens: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="prefill: tokens per forward per rank (the load); decode: the worker's "
        "max_num_tokens in the export (default max_batch_size x (1 + mtp))",
    )
    isl: int | None = Field(None, ge=1, le=10_000_000, description="input length (tokens)")
    osl: int | None = Field(
        None, ge=1, le=10_000_000, description="output length (tokens; the export's max_seq_len)"
    )
    model: str | None = Field(None, max_length=100)
    num_experts: int | None = Field(None, ge=1, le=100000)
    top_k: int | None = Field(None, ge=1, le=1024)
    hidden_size: int | None = Field(None, ge=1, le=1_000_000)
    thresholds: ThresholdSource = "published"
    dispatch: str | None = Field(
        None,
        max_length=64,
        description="routing pattern of the measured rows; default balanced where measured",
    )
    repeats: Repeats = Field("median", description="repeat runs: median, or the latest run")


def deployment_request(**values: object) -> DeploymentRequest:
    """A :class:`DeploymentRequest` from plain values (a page's controls); an invalid
    value raises :class:`InvalidQuery` naming the first field at fault."""
    try:
        return DeploymentRequest.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "deployment"
        raise InvalidQuery(field, str(err["msg"]), str(err["type"])) from exc


def token_count(req: DeploymentRequest) -> TokenCount | None:
    """The serving load converted to num_tokens (``analysis.concurrency``), None when
    ``num_tokens`` is given. Raises :class:`InvalidQuery` on ``num_tokens`` when both or
    neither are given, or the load does not fit the phase."""
    decode = req.phase == "decode"
    load = req.concurrency if decode else req.max_num_tokens
    other = req.max_num_tokens if decode else req.concurrency
    need = "concurrency" if decode else "max_num_tokens"
    if req.num_tokens is not None:
        if load is not None:
            raise InvalidQuery("num_tokens", f"give num_tokens or {need}, not both", "conflicting")
        return None
    if load is None:
        msg = f"give num_tokens, or {need} to compute it from ({req.phase})"
        if other is not None:
            msg += f"; {'max_num_tokens' if decode else 'concurrency'} applies to the other phase"
        raise InvalidQuery("num_tokens", msg, "missing")
    dp = req.attention == "dp"
    if decode:
        return decode_tokens(
            load, req.world_size, dp, mtp=req.mtp, max_batch_size=req.max_batch_size
        )
    return prefill_tokens(
        req.world_size, dp, max_num_tokens=load, isl=req.isl, max_batch_size=req.max_batch_size
    )


def _stored_shape(data: DashData, model: str) -> Shape | None:
    """(num_experts, top_k, hidden_size) of the newest stored run of ``model`` that
    records all three; None when no such run exists."""

    def load() -> Shape | None:
        runs = data.store.list_runs(model=model, limit=20).items
        for r in runs.to_dict("records"):
            vals = (r.get(C.NUM_EXPERTS), r.get(C.TOP_K), r.get(C.HIDDEN_SIZE))
            if all(v is not None and not pd.isna(v) for v in vals):
                return int(vals[0]), int(vals[1]), int(vals[2])
        return None

    return data.cached(("model-shape", model), load, where={C.MODEL: model})


def model_shape(data: DashData, req: DeploymentRequest) -> Shape:
    """The deployment's (num_experts, top_k, hidden_size); see module docstring."""
    if req.num_experts and req.top_k and req.hidden_size:
        return req.num_experts, req.top_k, req.hidden_size
    if not req.model:
        raise InvalidQuery("model", "give model, or num_experts + top_k + hidden_size", "missing")
    shape = _stored_shape(data, req.model) or BUILTIN_SHAPES.get(req.model)
    if shape is None:
        raise InvalidQuery(
            "model",
            f"unknown model {req.model!r}: no stored runs and not in the built-in table; "
            "give num_experts, top_k and hidden_size",
            "unknown",
        )
    return shape


def known_models(data: DashData) -> list[str]:
    """Every model a recommendation can be asked for by name: stored and built-in."""
    cov = data.coverage()
    stored = {str(m) for m in cov[C.MODEL].dropna().unique()} if not cov.empty else set()
    return sorted(stored | set(BUILTIN_SHAPES))


def deployment(data: DashData, req: DeploymentRequest) -> Deployment:
    """The tree's input for ``req`` (hardware upper-cased, shape per :func:`model_shape`,
    num_tokens given or computed by :func:`token_count`, MNNVL from the stored
    measurements where an NVLINK_* comm ran at this world size or larger)."""
    count = token_count(req)  # the workload first: a missing num_tokens is named first
    experts, top_k, hidden = model_shape(data, req)
    return Deployment(
        hardware=req.hardware.upper(),
        num_experts=experts,
        top_k=top_k,
        hidden_size=hidden,
        quant=req.quant,
        world_size=req.world_size,
        attention_dp=req.attention == "dp",
        cuda_graph=req.phase == "decode",
        num_tokens=count.num_tokens if count is not None else int(req.num_tokens or 1),
        model=req.model,
        mnnvl=mnnvl_at(mnnvl_proven(data), req.hardware, req.world_size),
    )


@dataclass(frozen=True)
class RecommendationAnswer:
    """The tree's pick for ``deployment`` and, when ``model`` was given and the store
    holds the same model/hardware/quant/world size/attention/phase, the measured best
    at the nearest workload (``measured``) with its runners-up (``top``: configurations
    in pick order with ``rank``; empty without a measurement). ``tokens``: how
    num_tokens was computed (None when given); ``routing``: the routing pattern of the
    measured rows; ``agreement``: the agreement row of the measured workload (tree at
    that num_tokens vs its best, backend and comm; None without a measurement)."""

    deployment: Deployment
    thresholds: ThresholdSource
    tree: Recommendation
    measured: MeasuredPick | None
    top: pd.DataFrame
    tokens: TokenCount | None = None
    routing: Routing | None = None
    repeats: str = "median"
    agreement: dict[str, Any] | None = None
    # measured or not at the asked workload, and how far the pick can be trusted
    # (service.recommend_confidence: the Best table's words; both neighbours otherwise)
    confidence: RecommendConfidence | None = None

    @property
    def agrees(self) -> bool | None:
        """Whether the measured best at its workload uses the tree's backend *and* the
        comm the tree's advice runs (the agreement API's verdict); None without data."""
        if self.agreement is None:
            return None
        return bool(self.agreement["agrees"])


def measured_frame(data: DashData, dep: Deployment) -> pd.DataFrame:
    """The successful candidates the measured pick is chosen from: the deployment's
    model, hardware, quant and world size (attention and phase are matched later)."""
    if dep.model is None:
        return pd.DataFrame()
    scope = Scope(
        model=dep.model, hardware=dep.hardware, quant=dep.quant, world_size=dep.world_size
    )
    return scoped_frame(data, scope)


def measured_scope(dep: Deployment, dispatch: str | None) -> Scope:
    """The slice the measured pick and its agreement row come from: the deployment's
    model, hardware, quant, world size, attention and phase, one routing pattern."""
    return Scope(
        model=dep.model,
        hardware=dep.hardware,
        quant=dep.quant,
        world_size=dep.world_size,
        attention="dp" if dep.attention_dp else "tp",
        phase="decode" if dep.cuda_graph else "prefill",
        dispatch=dispatch,
    )


def dispatch_choices(data: DashData, req: DeploymentRequest) -> tuple[list[str], str]:
    """(routing patterns stored for the request's model, hardware, quant, world size,
    attention and phase -- sorted; the one used by default, "" when none)."""
    if not req.model:
        return [], ""
    scope = Scope(
        model=req.model,
        hardware=req.hardware.upper(),
        quant=req.quant,
        world_size=req.world_size,
        attention=req.attention,
        phase=req.phase,
    )
    _, routing = route(scoped_frame(data, scope), None)
    return list(routing.known), (routing.used[0] if routing.used else "")


def recommendation(
    data: DashData, req: DeploymentRequest, n_top: int = 3, with_measured: bool = True
) -> RecommendationAnswer:
    """The tree (``req.thresholds``: published, derived or validated from the store)
    and, unless ``with_measured`` is False, the measured best for ``req`` with ``n_top``
    configurations of its workload and that workload's agreement row. Raises
    :class:`InvalidQuery` when the model shape or the workload size is unusable, or the
    routing pattern is not in the slice."""
    dep = deployment(data, req)
    tokens = token_count(req)
    tree = recommend(dep, tree_thresholds(data, req.thresholds))
    frame = measured_frame(data, dep) if with_measured else pd.DataFrame()
    routing = None
    pick = None
    top = pd.DataFrame()
    agreement = None
    confidence = None
    if not frame.empty:
        # the routing pattern is resolved over the deployment's own attention and phase
        # (the rows the pick compares), then the agreement row reads that same pattern
        family = measured_scope(dep, None)
        sub, routing = route(scoped_frame(data, family), req.dispatch)
        pick = nearest_measured_best(sub, dep, req.repeats) if not sub.empty else None
        top = measured_top(sub, dep, n_top, req.repeats) if pick is not None else pd.DataFrame()
        if pick is not None:
            pattern = routing.used[0] if len(routing.used) == 1 else None
            agreement = workload_agreement(
                data,
                family.model_copy(update={"dispatch": pattern}),
                pick.measured_num_tokens,
                req.thresholds,
                req.repeats,
            )
            confidence = recommend_confidence(
                data,
                Cell(str(dep.model), dep.hardware, dep.quant),
                dep.world_size,
                dep.num_tokens,
                dep.cuda_graph,
                dep.attention_dp,
                pattern,
            )
    return RecommendationAnswer(
        dep, req.thresholds, tree, pick, top, tokens, routing, req.repeats, agreement, confidence
    )
