"""Recommendation for one deployment: the guide's tree and the measured best beside it.

``/api/v1/recommendation``, ``/api/v1/export`` and the Recommend page all call
:func:`recommendation`, so they agree on the model shape, the thresholds, the nearest
measured workload (``analysis.measured``: nearest in log2(num_tokens), ties to the
larger count) and the winner inside it.

Model shape (num_experts, top_k, hidden_size): given explicitly (all three), else the
newest stored run of the model that records it, else the built-in tables
(``analysis.planner.MODELS`` and ``analysis.serving_map``; they agree where they
overlap); else :class:`~service.errors.InvalidQuery` on ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from analysis import columns as C
from analysis.measured import MeasuredPick, measured_top, nearest_measured_best
from analysis.planner import MODELS
from analysis.serving_map import CUSTOM_SHAPES, MODEL_SHAPES
from analysis.tree import Deployment, Recommendation, recommend
from service.errors import InvalidQuery
from service.frames import DashData
from service.scope import Attention, Phase, Scope, scoped_frame
from service.thresholds import ThresholdSource, tree_thresholds

Shape = tuple[int, int, int]
BUILTIN_SHAPES: dict[str, Shape] = {
    **{name: (m.num_experts, m.top_k, m.hidden_size) for name, m in MODELS.items()},
    **{name: (e, k, h) for name, (e, k, h, _) in {**CUSTOM_SHAPES, **MODEL_SHAPES}.items()},
}


class DeploymentRequest(BaseModel):
    """A deployment to recommend for. The model shape comes from the stored runs of
    ``model`` unless num_experts/top_k/hidden_size are all given."""

    # an endpoint's other query parameters share the query string
    model_config = ConfigDict(extra="ignore")

    hardware: str = Field(..., max_length=32, description="GB300, B300, H200 …")
    quant: str = Field(
        ..., max_length=64, description="NVFP4, W4A8_MXFP4_MXFP8, FP8_BLOCK_SCALES …"
    )
    world_size: int = Field(..., ge=1, le=100000)
    attention: Attention = "dp"
    phase: Phase = "decode"
    num_tokens: int = Field(..., ge=1, le=10_000_000, description="bench_moe num_tokens")
    model: str | None = Field(None, max_length=100)
    num_experts: int | None = Field(None, ge=1, le=100000)
    top_k: int | None = Field(None, ge=1, le=1024)
    hidden_size: int | None = Field(None, ge=1, le=1_000_000)
    thresholds: ThresholdSource = "published"


def deployment_request(**values: object) -> DeploymentRequest:
    """A :class:`DeploymentRequest` from plain values (a page's controls); an invalid
    value raises :class:`InvalidQuery` naming the first field at fault."""
    try:
        return DeploymentRequest.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "deployment"
        raise InvalidQuery(field, str(err["msg"]), str(err["type"])) from exc


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

    return data.cached(("model-shape", model), load)


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
    """The tree's input for ``req`` (hardware upper-cased, shape per :func:`model_shape`)."""
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
        num_tokens=req.num_tokens,
        model=req.model,
    )


@dataclass(frozen=True)
class RecommendationAnswer:
    """The tree's pick for ``deployment`` and, when ``model`` was given and the store
    holds the same model/hardware/quant/world size/attention/phase, the measured best
    at the nearest workload (``measured``) with its runners-up (``top``: rows in pick
    order with ``rank``; empty without a measurement)."""

    deployment: Deployment
    thresholds: ThresholdSource
    tree: Recommendation
    measured: MeasuredPick | None
    top: pd.DataFrame

    @property
    def agrees(self) -> bool | None:
        """Whether the measured best uses the tree's backend (None without data)."""
        if self.measured is None:
            return None
        return self.measured.recommendation.backend == self.tree.backend


def measured_frame(data: DashData, dep: Deployment) -> pd.DataFrame:
    """The successful candidates the measured pick is chosen from: the deployment's
    model, hardware, quant and world size (attention and phase are matched later)."""
    if dep.model is None:
        return pd.DataFrame()
    scope = Scope(
        model=dep.model, hardware=dep.hardware, quant=dep.quant, world_size=dep.world_size
    )
    return scoped_frame(data, scope)


def recommendation(
    data: DashData, req: DeploymentRequest, n_top: int = 3, with_measured: bool = True
) -> RecommendationAnswer:
    """The tree (``req.thresholds``: published or derived from the store) and, unless
    ``with_measured`` is False, the measured best for ``req`` with ``n_top`` rows of its
    workload. Raises :class:`InvalidQuery` when the model shape is unknown."""
    dep = deployment(data, req)
    tree = recommend(dep, tree_thresholds(data, req.thresholds))
    frame = measured_frame(data, dep) if with_measured else pd.DataFrame()
    pick = nearest_measured_best(frame, dep) if not frame.empty else None
    top = measured_top(frame, dep, n_top) if pick is not None else pd.DataFrame()
    return RecommendationAnswer(dep, req.thresholds, tree, pick, top)
