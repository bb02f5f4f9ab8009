"""One disaggregated plan evaluated: Ta, Te, Tc of a setup at (na, m), the largest
micro-batch that meets the SLO, memory and the Te fit's range, and the three ping-pong
pipeline constraints (MegaScale-Infer §4). Units: ms, tokens, tokens/s, cost units, W, GB.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from analysis.planner.catalog import GPUSpec, ModelSpec
from analysis.planner.fit_rule import be_limits
from analysis.planner.perf_model import (
    Fit,
    attention_memory_bytes,
    balance_na,
    comm_time_ms,
    expert_memory_bytes,
    expert_node_time_ms,
    iteration_bounds_ms,
    largest_feasible,
    max_attention_batch,
    time_between_tokens_ms,
    total_latency_ms,
)
from analysis.planner.plans import ConstraintCheck, Plan, SearchOptions, Workload

REJECTION_REASONS: dict[str, str] = {
    "tp_choice": "TP choice",
    "memory": "memory",
    "gpu_count": "GPU count",
    "slo": "SLO",
    "te_range": "Te fit range",
}


@dataclass
class Rejections:
    """Why candidate setups and plans were infeasible (:data:`REJECTION_REASONS`): a
    count per reason, the first example of each, and the smallest TBT one sequence per
    attention node would take (ms) among plans the SLO refused."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    min_tbt_ms: float = math.inf

    def add(self, reason: str, example: str = "") -> None:
        self.counts[reason] += 1
        if example:
            self.examples.setdefault(reason, example)


@dataclass(frozen=True)
class Setup:
    model: ModelSpec
    workload: Workload
    agpu: GPUSpec
    egpu: GPUSpec
    tpa: int
    tpe: int
    x: int
    afit: Fit
    efit: Fit
    options: SearchOptions


def plan_times(s: Setup, na: int, m: int, ba: int) -> tuple[float, float, float, float]:
    model = s.model
    be = ba * na * model.top_k / model.num_experts
    ta = s.afit.predict(ba)
    te = expert_node_time_ms(
        s.efit, be, s.x, s.tpe, model=model, gpu=s.egpu, tp_cost=s.options.tp_cost
    )
    tc = comm_time_ms(
        model,
        s.agpu,
        s.egpu,
        ba=ba,
        be=be,
        tpa=s.tpa,
        tpe=s.tpe,
        na=na,
        experts_per_node=s.x,
        curve=s.options.util,
    )
    return be, ta, te, tc


def _constraints(
    ta: float, te: float, tc: float, m: int, tol: float
) -> tuple[ConstraintCheck, ...]:
    tf = max(ta, te)
    need = 2.0 * (1.0 + tc / tf)
    return (
        ConstraintCheck(
            "balance",
            abs(ta - te) <= tol * tf,
            ta,
            te,
            f"Ta={ta:.3f} ms vs Te={te:.3f} ms (Ta/Te={ta / te:.2f}, tolerance {tol:.0%})",
        ),
        ConstraintCheck(
            "comm_hidden",
            tc < tf,
            tc,
            tf,
            f"Tc={tc:.3f} ms < Tf={tf:.3f} ms",
        ),
        ConstraintCheck(
            "pipeline_depth",
            m >= need - 1e-9,
            float(m),
            need,
            f"m={m} >= 2*(1+Tc/Tf)={need:.2f}",
        ),
    )


def evaluate_plan(s: Setup, na: int, m: int, why: Rejections | None = None) -> Plan | None:
    """Largest-batch plan for fixed (GPUs, tpa, tpe, x, na, m); None if infeasible.

    Over ``options.max_gpus`` (attention + expert GPUs) is infeasible, checked first.
    With a Te fitted on stored sweeps the tokens per expert must stay within
    ``options.extrapolation_factor`` of the fitted range (``fit_rule.be_limits``): the
    batch is capped there, a plan below it is refused, one outside the range but inside
    the limits is marked ``extrapolated``. ``why`` counts the reason of a None.
    """
    model, wl, opt = s.model, s.workload, s.options
    why = why if why is not None else Rejections()
    gpus = s.tpa * na + s.tpe * (model.num_experts // s.x)
    if opt.max_gpus is not None and gpus > opt.max_gpus:
        why.add("gpu_count", f"{gpus} GPUs > max_gpus {opt.max_gpus}")
        return None
    ba_cap = max_attention_batch(model, s.agpu, s.tpa, m, wl.seq_len, opt.usable_memory)
    fitted = s.efit.source == "fit"
    be_lo, be_hi = be_limits(s.efit.x_min, s.efit.x_max, opt.extrapolation_factor)

    def meets_slo(ba: int) -> bool:
        be, ta, te, tc = plan_times(s, na, m, ba)
        if fitted and be > be_hi:
            return False
        return time_between_tokens_ms(ta, te, tc, m, model.num_layers) <= wl.slo_tbt_ms

    ba = largest_feasible(meets_slo, ba_cap)
    if ba == 0:
        _why_none(s, na, m, ba_cap, be_hi if fitted else math.inf, why)
        return None
    be, ta, te, tc = plan_times(s, na, m, ba)
    if fitted and be < be_lo:
        why.add("te_range", f"{be:.2g} tokens per expert < {be_lo:.2g} (half the fitted low end)")
        return None
    layers = model.num_layers
    batch = ba * m * na
    t_total = total_latency_ms(ta, te, tc, m, layers)
    lower, upper = iteration_bounds_ms(ta, te, tc, m, layers)
    expert_nodes = model.num_experts // s.x
    a_gpus, e_gpus = s.tpa * na, s.tpe * expert_nodes
    cost = a_gpus * s.agpu.price + e_gpus * s.egpu.price
    power = a_gpus * s.agpu.power_w + e_gpus * s.egpu.power_w
    tput = batch / (t_total / 1e3)
    tf = max(ta, te)
    k3_node = s.efit.slope_ms / s.tpe
    return Plan(
        s.agpu.name,
        s.egpu.name,
        s.tpa,
        s.tpe,
        na,
        m,
        s.x,
        expert_nodes,
        batch,
        ba,
        be,
        ta,
        te,
        tc,
        tf,
        time_between_tokens_ms(ta, te, tc, m, layers),
        t_total,
        lower,
        upper,
        tput,
        a_gpus + e_gpus,
        a_gpus,
        e_gpus,
        cost,
        power,
        tput / (a_gpus + e_gpus),
        tput / cost,
        tput / power,
        attention_memory_bytes(model, m, ba, wl.seq_len) / 1e9,
        s.tpa * s.agpu.memory_gb * opt.usable_memory,
        expert_memory_bytes(model, s.x) / 1e9,
        s.tpe * s.egpu.memory_gb * opt.usable_memory,
        balance_na(s.afit.slope_ms, k3_node, model.num_experts, model.top_k, s.x)
        if k3_node > 0
        else math.inf,
        2.0 * (1.0 + tc / tf),
        s.afit.source,
        s.efit.source,
        _constraints(ta, te, tc, m, opt.balance_tolerance),
        te_be_min=s.efit.x_min,
        te_be_max=s.efit.x_max,
        extrapolated=fitted and not s.efit.x_min <= be <= s.efit.x_max,
    )


def _why_none(s: Setup, na: int, m: int, ba_cap: int, be_hi: float, why: Rejections) -> None:
    """Record why not even one sequence per attention node fits."""
    if ba_cap < 1:
        why.add(
            "memory",
            f"the KV cache of one sequence of {s.workload.seq_len:g} tokens x {m} "
            f"micro-batches does not fit beside the attention weights on {s.tpa} "
            f"{s.agpu.name}",
        )
        return
    be, ta, te, tc = plan_times(s, na, m, 1)
    if be > be_hi:
        why.add("te_range", f"{be:.3g} tokens per expert > {be_hi:.3g} (2x the fitted range)")
        return
    tbt = time_between_tokens_ms(ta, te, tc, m, s.model.num_layers)
    why.min_tbt_ms = min(why.min_tbt_ms, tbt)
    why.add("slo", f"{tbt:.3g} ms with one sequence per attention node")
