"""What the planner is asked: the validating request model and its resolution against
the model and GPU catalogues.

``POST /api/v1/planner/plan`` takes a :class:`PlanRequest` as its JSON body and the
/planner page builds one from its form, so both validate with the same bounds. A
request that passes pydantic can still name an unknown model or GPU, or be inconsistent
(top_k > num_experts, an override for a GPU that is not listed): :func:`resolve` raises
:class:`PlanInputError` with the field path for those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from analysis.planner import (
    GPUS,
    MIN_R2,
    MODELS,
    GPUSpec,
    ModelSpec,
    SearchOptions,
    Workload,
    estimate_evaluations,
)
from analysis.planner.plans import PAPER_SEQ_LEN, PAPER_SLO_TBT_MS

# Work limits of one request. The search is estimated before it runs (setups x m x na
# starting points, analysis.planner.estimate_evaluations); over MAX_ESTIMATED_EVALUATIONS
# is refused with a 422 naming what to reduce. While it runs, a Budget stops it after
# MAX_EVALUATIONS plan evaluations (the na climb adds steps the estimate cannot know) or
# WALL_BUDGET_S seconds and the answer says ``truncated``. bench/planner.py measures the
# largest allowed request (about 17k evaluations/s on one core).
MAX_ESTIMATED_EVALUATIONS = 40_000
MAX_EVALUATIONS = 80_000
WALL_BUDGET_S = 6.0
SENSITIVITY_RUNS = 7  # the base plan + 2 prices x 2 GPU types + 2 sequence lengths
HETERO_MAX_GPUS = 4  # kept in the catalogue limits for clients; the estimate decides
MAX_GPUS = 10
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 _.+\-]{0,63}$"

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
# A custom (non-catalogue) model must give the first eight model fields; a custom GPU
# every GPU field but gpus_per_node (which has a default).
_CUSTOM_MODEL_FIELDS = MODEL_FIELDS[:8]
_CUSTOM_GPU_FIELDS = GPU_FIELDS[:-1]


class PlanInputError(ValueError):
    """A request that is well-formed but names something unknown or inconsistent.

    ``loc`` is the field path inside the request (e.g. ``["gpus", 1]``), ``msg`` says why.
    """

    def __init__(self, loc: Sequence[str | int], msg: str) -> None:
        super().__init__(msg)
        self.loc = list(loc)
        self.msg = msg


# ------------------------------------------------------------------ request models
# Below this magnitude a non-zero number is refused: subnormal values (1e-320) pass a
# "> 0" bound but overflow once divided by (500 instead of 422).
TINY = 1e-9


class _Bounded(BaseModel):
    """Every number of the request is either 0 or at least :data:`TINY` in magnitude."""

    @field_validator("*", mode="after")
    @classmethod
    def _not_tiny(cls, value: object) -> object:
        if isinstance(value, float) and value != 0 and abs(value) < TINY:
            raise ValueError(f"must be 0 or at least {TINY:g} in magnitude")
        return value


class ModelOverrides(_Bounded):
    """Fields of :class:`analysis.planner.ModelSpec` to change (bytes are bytes)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

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


class GPUOverrides(_Bounded):
    """Fields of :class:`analysis.planner.GPUSpec` to change (price in L20 = 1 units)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    memory_gb: float | None = Field(None, gt=0, le=10000)
    bandwidth_gb_s: float | None = Field(None, gt=0, le=1e6)
    bf16_tflops: float | None = Field(None, gt=0, le=1e6)
    price: float | None = Field(None, gt=0, le=1e6)
    power_w: float | None = Field(None, gt=0, le=1e6)
    nic_gbps: float | None = Field(None, gt=0, le=1e5)
    intra_node_gb_s: float | None = Field(None, gt=0, le=1e5)
    gpus_per_node: int | None = Field(None, ge=1, le=72)


class WorkloadIn(_Bounded):
    """The serving workload: average KV length (tokens) and the TBT SLO (ms). Defaults
    are the paper's: s ≈ 650 (median input 571 + half the median output 159), 150 ms."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    seq_len: float = Field(PAPER_SEQ_LEN, gt=0, le=10_000_000, description="average tokens in KV")
    slo_tbt_ms: float = Field(
        PAPER_SLO_TBT_MS, gt=0, le=1_000_000, description="time-between-tokens SLO"
    )


class OptionsIn(_Bounded):
    """Search knobs (a subset of :class:`analysis.planner.SearchOptions`); defaults are
    the paper's (m in 3..4, TP in 1, 2, 4, 8, the co-located baseline on whole nodes)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    min_micro_batches: int = Field(3, ge=1, le=8, description="smallest m tried")
    max_micro_batches: int = Field(4, ge=1, le=8, description="Nm")
    experts_per_node: list[Annotated[int, Field(ge=1, le=4096)]] | None = Field(
        None, min_length=1, max_length=16, description="x choices; null = powers of two"
    )
    tp_choices: list[Annotated[int, Field(ge=1, le=72)]] = Field(
        [1, 2, 4, 8], min_length=1, max_length=8
    )
    max_gpus: int | None = Field(None, ge=2, le=1_000_000, description="GPU cap per plan")
    colocated_gpus: int | None = Field(
        None, ge=1, le=1_000_000, description="co-located baseline size; null = whole nodes"
    )
    near_best_pct: float = Field(
        2.0, ge=0, le=100, description="plans within this % of the best are summarised"
    )
    balance_tolerance: float = Field(0.25, gt=0, le=1)
    usable_memory: float = Field(0.9, gt=0, le=1)
    max_na: int = Field(512, ge=1, le=4096)


class FitIn(_Bounded):
    """How Te is fitted from stored bench_moe sweeps (analysis.planner.te_fit): decode,
    balanced routing, TensorRT-LLM backends, one (quant, attention mode, EP size) group
    and one backend (null = the most-covered group and the measured best backend)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    use_stored: bool = True
    quant: str | None = Field(None, max_length=64, pattern=NAME_PATTERN)
    attention_dp: bool | None = None
    ep_size: int | None = Field(None, ge=1, le=4096)
    backend: str | None = Field(None, max_length=64, pattern=NAME_PATTERN)
    be_min: float | None = Field(None, ge=0, le=1e9, description="tokens per expert, lowest")
    be_max: float | None = Field(None, gt=0, le=1e9, description="tokens per expert, highest")
    min_points: int = Field(3, ge=2, le=100_000)
    min_r2: float = Field(MIN_R2, ge=0, le=1, description="R² below this: fit not used")
    force: bool = Field(False, description="use the fit even below min_r2")
    hardware: dict[str, Annotated[str, Field(max_length=64, pattern=NAME_PATTERN)]] = Field(
        default_factory=dict, description="GPU name -> stored hardware label (default: name)"
    )


class LinearIn(_Bounded):
    """Your own linear time law: ``slope_ms * tokens + intercept_ms``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    slope_ms: float = Field(gt=0, le=1e6, description="ms per token, > 0")
    intercept_ms: float = Field(gt=0, le=1e6, description="ms at zero tokens, > 0")


class AttentionFitIn(LinearIn):
    """Your own attention time law for one GPU at one attention TP size."""

    gpu: str = Field(max_length=64, pattern=NAME_PATTERN)
    tpa: int = Field(ge=1, le=72)


class PlanRequest(_Bounded):
    """What the planner takes (``POST /planner/plan``, the /planner page). Every field
    has a default; GPU names are upper-cased and must be distinct."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, allow_inf_nan=False)

    model: str = Field("mixtral_8x22b", max_length=64, pattern=NAME_PATTERN)
    model_overrides: ModelOverrides | None = None
    workload: WorkloadIn = Field(default_factory=WorkloadIn)
    gpus: list[Annotated[str, Field(max_length=64, pattern=NAME_PATTERN)]] = Field(
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
    sensitivity: bool = Field(
        False, description="also re-plan at ±20 % GPU prices and sequence length"
    )

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
    """A request turned into the planner's own inputs."""

    model: ModelSpec
    gpus: tuple[GPUSpec, ...]
    workload: Workload
    options: SearchOptions
    estimated_evaluations: int = 0


def _resolve_model(req: PlanRequest) -> ModelSpec:
    over = req.model_overrides.model_dump(exclude_none=True) if req.model_overrides else {}
    base = MODELS.get(req.model)
    if base is None:
        missing = [f for f in _CUSTOM_MODEL_FIELDS if f not in over]
        if missing:
            raise PlanInputError(
                ["model"],
                f"unknown model {req.model!r} (catalogue: {', '.join(sorted(MODELS))}); "
                f"a custom model needs model_overrides with {', '.join(missing)}",
            )
        model = ModelSpec(name=req.model, source="user-defined", **over)
    elif over:
        model = dataclasses.replace(base, **over)
        model = dataclasses.replace(model, source=f"{base.source}; edited: {', '.join(over)}")
    else:
        model = base
    if model.top_k > model.num_experts:
        raise PlanInputError(["model_overrides", "top_k"], "top_k must not exceed num_experts")
    if model.dense_layers < 0:
        raise PlanInputError(["model_overrides", "dense_layers"], "must be >= 0")
    return model


def _resolve_gpus(req: PlanRequest) -> tuple[GPUSpec, ...]:
    gpus = []
    for i, name in enumerate(req.gpus):
        g_over = req.gpu_overrides.get(name)
        fields = g_over.model_dump(exclude_none=True) if g_over else {}
        base_gpu = GPUS.get(name)
        if base_gpu is None:
            missing = [f for f in _CUSTOM_GPU_FIELDS if f not in fields]
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
    return tuple(gpus)


def resolve(req: PlanRequest) -> Resolved:
    """Catalogue entries with the request's overrides applied, the workload and the
    search options. Raises :class:`PlanInputError` for an unknown model or GPU without
    the figures to define it, an override of a GPU that is not listed, experts-per-node
    choices none of which divides the experts, min above max micro-batches, or a search
    whose estimated work exceeds :data:`MAX_ESTIMATED_EVALUATIONS` (the loc names the
    field whose reduction helps most)."""
    model = _resolve_model(req)
    gpus = _resolve_gpus(req)
    opt = req.options
    if opt.experts_per_node is not None and not any(
        model.num_experts % x == 0 for x in opt.experts_per_node
    ):
        raise PlanInputError(
            ["options", "experts_per_node"],
            f"no choice divides the model's {model.num_experts} experts",
        )
    if opt.min_micro_batches > opt.max_micro_batches:
        raise PlanInputError(
            ["options", "min_micro_batches"],
            f"must not exceed max_micro_batches ({opt.max_micro_batches})",
        )
    fit = req.fit
    if fit.be_min is not None and fit.be_max is not None and fit.be_min >= fit.be_max:
        raise PlanInputError(["fit", "be_min"], "must be below fit.be_max")
    options = SearchOptions(
        tp_choices=tuple(sorted(set(opt.tp_choices))),
        min_micro_batches=opt.min_micro_batches,
        max_micro_batches=opt.max_micro_batches,
        experts_per_node=tuple(sorted(set(opt.experts_per_node))) if opt.experts_per_node else None,
        usable_memory=opt.usable_memory,
        balance_tolerance=opt.balance_tolerance,
        max_na=opt.max_na,
        max_gpus=opt.max_gpus,
        colocated_gpus=opt.colocated_gpus,
    )
    workload = Workload(req.workload.seq_len, req.workload.slo_tbt_ms)
    hetero = req.mode == "heterogeneous"
    estimate = estimate_evaluations(model, workload, gpus, options, heterogeneous=hetero)
    if estimate > MAX_ESTIMATED_EVALUATIONS:
        raise PlanInputError(
            _biggest_knob(req, model, hetero),
            f"this search needs about {estimate:,} plan evaluations, over the limit of "
            f"{MAX_ESTIMATED_EVALUATIONS:,} per request (GPU pairs x tp_choices² x "
            "experts-per-node choices x micro-batch counts x 8 na starts): list fewer gpus, "
            "fewer options.tp_choices, a smaller options.max_micro_batches or pin "
            "options.experts_per_node",
        )
    if req.sensitivity and estimate * SENSITIVITY_RUNS > MAX_ESTIMATED_EVALUATIONS:
        raise PlanInputError(
            ["sensitivity"],
            f"sensitivity re-plans up to {SENSITIVITY_RUNS} more times: about "
            f"{estimate * SENSITIVITY_RUNS:,} plan evaluations, over the limit of "
            f"{MAX_ESTIMATED_EVALUATIONS:,}; narrow the search or turn sensitivity off",
        )
    return Resolved(model, gpus, workload, options, estimate)


def _biggest_knob(req: PlanRequest, model: ModelSpec, hetero: bool) -> list[str | int]:
    """The request field whose reduction shrinks the search most (named in the 422)."""
    opt = req.options
    xs = sum(1 for k in range(13) if 2**k <= model.num_experts and model.num_experts % 2**k == 0)
    factors: list[tuple[float, list[str | int]]] = [
        (len(req.gpus) ** (2 if hetero else 1), ["gpus"]),
        (len(set(opt.tp_choices)) ** 2, ["options", "tp_choices"]),
        (opt.max_micro_batches - opt.min_micro_batches + 1, ["options", "max_micro_batches"]),
    ]
    if opt.experts_per_node is None:
        factors.append((xs, ["options", "experts_per_node"]))
    return max(factors, key=lambda f: f[0])[1]
