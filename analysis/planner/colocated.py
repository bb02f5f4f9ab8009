"""The co-located alternative: the same GPUs serving attention and experts together.

It is the baseline the paper compares against (vLLM / TensorRT-LLM with attention and
experts on every GPU), so a user sees when disaggregation does not pay. It pays the same
modelled costs as the disaggregated plan (:data:`SHARED_COSTS`): the comparison isolates
what disaggregation changes (separate pools, ping-pong, M2N over the NIC) and nothing
else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from analysis.planner.catalog import GPUSpec, ModelSpec
from analysis.planner.fit_rule import be_limits
from analysis.planner.perf_model import (
    Fit,
    attention_time_roofline,
    expert_node_time_ms,
    expert_time_roofline,
    largest_feasible,
)
from analysis.planner.plans import ColocatedPlan, Plan, SearchOptions, Workload

# What the co-located baseline and the disaggregated plan both pay (the page states it).
SHARED_COSTS: tuple[str, ...] = (
    "the same Ta law (KV read, attention GEMMs, TP all-reduce and narrow-shard slowdown, "
    "launch overhead per layer)",
    "the same Te law per expert (stored-sweep fit or roofline, launch overhead per layer); "
    "an expert split over several GPUs (more GPUs than experts) pays the TP all-reduce and "
    "shard slowdown an expert node pays",
    "the same Te fit range: tokens per expert at most 2x beyond what the fit saw",
    "dispatch and combine at the same link-utilisation curve (NVLink inside a node, the "
    "NIC beyond it), where the plan pays M2N/N2M over the NIC",
    "the same memory rule (90 % of capacity for weights and KV) and the same TBT SLO",
)


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
    E/n_gpus experts (expert parallelism; with more GPUs than experts each expert is split
    over n_gpus/E GPUs and pays the TP cost an expert node pays). No ping-pong: per layer
    a GPU runs attention, dispatch, experts and combine back to back, so
    ``TBT = L*(Ta + Te + 2*Tc)`` and throughput is ``B/TBT``. Dispatch/combine goes over
    NVLink (intra_node_gb_s) inside a node and the NIC beyond it. A Te fitted on stored
    sweeps limits the tokens per expert as it limits the plan (``fit_rule.be_limits``).
    The best tpa by throughput wins.
    """
    opt = options or SearchOptions()
    efit = expert_fit or expert_time_roofline(model, gpu, opt.efficiency)
    afits = attention_fits or {}
    best: ColocatedPlan | None = None
    act = model.activation_bytes * model.hidden_size
    experts_per_gpu = model.num_experts / n_gpus
    fitted = efit.source == "fit"
    be_lo, be_hi = be_limits(efit.x_min, efit.x_max, opt.extrapolation_factor)
    for tpa in (t for t in opt.tp_choices if t <= gpu.gpus_per_node and n_gpus % t == 0):
        replicas = n_gpus // tpa
        afit = afits.get((gpu.name, tpa)) or attention_time_roofline(
            model, gpu, tpa, workload.seq_len, opt.efficiency, opt.tp_cost
        )
        fixed = model.attention_param_bytes / tpa + experts_per_gpu * model.expert_param_bytes
        per_seq = workload.seq_len * model.kv_bytes_per_token_layer * model.kv_layers / tpa
        free = opt.usable_memory * gpu.memory_bytes - fixed
        if free <= 0:
            continue
        cap = int(free / per_seq)

        def times(
            b: int, tpa: int = tpa, replicas: int = replicas, afit: Fit = afit
        ) -> tuple[float, float, float]:
            be = b * replicas * model.top_k / model.num_experts
            ta = afit.predict(b)
            te = _expert_time(efit, be, experts_per_gpu, model, gpu, opt)
            sent = b * model.top_k * act / tpa * (n_gpus - 1) / n_gpus
            intra_share = min(1.0, gpu.gpus_per_node / n_gpus)
            util = opt.util.util(sent / max(1, n_gpus - 1))
            t_intra = sent * intra_share / (gpu.intra_node_gb_s * 1e9 * util)
            t_inter = sent * (1 - intra_share) / (gpu.nic_bytes_s * util)
            return ta, te, 1e3 * max(t_intra, t_inter)

        def ok(
            b: int,
            times: Callable[[int], tuple[float, float, float]] = times,
            replicas: int = replicas,
        ) -> bool:
            if fitted and b * replicas * model.top_k / model.num_experts > be_hi:
                return False
            ta, te, tc = times(b)
            return model.num_layers * (ta + te + 2 * tc) <= workload.slo_tbt_ms

        b = largest_feasible(ok, cap)
        be = b * replicas * model.top_k / model.num_experts
        if b == 0 or (fitted and be < be_lo):
            continue
        ta, te, tc = times(b)
        tbt = model.num_layers * (ta + te + 2 * tc)
        batch = b * replicas
        tput = batch / (tbt / 1e3)
        plan = ColocatedPlan(
            gpu.name,
            n_gpus,
            tpa,
            replicas,
            batch,
            ta,
            te,
            tc,
            tbt,
            tput,
            tput / n_gpus,
            tput / (n_gpus * gpu.price),
            tput / (n_gpus * gpu.power_w),
            (fixed + b * per_seq) / 1e9,
            gpu.memory_gb * opt.usable_memory,
            be=be,
            extrapolated=fitted and not efit.x_min <= be <= efit.x_max,
        )
        if best is None or plan.throughput > best.throughput:
            best = plan
    return best


def _expert_time(
    efit: Fit, be: float, experts_per_gpu: float, model: ModelSpec, gpu: GPUSpec, opt: SearchOptions
) -> float:
    """Te of one GPU holding ``experts_per_gpu`` experts; below one expert per GPU the
    expert is split over ``1/experts_per_gpu`` GPUs like an expert node of that TP."""
    if experts_per_gpu >= 1:
        return experts_per_gpu * efit.predict(be) + efit.overhead_ms
    split = round(1 / experts_per_gpu)
    return expert_node_time_ms(efit, be, 1, split, model=model, gpu=gpu, tp_cost=opt.tp_cost)


def best_colocated(
    model: ModelSpec,
    workload: Workload,
    best: Plan,
    pairs: Sequence[tuple[GPUSpec, GPUSpec]],
    options: SearchOptions,
    efits: Mapping[str, Fit],
    afits: Mapping[tuple[str, int], Fit],
) -> ColocatedPlan | None:
    """Co-located on ``options.colocated_gpus`` GPUs (default: as many as the best plan),
    on each GPU type the best plan uses; the best by tokens/s per cost."""
    by_name = {g.name: g for pair in pairs for g in pair}
    found = [
        colocated_plan(
            model,
            workload,
            by_name[name],
            options.colocated_gpus or best.gpus,
            options=options,
            expert_fit=efits.get(name),
            attention_fits=afits,
        )
        for name in sorted({best.attention_gpu, best.expert_gpu})
    ]
    ok = [c for c in found if c is not None]
    return max(ok, key=lambda c: c.tput_per_cost) if ok else None


def fallback_colocated(
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
            [options.max_gpus] if options.max_gpus else [gpu.gpus_per_node * 2**k for k in range(7)]
        )
        for n in counts:
            plan = colocated_plan(
                model,
                workload,
                gpu,
                n,
                options=options,
                expert_fit=efits.get(gpu.name),
                attention_fits=afits,
            )
            if plan is not None:
                found.append(plan)
                break
    return max(found, key=lambda c: c.tput_per_cost) if found else None


def paper_colocated(
    model: ModelSpec,
    workload: Workload,
    best: Plan,
    pairs: Sequence[tuple[GPUSpec, GPUSpec]],
    options: SearchOptions,
    efits: Mapping[str, Fit],
    afits: Mapping[tuple[str, int], Fit],
) -> ColocatedPlan | None:
    """The paper's baseline: TensorRT-LLM-style co-located serving on the fewest whole
    nodes (8, 16, 32, ... GPUs of ``gpus_per_node``) that hold the model and meet the SLO,
    on each GPU type the best plan uses; the best by tokens/s per cost (Mixtral 8x22B and
    DBRX fit one 8-GPU 80 GB node, as the paper says)."""
    names = {best.attention_gpu, best.expert_gpu}
    used = [pair for pair in pairs if pair[0].name in names and pair[1].name in names]
    return fallback_colocated(
        model, workload, used, dataclasses.replace(options, max_gpus=None), efits, afits
    )
