"""Assembly of one synthetic bench_moe report (``generate_report``) and its
``rankings`` (schema 3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ingest.demo.blocks import (
    _default_backends,
    _default_comms,
    _default_latency,
    _default_modes,
    _environment,
    _model_block,
    _null_actual,
    _per_rank_tokens,
    _requested_routing,
    _routing_block,
    _search_block,
)
from ingest.demo.candidates import _Cand, _classify, _prune_reason, _samples
from ingest.demo.rng import _gc_paused, _key_hash, _uniform
from ingest.demo.score import _latency_blocks
from ingest.demo.tables import _FUSED, _HYBRID_RE, _QUANT, HARDWARE, MODELS, parallel_layout

# --------------------------------------------------------------------------------------
# Rankings (schema 3)
# --------------------------------------------------------------------------------------


def _entry(row: dict[str, Any]) -> dict[str, Any]:
    req = row["requested_config"]
    act = row.get("actual_config") or {}
    lat = row.get("latency_ms") or {}
    outl = lat.get("iter_max_outliers") or {}
    score = lat.get("score")
    raw = lat.get("raw_score")
    return {
        "backend": act.get("backend") or req["backend"],
        "requested_backend": req["backend"],
        "comm_method": act.get("comm_method"),
        "cuda_graph": req["cuda_graph"],
        "use_low_precision_moe_combine": req["use_low_precision_moe_combine"],
        "score_ms": None if score is None else float(score),
        "raw_score_ms": None if raw is None else float(raw),
        "outlier_count": outl.get("count"),
        "status": row["status"],
        "skip_reason": row["skip_reason"],
        "autotune_status": (row.get("instrumentation") or {}).get("autotune_status"),
    }


def compute_rankings(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rankings`` exactly as ``reporting.build_rankings`` builds them (schema 3)."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for row in results:
        key = (int(row["workload"]["num_tokens"]), str(row["requested_config"]["parallel_mode"]))
        groups.setdefault(key, []).append(_entry(row))
    out = []
    for key in sorted(groups):
        ranking = sorted(
            groups[key],
            key=lambda e: (
                e["score_ms"] is None,
                e["score_ms"] if e["score_ms"] is not None else 0.0,
            ),
        )
        best = None
        for e in ranking:
            if (
                e["score_ms"] is not None
                and e["status"] == "success"
                and not str(e["autotune_status"] or "").startswith("failed")
            ):
                best = dict(e)
                break
        out.append(
            {"num_tokens": key[0], "parallel_mode": key[1], "best": best, "ranking": ranking}
        )
    return out


# --------------------------------------------------------------------------------------
# Report generation
# --------------------------------------------------------------------------------------


def generate_report(
    model: str,
    hardware: str,
    quant: str,
    world_size: int,
    num_tokens: Sequence[int],
    *,
    seed: int = 0,
    cuda_graph: Sequence[bool] = (True, False),
    parallel_modes: Sequence[str] | None = None,
    backends: Sequence[str] | None = None,
    comm_methods: Sequence[str] | None = None,
    iters: int = 12,
    with_raw_samples: bool = True,
    time_budget_tail: int = 0,
) -> dict[str, Any]:
    """One synthetic bench_moe report (schema-exact dict; ``swiglu_limit`` is ``inf``).

    ``backends``/``parallel_modes``/``comm_methods`` default to what ``--search full``
    would sweep on that GPU: capable backends, ``DEP, TEP`` + default hybrids, the
    forced comm methods the topology supports. Unsupported values are kept and produce
    pruned (skipped) rows. ``time_budget_tail`` marks the last N runnable candidates as
    ``time_budget_exceeded``. Deterministic in all arguments.
    """
    with _gc_paused():
        return _generate_report(
            model,
            hardware,
            quant,
            world_size,
            num_tokens,
            seed=seed,
            cuda_graph=cuda_graph,
            parallel_modes=parallel_modes,
            backends=backends,
            comm_methods=comm_methods,
            iters=iters,
            with_raw_samples=with_raw_samples,
            time_budget_tail=time_budget_tail,
        )


def _generate_report(
    model: str,
    hardware: str,
    quant: str,
    world_size: int,
    num_tokens: Sequence[int],
    *,
    seed: int,
    cuda_graph: Sequence[bool],
    parallel_modes: Sequence[str] | None,
    backends: Sequence[str] | None,
    comm_methods: Sequence[str] | None,
    iters: int,
    with_raw_samples: bool,
    time_budget_tail: int,
) -> dict[str, Any]:
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; known: {sorted(MODELS)}")
    if hardware not in HARDWARE:
        raise ValueError(f"unknown hardware {hardware!r}; known: {sorted(HARDWARE)}")
    if quant not in _QUANT:
        raise ValueError(f"unknown quant {quant!r}; known: {[q for q in _QUANT if q]}")
    if iters < 1:
        raise ValueError("iters must be >= 1")
    hw = HARDWARE[hardware]
    mdl = MODELS[model]
    ws = int(world_size)
    cgs = [bool(g) for g in cuda_graph]
    bks = list(backends) if backends is not None else _default_backends(hw, quant)
    modes = (
        [m.upper() for m in parallel_modes] if parallel_modes is not None else _default_modes(ws)
    )
    comms = list(comm_methods) if comm_methods is not None else _default_comms(hw, ws, mdl)
    comms = [c for c in comms if c != "AUTO"] or ["AUTO"]
    lpmc = True

    # ---- plan: per workload, pruned rows first, then runnable rows in search order ----
    prefix = f"{seed}|{model}|{hardware}|{quant}|{ws}"
    plan: list[_Cand] = []
    for nt in num_tokens:
        nt = int(nt)
        pruned, runnable = [], []
        for b in bks:
            for m in modes:
                try:
                    _, _, adp = parallel_layout(m, ws)
                except ValueError:
                    adp = True
                for g in cgs:
                    if b in _FUSED:
                        cms = ["NONE"]
                    elif not adp:
                        cms = ["AUTO"]
                    else:
                        cms = comms
                    for cm in cms:
                        c = _Cand(nt, b, m, g, lpmc, cm)
                        c.key = _key_hash(f"{prefix}|{nt}|{b}|{m}|{cm}|{int(g)}|{int(lpmc)}")
                        try:
                            reason = _prune_reason(hw, mdl, quant, ws, c)
                        except ValueError as exc:
                            reason = str(exc)
                        if reason is not None:
                            c.status, c.reason, c.pruned, c.built = "skipped", reason, True, False
                            c.autotune, c.rank_status = None, "skipped"
                            pruned.append(c)
                        else:
                            runnable.append(c)
        plan.extend(pruned)
        plan.extend(runnable)

    runnable_all = [c for c in plan if not c.pruned]
    if runnable_all:
        u_fail = _uniform(np.array([c.key for c in runnable_all], dtype=np.uint64), 901, 1)[
            :, 0
        ].tolist()
        for c, u in zip(runnable_all, u_fail, strict=True):
            _classify(hw, mdl, quant, ws, c, u)
    if time_budget_tail > 0:
        for c in runnable_all[-time_budget_tail:]:
            c.status, c.reason, c.built, c.autotune = "skipped", "time_budget_exceeded", False, None
            c.rank_status, c.pruned = "skipped", True

    ok = [c for c in plan if c.status == "success"]
    samples = _samples(ok, ws, iters) if ok else None
    lat_blocks = _latency_blocks(samples) if samples is not None else []
    raw_lists = samples.tolist() if (samples is not None and with_raw_samples) else None
    rank_names = [f"rank{r}" for r in range(ws)]

    results = []
    j_ok = 0
    for c in plan:
        layout: tuple[int, int, bool] | tuple[None, None, None] = (
            parallel_layout(c.mode, ws)
            if _HYBRID_RE.match(c.mode) or c.mode in ("DEP", "TEP", "DTP", "TTP")
            else (None, None, None)
        )
        ep, tp, row_adp = layout
        prt = _per_rank_tokens(c.nt, ws, bool(row_adp)) if row_adp is not None else None
        workload = {
            "num_tokens": c.nt,
            "per_rank_num_tokens": prt,
            "routing_control": _requested_routing(None),
        }
        requested = {
            "backend": c.backend,
            "parallel_mode": c.mode,
            "moe_ep_size": None,
            "moe_tp_size": None,
            "enable_attention_dp": None,
            "comm_method": c.comm,
            "cuda_graph": c.cg,
            "use_low_precision_moe_combine": c.lpmc,
        }
        if c.built and c.mapping_only:
            num_chunks = None
            actual = _null_actual()
            actual.update(moe_ep_size=ep, moe_tp_size=tp, enable_attention_dp=row_adp)
        elif c.built:
            num_chunks = 1 if (row_adp and c.comm_cls not in ("NONE", None)) else None
            actual = {
                "backend": c.backend,
                "comm_method": c.comm_cls,
                "comm_fallback_reason": None,
                "scheduler_kind": "FUSED_COMM" if c.backend in _FUSED else "EXTERNAL_COMM",
                "moe_ep_size": ep,
                "moe_tp_size": tp,
                "enable_attention_dp": row_adp,
                "num_chunks": num_chunks,
            }
        else:
            num_chunks = None
            actual = _null_actual()
        instr: dict[str, Any] = {
            "level": "summary",
            "cuda_graph": c.cg,
            "cupti_available": False,
            "nsys_capture": False,
            "phase_timing_available": False,
            "kernel_breakdown_available": False,
        }
        if not c.pruned and c.autotune is not None:
            instr["autotune_status"] = c.autotune
            instr["latency_source"] = "cuda_event_external" if c.cg else "cuda_event_eager"
            if c.autotune != "not_run":
                instr["input_seed"] = c.key >> 1
        if c.status == "success":
            lat = lat_blocks[j_ok]
            per_rank_raw = (
                {rank_names[r]: raw_lists[j_ok][r] for r in range(ws)}
                if raw_lists is not None
                else {}
            )
            j_ok += 1
            assert prt is not None and ep is not None and tp is not None  # success rows
            routing = _routing_block(prt, mdl, ep, tp, num_chunks)
        else:
            lat = _default_latency()
            per_rank_raw = {}
            routing = None
        results.append(
            {
                "workload": workload,
                "requested_config": requested,
                "actual_config": actual,
                "status": c.status,
                "skip_reason": c.reason,
                "status_per_rank": {n: c.rank_status for n in rank_names},
                "instrumentation": instr,
                "latency_ms": lat,
                "phase_times_ms": {"agg": {}, "per_rank": {}},
                "overlap": {"overlap_ms": None, "overlap_ratio": None},
                "bottleneck": None,  # needs kernel/phase data, which summary runs lack
                "kernel_breakdown": {"moe_forward_kernels": [], "other_kernels": []},
                "raw_data": {
                    "forward_times_ms": {"per_rank": per_rank_raw},
                    "kernel_times_ms": {"moe_forward_kernels": [], "other_kernels": []},
                },
                "routing_control": routing,
            }
        )

    base_mode = modes[0] if modes else "DEP"
    return {
        "benchmark": "bench_moe",
        "environment": _environment(hw, ws, seed, cgs[0] if cgs else True),
        "model": _model_block(model, quant),
        "search": _search_block(bks, modes, comms, cgs),
        "base_config": {
            "backend": bks[0] if bks else "TRTLLM",
            "parallel_mode": base_mode,
            "moe_ep_size": None,
            "moe_tp_size": None,
            "enable_attention_dp": None,
            "comm_method": "AUTO",
            "cuda_graph": cgs[0] if cgs else True,
            "use_low_precision_moe_combine": lpmc,
        },
        "results": results,
        "rankings": compute_rankings(results),
    }
