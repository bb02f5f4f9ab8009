"""Plan data shapes returned by the planner (frozen dataclasses and frame columns).

Units: ms, tokens, tokens/s, normalised cost units (catalog.GPUSpec.price), watts, GB.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import pandas as pd

from analysis.planner.perf_model import DEFAULT_EFFICIENCY, DEFAULT_UTIL, Efficiency, UtilCurve
from analysis.planner.tp_cost import DEFAULT_TP_COST, TPCost

# The paper's evaluation workload: median input 571 + median output 159 tokens, so the
# average KV length over a decode is about 571 + 159/2 ≈ 650 tokens; TBT SLO 150 ms.
PAPER_SEQ_LEN = 650.0
PAPER_SLO_TBT_MS = 150.0


@dataclass(frozen=True)
class Workload:
    """Average sequence length ``s`` (tokens held in KV per request) and the TBT SLO."""

    seq_len: float = PAPER_SEQ_LEN
    slo_tbt_ms: float = PAPER_SLO_TBT_MS


@dataclass(frozen=True)
class SearchOptions:
    """Knobs of the search. ``experts_per_node=None`` tries every power of two dividing E.

    Defaults are the paper's: m in 3..Nm with Nm = 4 (Algorithm 1 line 6), TP in
    {1, 2, 4, 8}; ``colocated_gpus=None`` compares against the paper's co-located baseline,
    the smallest whole number of nodes (8, 16, ... GPUs) of one type that holds the model
    and meets the SLO, rather than a baseline the size of the plan.
    """

    tp_choices: tuple[int, ...] = (1, 2, 4, 8)
    max_micro_batches: int = 4  # Nm
    min_micro_batches: int = 3
    experts_per_node: tuple[int, ...] | None = None
    usable_memory: float = 0.9  # fraction of capacity for weights + KV (rest: activations)
    balance_tolerance: float = 0.25  # |Ta - Te| <= tol * max(Ta, Te) counts as Ta ≈ Te
    na_multiples: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
    max_na: int = 512
    max_gpus: int | None = None  # cap on attention + expert GPUs of one instance
    extrapolation_factor: float = 2.0  # be may go this factor beyond a Te fit's range
    colocated_gpus: int | None = None  # co-located baseline size; None = paper's (whole nodes)
    efficiency: Efficiency = DEFAULT_EFFICIENCY
    util: UtilCurve = DEFAULT_UTIL
    tp_cost: TPCost = DEFAULT_TP_COST


class Budget:
    """Work a search may do: plan evaluations and a wall-clock deadline (monotonic s).

    :meth:`spend` counts one plan evaluation and says whether the search may go on; once
    it says no, ``truncated`` is set and stays set, and the search answers with what it
    found. ``cancelled`` (e.g. the client went away) stops it the same way.
    """

    def __init__(
        self,
        max_evaluations: int | None = None,
        deadline: float | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.max_evaluations = max_evaluations
        self.deadline = deadline
        self.cancelled = cancelled
        self.evaluations = 0
        self.truncated = False
        self.reason = ""

    def spend(self) -> bool:
        """Count one evaluation; False (and ``truncated``) when over budget."""
        if self.truncated:
            return False
        self.evaluations += 1
        if self.max_evaluations is not None and self.evaluations > self.max_evaluations:
            self.reason = f"plan evaluations reached {self.max_evaluations}"
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.reason = "wall-clock budget reached"
        elif self.cancelled is not None and self.cancelled():
            self.reason = "cancelled"
        else:
            return True
        self.truncated = True
        return False


@dataclass(frozen=True)
class ConstraintCheck:
    """One pipeline constraint: met or violated, with the two numbers compared."""

    name: str
    met: bool
    value: float
    bound: float
    detail: str


@dataclass(frozen=True)
class Plan:
    """One disaggregated deployment with its model numbers (ms, tokens/s, cost units)."""

    attention_gpu: str
    expert_gpu: str
    tpa: int
    tpe: int
    na: int
    m: int
    experts_per_node: int
    expert_nodes: int
    batch: int  # B, global batch (sequences decoding together)
    ba: int
    be: float
    ta_ms: float
    te_ms: float
    tc_ms: float
    tf_ms: float
    tbt_ms: float  # per-micro-batch iteration time, checked against the SLO
    t_total_ms: float  # paper Eq. 5, used for throughput
    iter_lower_ms: float
    iter_upper_ms: float
    throughput: float  # tokens/s = B / Ttotal
    gpus: int
    attention_gpus: int
    expert_gpus: int
    cost: float
    power_w: float
    tput_per_gpu: float
    tput_per_cost: float
    tput_per_watt: float
    attention_mem_gb: float
    attention_cap_gb: float
    expert_mem_gb: float
    expert_cap_gb: float
    na_balance: float
    m_required: float  # 2 * (1 + Tc/Tf)
    attention_fit: str
    expert_fit: str
    constraints: tuple[ConstraintCheck, ...] = field(default=())
    te_be_min: float = math.nan  # tokens-per-expert range the Te fit saw (NaN: not a fit)
    te_be_max: float = math.nan
    extrapolated: bool = False  # be outside that range (but within the allowed factor)

    @property
    def constraints_met(self) -> bool:
        """All three pipeline constraints hold (plans that fail one rank after the rest)."""
        return all(c.met for c in self.constraints)


@dataclass(frozen=True)
class ColocatedPlan:
    """Same GPUs, attention and experts on every GPU (attention TP x DP, experts spread)."""

    gpu: str
    gpus: int
    tp_attention: int
    replicas: int
    batch: int
    ta_ms: float
    te_ms: float
    tc_ms: float
    tbt_ms: float
    throughput: float
    tput_per_gpu: float
    tput_per_cost: float
    tput_per_watt: float
    memory_gb: float
    capacity_gb: float
    be: float = math.nan  # tokens per expert per step
    extrapolated: bool = False  # be outside the Te fit's range (within the allowed factor)


ALTERNATIVE_COLUMNS: tuple[str, ...] = (
    "attention_gpu",
    "expert_gpu",
    "tpa",
    "tpe",
    "na",
    "m",
    "experts_per_node",
    "expert_nodes",
    "batch",
    "ba",
    "be",
    "ta_ms",
    "te_ms",
    "tc_ms",
    "tbt_ms",
    "t_total_ms",
    "throughput",
    "gpus",
    "cost",
    "tput_per_gpu",
    "tput_per_cost",
    "tput_per_watt",
    "extrapolated",
    "balance_met",
    "comm_hidden_met",
    "depth_met",
    "constraints_met",
)
NA_SWEEP_COLUMNS: tuple[str, ...] = (
    "na",
    "feasible",
    "batch",
    "ta_ms",
    "te_ms",
    "tbt_ms",
    "throughput",
    "gpus",
    "tput_per_gpu",
    "tput_per_cost",
    "balance_met",
)


@dataclass(frozen=True)
class PlanResult:
    """What a search returns. ``best`` and ``alternatives`` hold only plans that fit and
    meet the three pipeline constraints; ``broken`` the plans that fit but break one
    (column ``broken`` names which). ``best`` is None when none is offered, and
    ``binding`` then says why (``analysis.planner.feasibility.binding_reason``)."""

    best: Plan | None
    alternatives: pd.DataFrame
    na_sweep: pd.DataFrame
    colocated: ColocatedPlan | None
    notes: tuple[str, ...] = ()
    truncated: bool = False  # the budget stopped the search: best found so far
    evaluations: int = 0  # plan evaluations spent
    # plans that fit but break a pipeline constraint: not offered, listed apart
    broken: pd.DataFrame = field(default_factory=pd.DataFrame)
    binding: tuple[str, str] | None = None  # (reason code, sentence) when best is None

    @property
    def disaggregation_gain(self) -> float | None:
        """best / co-located throughput per cost (< 1: disaggregation does not pay)."""
        if self.best is None or self.colocated is None:
            return None
        return self.best.tput_per_cost / self.colocated.tput_per_cost

    def to_json(self) -> str:
        """JSON export; non-finite floats become null."""
        payload = {
            "best": asdict(self.best) if self.best else None,
            "colocated": asdict(self.colocated) if self.colocated else None,
            "disaggregation_gain": self.disaggregation_gain,
            "alternatives": self.alternatives.to_dict(orient="records"),
            "broken": self.broken.to_dict(orient="records"),
            "binding": list(self.binding) if self.binding else None,
            "na_sweep": self.na_sweep.to_dict(orient="records"),
            "notes": list(self.notes),
            "truncated": self.truncated,
            "evaluations": self.evaluations,
        }
        return json.dumps(_finite(payload))


def _finite(obj: object) -> object:
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if hasattr(obj, "item"):  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
