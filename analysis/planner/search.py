"""Deployment-plan search (MegaScale-Infer Algorithm 1) and the co-located comparison.

For each GPU pair (attention type, expert type), tpe, tpa and experts per expert node x:
check the memory constraint, take na from the balance ``na ≈ k1*E/(x*k3*K)`` and a few
multiples of it, for each m in 2..Nm binary-search the largest micro-batch ``ba`` whose
time between tokens meets the SLO, and rank plans by throughput per cost
``(B / Ttotal) / (tpa*na*Cost_a + tpe*(E/x)*Cost_e)``. Units: ms, tokens, tokens/s,
normalised cost units (catalog.GPUSpec.price), watts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import pandas as pd

from analysis.planner.catalog import GPUSpec, ModelSpec
from analysis.planner.perf_model import (
    DEFAULT_EFFICIENCY,
    DEFAULT_UTIL,
    Efficiency,
    Fit,
    UtilCurve,
    attention_memory_bytes,
    attention_time_roofline,
    balance_na,
    comm_time_ms,
    expert_memory_bytes,
    expert_node_time_ms,
    expert_time_roofline,
    iteration_bounds_ms,
    max_attention_batch,
    time_between_tokens_ms,
    total_latency_ms,
)


@dataclass(frozen=True)
class Workload:
    """Average sequence length ``s`` (tokens held in KV per request) and the TBT SLO."""

    seq_len: float
    slo_tbt_ms: float = 150.0


@dataclass(frozen=True)
class SearchOptions:
    """Knobs of the search. ``experts_per_node=None`` tries every power of two dividing E."""

    tp_choices: tuple[int, ...] = (1, 2, 4, 8)
    max_micro_batches: int = 4  # Nm
    min_micro_batches: int = 2
    experts_per_node: tuple[int, ...] | None = None
    usable_memory: float = 0.9  # fraction of capacity for weights + KV (rest: activations)
    balance_tolerance: float = 0.25  # |Ta - Te| <= tol * max(Ta, Te) counts as Ta ≈ Te
    na_multiples: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
    max_na: int = 512
    max_gpus: int | None = None  # cap on attention + expert GPUs of one instance
    efficiency: Efficiency = DEFAULT_EFFICIENCY
    util: UtilCurve = DEFAULT_UTIL


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


ALTERNATIVE_COLUMNS: tuple[str, ...] = (
    "attention_gpu", "expert_gpu", "tpa", "tpe", "na", "m", "experts_per_node",
    "expert_nodes", "batch", "ba", "be", "ta_ms", "te_ms", "tc_ms", "tbt_ms", "t_total_ms",
    "throughput", "gpus", "cost", "tput_per_gpu", "tput_per_cost", "tput_per_watt",
    "balance_met", "comm_hidden_met", "depth_met",
)
NA_SWEEP_COLUMNS: tuple[str, ...] = (
    "na", "feasible", "batch", "ta_ms", "te_ms", "tbt_ms", "throughput", "gpus",
    "tput_per_gpu", "tput_per_cost", "balance_met",
)


@dataclass(frozen=True)
class PlanResult:
    """What a search returns; ``best`` is None when nothing fits the memory and SLO."""

    best: Plan | None
    alternatives: pd.DataFrame
    na_sweep: pd.DataFrame
    colocated: ColocatedPlan | None
    notes: tuple[str, ...] = ()

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
            "na_sweep": self.na_sweep.to_dict(orient="records"),
            "notes": list(self.notes),
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
        obj = obj.item()  # type: ignore[union-attr]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# --- one plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Setup:
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


def _times(s: _Setup, na: int, m: int, ba: int) -> tuple[float, float, float, float]:
    model = s.model
    be = ba * na * model.top_k / model.num_experts
    ta = s.afit.predict(ba)
    te = expert_node_time_ms(s.efit, be, s.x, s.tpe)
    tc = comm_time_ms(
        model, s.agpu, s.egpu, ba=ba, be=be, tpa=s.tpa, tpe=s.tpe, na=na,
        experts_per_node=s.x, curve=s.options.util,
    )
    return be, ta, te, tc


def _largest_batch(test: Callable[[int], bool], hi: int) -> int:
    """Largest b in [1, hi] with test(b) true, assuming test is monotone; 0 if none."""
    if hi < 1 or not test(1):
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if test(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _constraints(ta: float, te: float, tc: float, m: int, tol: float) -> tuple[ConstraintCheck, ...]:
    tf = max(ta, te)
    need = 2.0 * (1.0 + tc / tf)
    return (
        ConstraintCheck(
            "balance", abs(ta - te) <= tol * tf, ta, te,
            f"Ta={ta:.3f} ms vs Te={te:.3f} ms (Ta/Te={ta / te:.2f}, tolerance {tol:.0%})",
        ),
        ConstraintCheck(
            "comm_hidden", tc < tf, tc, tf, f"Tc={tc:.3f} ms < Tf={tf:.3f} ms",
        ),
        ConstraintCheck(
            "pipeline_depth", m >= need - 1e-9, float(m), need,
            f"m={m} >= 2*(1+Tc/Tf)={need:.2f}",
        ),
    )


def evaluate_plan(s: _Setup, na: int, m: int) -> Plan | None:
    """Largest-batch plan for fixed (GPUs, tpa, tpe, x, na, m); None if infeasible."""
    model, wl, opt = s.model, s.workload, s.options
    ba_cap = max_attention_batch(model, s.agpu, s.tpa, m, wl.seq_len, opt.usable_memory)

    def meets_slo(ba: int) -> bool:
        _, ta, te, tc = _times(s, na, m, ba)
        return time_between_tokens_ms(ta, te, tc, m, model.num_layers) <= wl.slo_tbt_ms

    ba = _largest_batch(meets_slo, ba_cap)
    if ba == 0:
        return None
    be, ta, te, tc = _times(s, na, m, ba)
    layers = model.num_layers
    batch = ba * m * na
    t_total = total_latency_ms(ta, te, tc, m, layers)
    lower, upper = iteration_bounds_ms(ta, te, tc, m, layers)
    expert_nodes = model.num_experts // s.x
    a_gpus, e_gpus = s.tpa * na, s.tpe * expert_nodes
    if opt.max_gpus is not None and a_gpus + e_gpus > opt.max_gpus:
        return None
    cost = a_gpus * s.agpu.price + e_gpus * s.egpu.price
    power = a_gpus * s.agpu.power_w + e_gpus * s.egpu.power_w
    tput = batch / (t_total / 1e3)
    tf = max(ta, te)
    k3_node = s.efit.slope_ms / s.tpe
    return Plan(
        s.agpu.name, s.egpu.name, s.tpa, s.tpe, na, m, s.x, expert_nodes, batch, ba, be,
        ta, te, tc, tf, time_between_tokens_ms(ta, te, tc, m, layers), t_total, lower, upper,
        tput, a_gpus + e_gpus, a_gpus, e_gpus, cost, power, tput / (a_gpus + e_gpus),
        tput / cost, tput / power,
        attention_memory_bytes(model, m, ba, wl.seq_len) / 1e9,
        s.tpa * s.agpu.memory_gb * opt.usable_memory,
        expert_memory_bytes(model, s.x) / 1e9, s.tpe * s.egpu.memory_gb * opt.usable_memory,
        balance_na(s.afit.slope_ms, k3_node, model.num_experts, model.top_k, s.x)
        if k3_node > 0 else math.inf,
        2.0 * (1.0 + tc / tf), s.afit.source, s.efit.source,
        _constraints(ta, te, tc, m, opt.balance_tolerance),
    )


# --- enumeration ---------------------------------------------------------------------------


def _experts_per_node_choices(model: ModelSpec, options: SearchOptions) -> list[int]:
    if options.experts_per_node is not None:
        return [x for x in options.experts_per_node if model.num_experts % x == 0]
    out, x = [], 1
    while x <= model.num_experts:
        if model.num_experts % x == 0:
            out.append(x)
        x *= 2
    return out


def _na_candidates(na_bal: float, options: SearchOptions) -> list[int]:
    base = na_bal if math.isfinite(na_bal) and na_bal > 0 else 1.0
    found = {min(options.max_na, max(1, round(base * f))) for f in options.na_multiples}
    return sorted(found)


def _setups(
    model: ModelSpec,
    workload: Workload,
    agpu: GPUSpec,
    egpu: GPUSpec,
    options: SearchOptions,
    expert_fits: Mapping[str, Fit],
    attention_fits: Mapping[tuple[str, int], Fit],
) -> list[_Setup]:
    efit = expert_fits.get(egpu.name) or expert_time_roofline(model, egpu, options.efficiency)
    out = []
    for tpe in (t for t in options.tp_choices if t <= egpu.gpus_per_node):
        for tpa in (t for t in options.tp_choices if t <= agpu.gpus_per_node):
            if model.attention_param_bytes >= options.usable_memory * tpa * agpu.memory_bytes:
                continue
            afit = attention_fits.get((agpu.name, tpa)) or attention_time_roofline(
                model, agpu, tpa, workload.seq_len, options.efficiency
            )
            for x in _experts_per_node_choices(model, options):
                cap = options.usable_memory * tpe * egpu.memory_bytes
                if expert_memory_bytes(model, x) < cap:
                    out.append(
                        _Setup(model, workload, agpu, egpu, tpa, tpe, x, afit, efit, options)
                    )
    return out


def _climb_na(s: _Setup, m: int, start: Sequence[int], max_na: int) -> list[Plan]:
    """Evaluate the balance-derived na values, then step na by 1 while tput/cost improves.

    The balance formula ignores k2 and k4, which dominate in decode, so the best integer na
    is usually near but not at it; throughput per cost is unimodal enough in na for a
    local climb (the paper's Figure 15 shape).
    """
    tried: dict[int, Plan | None] = {}

    def ev(na: int) -> Plan | None:
        if na not in tried:
            tried[na] = evaluate_plan(s, na, m)
        return tried[na]

    for na in start:
        ev(na)
    feasible = {na: p for na, p in tried.items() if p is not None}
    if feasible:
        cur = max(sorted(feasible), key=lambda n: feasible[n].tput_per_cost)
        moved = True
        while moved:
            moved = False
            for nb in (cur - 1, cur + 1):
                if 1 <= nb <= max_na:
                    p, here = ev(nb), tried[cur]
                    if p is not None and here is not None and p.tput_per_cost > here.tput_per_cost:
                        cur, moved = nb, True
                        break
    return [p for _, p in sorted(tried.items()) if p is not None]


def _plan_row(p: Plan) -> dict[str, object]:
    row: dict[str, object] = {c: getattr(p, c) for c in ALTERNATIVE_COLUMNS[:-3]}
    met = {c.name: c.met for c in p.constraints}
    row.update(
        balance_met=met["balance"], comm_hidden_met=met["comm_hidden"],
        depth_met=met["pipeline_depth"],
    )
    return row


def _rank_key(p: Plan) -> tuple[float, ...]:
    return (-p.tput_per_cost, p.gpus, p.tpa, p.tpe, p.na, p.m, p.experts_per_node)


def na_sweep(best: Plan, setup: _Setup, na_max: int) -> pd.DataFrame:
    """Throughput per GPU against na = 1..na_max for the best plan's other choices."""
    rows = []
    for na in range(1, na_max + 1):
        p = evaluate_plan(setup, na, best.m)
        if p is None:
            rows.append({"na": na, "feasible": False})
            continue
        rows.append(
            {
                "na": na, "feasible": True, "batch": p.batch, "ta_ms": p.ta_ms,
                "te_ms": p.te_ms, "tbt_ms": p.tbt_ms, "throughput": p.throughput,
                "gpus": p.gpus, "tput_per_gpu": p.tput_per_gpu,
                "tput_per_cost": p.tput_per_cost, "balance_met": p.constraints[0].met,
            }
        )
    return pd.DataFrame(rows, columns=list(NA_SWEEP_COLUMNS))


def _search_pairs(
    model: ModelSpec,
    workload: Workload,
    pairs: Sequence[tuple[GPUSpec, GPUSpec]],
    options: SearchOptions,
    expert_fits: Mapping[str, Fit] | None,
    attention_fits: Mapping[tuple[str, int], Fit] | None,
) -> PlanResult:
    efits = dict(expert_fits or {})
    afits = dict(attention_fits or {})
    plans: list[tuple[Plan, _Setup]] = []
    ms = range(options.min_micro_batches, options.max_micro_batches + 1)
    for agpu, egpu in pairs:
        for s in _setups(model, workload, agpu, egpu, options, efits, afits):
            k3_node = s.efit.slope_ms / s.tpe
            na_bal = (
                balance_na(s.afit.slope_ms, k3_node, model.num_experts, model.top_k, s.x)
                if k3_node > 0 else math.inf
            )
            for m in ms:
                found = _climb_na(s, m, _na_candidates(na_bal, options), options.max_na)
                plans.extend((p, s) for p in found)
    notes = _fit_notes(model, pairs, options, efits)
    if not plans:
        empty = pd.DataFrame(columns=list(ALTERNATIVE_COLUMNS))
        notes.append("no disaggregated plan fits memory and the SLO")
        colo = _fallback_colocated(model, workload, pairs, options, efits, afits)
        if colo is not None:
            notes.append(f"co-located on {colo.gpus} {colo.gpu} meets the SLO")
        return PlanResult(None, empty, pd.DataFrame(columns=list(NA_SWEEP_COLUMNS)), colo,
                          tuple(notes))
    plans.sort(key=lambda ps: _rank_key(ps[0]))
    best, best_setup = plans[0]
    alternatives = pd.DataFrame([_plan_row(p) for p, _ in plans], columns=list(ALTERNATIVE_COLUMNS))
    sweep = na_sweep(best, best_setup, min(options.max_na, max(16, 2 * best.na)))
    colocated = _best_colocated(model, workload, best, pairs, options, efits, afits)
    return PlanResult(best, alternatives, sweep, colocated, tuple(notes))


def _fit_notes(
    model: ModelSpec,
    pairs: Sequence[tuple[GPUSpec, GPUSpec]],
    options: SearchOptions,
    efits: Mapping[str, Fit],
) -> list[str]:
    notes = []
    for name in sorted({e.name for _, e in pairs}):
        fit = efits.get(name)
        notes.append(
            f"Te on {name}: " + (f"{fit.source} ({fit.note})" if fit else "roofline estimate")
        )
    return notes


def search_plans(
    model: ModelSpec,
    workload: Workload,
    attention_gpu: GPUSpec,
    expert_gpu: GPUSpec | None = None,
    *,
    options: SearchOptions | None = None,
    expert_fits: Mapping[str, Fit] | None = None,
    attention_fits: Mapping[tuple[str, int], Fit] | None = None,
) -> PlanResult:
    """Best disaggregated plan for one GPU pair (homogeneous when ``expert_gpu`` is None).

    ``expert_fits`` maps a GPU name to a per-expert-equivalent Te fit (from
    :func:`~analysis.planner.perf_model.fit_expert_time`); ``attention_fits`` maps
    (GPU name, tpa) to a Ta fit. Missing entries use roofline estimates. Ties in throughput
    per cost go to fewer GPUs, then smaller tpa, tpe, na, m, x.
    """
    pair = (attention_gpu, expert_gpu or attention_gpu)
    return _search_pairs(
        model, workload, [pair], options or SearchOptions(), expert_fits, attention_fits
    )


def search_heterogeneous(
    model: ModelSpec,
    workload: Workload,
    gpus: Sequence[GPUSpec],
    *,
    options: SearchOptions | None = None,
    expert_fits: Mapping[str, Fit] | None = None,
    attention_fits: Mapping[tuple[str, int], Fit] | None = None,
) -> PlanResult:
    """Search every (attention GPU, expert GPU) pair of ``gpus``, same-type pairs included."""
    pairs = [(a, e) for a in gpus for e in gpus]
    return _search_pairs(
        model, workload, pairs, options or SearchOptions(), expert_fits, attention_fits
    )


# --- co-located ----------------------------------------------------------------------------


def colocated_plan(
    model: ModelSpec,
    workload: Workload,
    gpu: GPUSpec,
    n_gpus: int,
    *,
    options: SearchOptions | None = None,
    expert_fit: Fit | None = None,
    attention_fits: Mapping[tuple[str, int], Fit] | None = None,
) -> ColocatedPlan | None:
    """Best co-located deployment on ``n_gpus`` GPUs of one type, or None if none fits.

    Every GPU holds 1/tpa of an attention replica (n_gpus/tpa replicas, attention DP) and
    E/n_gpus experts (expert parallelism). No ping-pong: per layer a GPU runs attention,
    dispatch, experts and combine back to back, so ``TBT = L*(Ta + Te + 2*Tc)`` and
    throughput is ``B/TBT``. Dispatch/combine goes over NVLink (intra_node_gb_s) inside a
    node and the NIC beyond it. The best tpa by throughput wins.
    """
    opt = options or SearchOptions()
    efit = expert_fit or expert_time_roofline(model, gpu, opt.efficiency)
    afits = attention_fits or {}
    best: ColocatedPlan | None = None
    act = model.activation_bytes * model.hidden_size
    experts_per_gpu = model.num_experts / n_gpus
    for tpa in (t for t in opt.tp_choices if t <= gpu.gpus_per_node and n_gpus % t == 0):
        replicas = n_gpus // tpa
        afit = afits.get((gpu.name, tpa)) or attention_time_roofline(
            model, gpu, tpa, workload.seq_len, opt.efficiency
        )
        fixed = model.attention_param_bytes / tpa + experts_per_gpu * model.expert_param_bytes
        per_seq = workload.seq_len * model.kv_bytes_per_token_layer * model.kv_layers / tpa
        free = opt.usable_memory * gpu.memory_bytes - fixed
        if free <= 0:
            continue
        cap = int(free / per_seq)

        def times(b: int, tpa: int = tpa, replicas: int = replicas, afit: Fit = afit) -> tuple[
            float, float, float
        ]:
            be = b * replicas * model.top_k / model.num_experts
            ta = afit.predict(b)
            te = experts_per_gpu * efit.predict(be)
            sent = b * model.top_k * act / tpa * (n_gpus - 1) / n_gpus
            intra_share = min(1.0, gpu.gpus_per_node / n_gpus)
            util = opt.util.util(sent / max(1, n_gpus - 1))
            t_intra = sent * intra_share / (gpu.intra_node_gb_s * 1e9 * util)
            t_inter = sent * (1 - intra_share) / (gpu.nic_bytes_s * util)
            return ta, te, 1e3 * max(t_intra, t_inter)

        def ok(b: int, times: Callable[[int], tuple[float, float, float]] = times) -> bool:
            ta, te, tc = times(b)
            return model.num_layers * (ta + te + 2 * tc) <= workload.slo_tbt_ms

        b = _largest_batch(ok, cap)
        if b == 0:
            continue
        ta, te, tc = times(b)
        tbt = model.num_layers * (ta + te + 2 * tc)
        batch = b * replicas
        tput = batch / (tbt / 1e3)
        plan = ColocatedPlan(
            gpu.name, n_gpus, tpa, replicas, batch, ta, te, tc, tbt, tput, tput / n_gpus,
            tput / (n_gpus * gpu.price), tput / (n_gpus * gpu.power_w),
            (fixed + b * per_seq) / 1e9, gpu.memory_gb * opt.usable_memory,
        )
        if best is None or plan.throughput > best.throughput:
            best = plan
    return best


def _best_colocated(
    model: ModelSpec,
    workload: Workload,
    best: Plan,
    pairs: Sequence[tuple[GPUSpec, GPUSpec]],
    options: SearchOptions,
    efits: Mapping[str, Fit],
    afits: Mapping[tuple[str, int], Fit],
) -> ColocatedPlan | None:
    """Co-located on the same number of GPUs, on each GPU type the best plan uses."""
    by_name = {g.name: g for pair in pairs for g in pair}
    found = [
        colocated_plan(
            model, workload, by_name[name], best.gpus, options=options,
            expert_fit=efits.get(name), attention_fits=afits,
        )
        for name in sorted({best.attention_gpu, best.expert_gpu})
    ]
    ok = [c for c in found if c is not None]
    return max(ok, key=lambda c: c.tput_per_cost) if ok else None


def _fallback_colocated(
    model: ModelSpec,
    workload: Workload,
    pairs: Sequence[tuple[GPUSpec, GPUSpec]],
    options: SearchOptions,
    efits: Mapping[str, Fit],
    afits: Mapping[tuple[str, int], Fit],
) -> ColocatedPlan | None:
    """When no disaggregated plan exists: the best co-located deployment on ``max_gpus``
    GPUs (or the fewest whole nodes, doubling up to 64 nodes, that meet memory and SLO)."""
    found = []
    for gpu in sorted({g for pair in pairs for g in pair}, key=lambda g: g.name):
        counts = (
            [options.max_gpus] if options.max_gpus
            else [gpu.gpus_per_node * 2**k for k in range(7)]
        )
        for n in counts:
            plan = colocated_plan(
                model, workload, gpu, n, options=options, expert_fit=efits.get(gpu.name),
                attention_fits=afits,
            )
            if plan is not None:
                found.append(plan)
                break
    return max(found, key=lambda c: c.tput_per_cost) if found else None
