"""Deployment-plan search (MegaScale-Infer Algorithm 1).

For each GPU pair (attention type, expert type), tpe, tpa and experts per expert node x:
check the memory constraint, take na from the balance ``na ≈ k1*E/(x*k3*K)`` and a few
multiples of it, for each m in 2..Nm binary-search the largest micro-batch ``ba`` whose
time between tokens meets the SLO, and rank plans by throughput per cost
``(B / Ttotal) / (tpa*na*Cost_a + tpe*(E/x)*Cost_e)``. Units: ms, tokens, tokens/s,
normalised cost units (catalog.GPUSpec.price), watts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from analysis.planner.catalog import GPUSpec, ModelSpec
from analysis.planner.colocated import best_colocated, fallback_colocated, paper_colocated
from analysis.planner.evaluate import Rejections, Setup, evaluate_plan
from analysis.planner.feasibility import binding_reason, broken_frame
from analysis.planner.perf_model import (
    Fit,
    attention_time_roofline,
    balance_na,
    expert_memory_bytes,
    expert_time_roofline,
)
from analysis.planner.plans import (
    ALTERNATIVE_COLUMNS,
    NA_SWEEP_COLUMNS,
    Budget,
    Plan,
    PlanResult,
    SearchOptions,
    Workload,
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
    why: Rejections | None = None,
) -> list[Setup]:
    why = why if why is not None else Rejections()
    efit = expert_fits.get(egpu.name) or expert_time_roofline(model, egpu, options.efficiency)
    for gpu in dict.fromkeys((agpu, egpu)):
        if not any(t <= gpu.gpus_per_node for t in options.tp_choices):
            why.add(
                "tp_choice",
                f"no TP choice in {list(options.tp_choices)} fits a {gpu.name} node "
                f"({gpu.gpus_per_node} GPUs, the largest TP the planner models)",
            )
    out = []
    for tpe in (t for t in options.tp_choices if t <= egpu.gpus_per_node):
        for tpa in (t for t in options.tp_choices if t <= agpu.gpus_per_node):
            usable = options.usable_memory * tpa * agpu.memory_bytes
            if model.attention_param_bytes >= usable:
                why.add(
                    "memory",
                    f"the attention-side weights ({model.attention_param_bytes / 1e9:.0f} GB) "
                    f"do not fit {tpa} {agpu.name} ({usable / 1e9:.0f} GB usable)",
                )
                continue
            afit = attention_fits.get((agpu.name, tpa)) or attention_time_roofline(
                model, agpu, tpa, workload.seq_len, options.efficiency, options.tp_cost
            )
            for x in _experts_per_node_choices(model, options):
                cap = options.usable_memory * tpe * egpu.memory_bytes
                if expert_memory_bytes(model, x) < cap:
                    out.append(Setup(model, workload, agpu, egpu, tpa, tpe, x, afit, efit, options))
                else:
                    why.add(
                        "memory",
                        f"{x} expert(s) ({expert_memory_bytes(model, x) / 1e9:.0f} GB) do "
                        f"not fit {tpe} {egpu.name} ({cap / 1e9:.0f} GB usable)",
                    )
    return out


def _climb_na(
    s: Setup, m: int, start: Sequence[int], max_na: int, budget: Budget, why: Rejections
) -> list[Plan]:
    """Evaluate the balance-derived na values, then step na by 1 while tput/cost improves.

    The balance formula ignores k2 and k4, which dominate in decode, so the best integer na
    is usually near but not at it; throughput per cost is unimodal enough in na for a
    local climb (the paper's Figure 15 shape).
    """
    tried: dict[int, Plan | None] = {}

    def ev(na: int) -> Plan | None:
        if na not in tried:
            tried[na] = evaluate_plan(s, na, m, why) if budget.spend() else None
        return tried[na]

    for na in start:
        ev(na)
        if budget.truncated:
            break
    feasible = {na: p for na, p in tried.items() if p is not None}
    if feasible:
        cur = max(sorted(feasible), key=lambda n: feasible[n].tput_per_cost)
        moved = True
        while moved:
            moved = False
            if budget.truncated:
                break
            for nb in (cur - 1, cur + 1):
                if 1 <= nb <= max_na:
                    p, here = ev(nb), tried[cur]
                    if p is not None and here is not None and p.tput_per_cost > here.tput_per_cost:
                        cur, moved = nb, True
                        break
    return [p for _, p in sorted(tried.items()) if p is not None]


def _plan_row(p: Plan) -> dict[str, object]:
    row: dict[str, object] = {c: getattr(p, c) for c in ALTERNATIVE_COLUMNS[:-4]}
    met = {c.name: c.met for c in p.constraints}
    row.update(
        balance_met=met["balance"],
        comm_hidden_met=met["comm_hidden"],
        depth_met=met["pipeline_depth"],
        constraints_met=p.constraints_met,
    )
    return row


def _rank_key(p: Plan) -> tuple[float, ...]:
    """Plans meeting all three pipeline constraints first, then tokens/s per cost."""
    return (
        float(not p.constraints_met),
        -p.tput_per_cost,
        p.gpus,
        p.tpa,
        p.tpe,
        p.na,
        p.m,
        p.experts_per_node,
    )


def na_sweep(best: Plan, setup: Setup, na_max: int) -> pd.DataFrame:
    """Throughput per GPU against na = 1..na_max for the best plan's other choices."""
    rows: list[dict[str, object]] = []
    for na in range(1, na_max + 1):
        p = evaluate_plan(setup, na, best.m)
        if p is None:
            rows.append({"na": na, "feasible": False})
            continue
        rows.append(
            {
                "na": na,
                "feasible": True,
                "batch": p.batch,
                "ta_ms": p.ta_ms,
                "te_ms": p.te_ms,
                "tbt_ms": p.tbt_ms,
                "throughput": p.throughput,
                "gpus": p.gpus,
                "tput_per_gpu": p.tput_per_gpu,
                "tput_per_cost": p.tput_per_cost,
                "balance_met": p.constraints[0].met,
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
    budget: Budget | None = None,
) -> PlanResult:
    efits = dict(expert_fits or {})
    afits = dict(attention_fits or {})
    spent = budget or Budget()
    plans: list[tuple[Plan, Setup]] = []
    ms = range(options.min_micro_batches, options.max_micro_batches + 1)
    setup_why, plan_why = Rejections(), Rejections()
    n_setups, min_gpus, smallest = 0, None, ""
    for agpu, egpu in pairs:
        for s in _setups(model, workload, agpu, egpu, options, efits, afits, setup_why):
            n_setups += 1
            size = s.tpa + s.tpe * (model.num_experts // s.x)
            if min_gpus is None or size < min_gpus:
                min_gpus, smallest = (
                    size,
                    (
                        f"{s.tpa} {s.agpu.name} for attention + {model.num_experts // s.x} expert "
                        f"node(s) x {s.tpe} {s.egpu.name} holding {s.x} expert(s) each"
                    ),
                )
            k3_node = s.efit.slope_ms / s.tpe
            na_bal = (
                balance_na(s.afit.slope_ms, k3_node, model.num_experts, model.top_k, s.x)
                if k3_node > 0
                else math.inf
            )
            for m in ms:
                if spent.truncated:
                    break
                starts = _na_candidates(na_bal, options)
                found = _climb_na(s, m, starts, options.max_na, spent, plan_why)
                plans.extend((p, s) for p in found)
    notes = _fit_notes(model, pairs, options, efits)
    if spent.truncated:
        notes.append(
            f"search stopped early ({spent.reason}) after {spent.evaluations} plan "
            "evaluations: the best plan is the best found so far"
        )
    plans.sort(key=lambda ps: _rank_key(ps[0]))
    broken = [p for p, _ in plans if not p.constraints_met]
    offered = [(p, s) for p, s in plans if p.constraints_met]
    broken_rows = broken_frame([_plan_row(p) for p in broken], broken)
    if not offered:
        code, why = binding_reason(
            setups=n_setups,
            setup_why=setup_why,
            plan_why=plan_why,
            broken=broken,
            min_gpus=min_gpus,
            smallest=smallest,
            options=options,
            slo_ms=workload.slo_tbt_ms,
        )
        notes.append(f"no disaggregated plan fits: {why}")
        colo = fallback_colocated(model, workload, pairs, options, efits, afits)
        if colo is not None:
            notes.append(f"co-located on {colo.gpus} {colo.gpu} meets the SLO")
        return PlanResult(
            None,
            pd.DataFrame(columns=list(ALTERNATIVE_COLUMNS)),
            pd.DataFrame(columns=list(NA_SWEEP_COLUMNS)),
            colo,
            tuple(notes),
            spent.truncated,
            spent.evaluations,
            broken_rows,
            (code, why),
        )
    best, best_setup = offered[0]
    alternatives = pd.DataFrame(
        [_plan_row(p) for p, _ in offered], columns=list(ALTERNATIVE_COLUMNS)
    )
    sweep = na_sweep(best, best_setup, min(options.max_na, max(16, 2 * best.na)))
    if options.colocated_gpus is None:
        colocated = paper_colocated(model, workload, best, pairs, options, efits, afits)
    else:
        colocated = best_colocated(model, workload, best, pairs, options, efits, afits)
    return PlanResult(
        best,
        alternatives,
        sweep,
        colocated,
        tuple(notes),
        spent.truncated,
        spent.evaluations,
        broken_rows,
    )


def estimate_evaluations(
    model: ModelSpec,
    workload: Workload,
    gpus: Sequence[GPUSpec],
    options: SearchOptions,
    *,
    heterogeneous: bool,
) -> int:
    """Plan evaluations a search will start with, before any is run.

    Setups (GPU pair x tpa x tpe x experts-per-node that fit memory) x micro-batch counts
    x distinct balance-derived na starting points (``len(na_multiples)``, an upper bound).
    The na climb adds a few steps per (setup, m) on top; the runtime budget counts those.
    Homogeneous: each GPU with itself; heterogeneous: every ordered pair.
    """
    pairs = [(a, e) for a in gpus for e in gpus] if heterogeneous else [(g, g) for g in gpus]
    n_m = max(0, options.max_micro_batches - options.min_micro_batches + 1)
    n_na = len(options.na_multiples)
    total = 0
    for agpu, egpu in pairs:
        tpe_n = sum(1 for t in options.tp_choices if t <= egpu.gpus_per_node)
        tpa_n = sum(
            1
            for t in options.tp_choices
            if t <= agpu.gpus_per_node
            and model.attention_param_bytes < options.usable_memory * t * agpu.memory_bytes
        )
        xs = _experts_per_node_choices(model, options)
        total += tpe_n * tpa_n * len(xs) * n_m * n_na
    return total


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
    budget: Budget | None = None,
) -> PlanResult:
    """Best disaggregated plan for one GPU pair (homogeneous when ``expert_gpu`` is None).

    ``expert_fits`` maps a GPU name to a per-expert-equivalent Te fit (from
    :func:`~analysis.planner.perf_model.fit_expert_time`); ``attention_fits`` maps
    (GPU name, tpa) to a Ta fit. Missing entries use roofline estimates. Ties in throughput
    per cost go to fewer GPUs, then smaller tpa, tpe, na, m, x; plans violating a pipeline
    constraint rank after every plan that meets all three. ``budget`` bounds the work
    (``PlanResult.truncated`` says it stopped the search).
    """
    pair = (attention_gpu, expert_gpu or attention_gpu)
    return _search_pairs(
        model, workload, [pair], options or SearchOptions(), expert_fits, attention_fits, budget
    )


def search_heterogeneous(
    model: ModelSpec,
    workload: Workload,
    gpus: Sequence[GPUSpec],
    *,
    options: SearchOptions | None = None,
    expert_fits: Mapping[str, Fit] | None = None,
    attention_fits: Mapping[tuple[str, int], Fit] | None = None,
    budget: Budget | None = None,
) -> PlanResult:
    """Search every (attention GPU, expert GPU) pair of ``gpus``, same-type pairs included."""
    pairs = [(a, e) for a in gpus for e in gpus]
    return _search_pairs(
        model, workload, pairs, options or SearchOptions(), expert_fits, attention_fits, budget
    )
