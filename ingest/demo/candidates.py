"""Candidates of a synthetic report: pruning gates, failure classification and noisy
samples.

* **Noise.** Per candidate, a 64-bit key hashed from (seed, model, GPU, quant, ws,
  num_tokens, backend, mode, comm, graph, combine precision) drives a counter-based
  generator (splitmix64), so a candidate's samples do not depend on what else is in the
  report: static per-rank offsets (~0.5%), per-sample jitter (~0.5% graph on, ~1.5% off,
  plus ~0.3 us absolute), and occasional outlier iterations (+15..120% on one rank).
  Samples are rounded to 1 ns (6 decimals in ms).
* **Failures and skips.** Pruned rows (capability/layout/forced-comm gates) come first
  in each workload, then runnable rows in search order (backend, mode, graph, comm).
  ``timed phase error: OutOfMemoryError`` when the estimated MoE workspace exceeds the
  budget (large token counts, mostly attention TP); ``build error`` for NVLink-only
  strategies/fused backends whose EP group leaves the NVLink domain and, rarely, at
  random; rare ``watchdog_timeout`` on DeepEP rows; rare ``failed:`` autotune on success
  rows (excluded from ``best``); optional ``time_budget_exceeded`` tail.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ingest.demo.perf import _workspace_gib, model_latency_us
from ingest.demo.rng import _normal, _uniform
from ingest.demo.tables import (
    _COMM_CLASS,
    _DEEPEP_LL_HIDDEN,
    _FUSED,
    _NO_MOE_TP,
    BACKEND_QUANTS,
    _Hw,
    parallel_layout,
)


@dataclasses.dataclass
class _Cand:
    nt: int
    backend: str
    mode: str
    cg: bool
    lpmc: bool
    comm: str  # requested
    key: int = 0
    status: str = "success"
    reason: str | None = None
    pruned: bool = False
    built: bool = True  # actual_config populated
    mapping_only: bool = False  # build failed after the Mapping existed
    autotune: str | None = "success"
    rank_status: str = "success"
    comm_cls: str | None = None
    base_us: float = 0.0


def _prune_reason(hw: _Hw, mdl: dict[str, Any], quant: Any, ws: int, c: _Cand) -> str | None:
    caps = BACKEND_QUANTS.get(c.backend)
    if caps is None:
        return f"unknown MoE backend '{c.backend}': not a MoeBackendType"
    if hw.arch not in caps:
        archs = "SM100/SM103" if c.backend != "CUTLASS" else "SM80+"
        return f"unsupported_arch: {c.backend} requires {archs} (got SM{hw.sm}, {hw.device_name})"
    if quant not in caps[hw.arch]:
        return f"unsupported_quant: {c.backend} does not implement quant_algo={quant} on SM{hw.sm}"
    ep, tp, adp = parallel_layout(c.mode, ws)
    if ep * tp != ws:
        return f"moe_ep_size * moe_tp_size = {ep * tp} must equal world_size={ws}"
    if c.backend in _FUSED and not adp:
        return (
            f"{c.backend} does not support {c.mode} (fused dispatch/combine requires "
            f"enable_attention_dp=True)"
        )
    if c.backend in _NO_MOE_TP and tp > 1:
        return (
            f"{c.backend} does not support MoE-TP (moe_tp_size={tp}); use an EP-only parallel_mode"
        )
    if c.comm not in ("AUTO", "NONE"):
        if not adp:
            return f"comm_method={c.comm} requires enable_attention_dp=True"
        if tp != 1 and c.comm != "ALLGATHER":
            return f"comm_method={c.comm} requires moe_tp_size=1 (got {tp})"
        if ws == 1:
            return f"comm_method={c.comm} has no effect at world_size=1"
        if c.comm == "DEEPEPLOWLATENCY" and (
            mdl["hidden_size"] not in _DEEPEP_LL_HIDDEN or mdl["top_k"] > 16
        ):
            return (
                f"comm_method=DEEPEPLOWLATENCY: hidden_size={mdl['hidden_size']} not "
                f"supported by DeepEP low-latency kernels (supported hidden sizes: "
                f"{', '.join(map(str, _DEEPEP_LL_HIDDEN))}; top_k <= 16)"
            )
    return None


def _auto_comm(hw: _Hw, ws: int, ep: int, tp: int, adp: bool) -> str:
    if not adp or ws == 1:
        return "NONE"
    if tp != 1:
        return "AllGatherReduceScatter"
    if hw.arch == "blackwell" and ws <= hw.nvl_domain:
        return "NVLinkOneSided"
    return "DeepEP"


def _label(c: _Cand) -> str:
    return f"backend={c.backend} parallel_mode={c.mode} comm={c.comm} num_tokens={c.nt}"


def _classify(hw: _Hw, mdl: dict[str, Any], quant: Any, ws: int, c: _Cand, u_fail: float) -> None:
    """Fill status/reason/comm class for a runnable candidate."""
    ep, tp, adp = parallel_layout(c.mode, ws)
    if c.backend in _FUSED:
        c.comm_cls = "NONE"
    elif c.comm == "AUTO":
        c.comm_cls = _auto_comm(hw, ws, ep, tp, adp)
    else:
        c.comm_cls = _COMM_CLASS[c.comm]
    mnnvl = hw.arch == "blackwell" and ws <= hw.nvl_domain
    if c.comm_cls in ("NVLinkOneSided", "NVLinkTwoSided") and not mnnvl:
        c.status, c.mapping_only, c.autotune = "failed", True, "not_run"
        c.reason = (
            f"build error: RuntimeError: {c.comm_cls} requires MNNVL fabric memory "
            f"across all {ep} EP ranks; this topology has {hw.nvl_domain} GPUs per "
            f"NVLink domain"
        )
        c.rank_status = "failed"
        return
    if c.backend in _FUSED and ep > hw.nvl_domain:
        c.status, c.mapping_only, c.autotune = "failed", True, "not_run"
        c.reason = (
            f"build error: RuntimeError: {c.backend} symmetric-memory heap needs all "
            f"{ep} EP ranks in one NVLink domain (domain size {hw.nvl_domain})"
        )
        c.rank_status = "failed"
        return
    ws_gib = _workspace_gib(mdl, quant, c.backend, ws, ep, tp, adp, c.nt)
    budget = hw.mem_gib * 0.1
    if ws_gib > budget:
        c.status, c.autotune, c.rank_status = "failed", "success", "failed"
        c.reason = (
            f"timed phase error: OutOfMemoryError: CUDA out of memory. Tried to "
            f"allocate {ws_gib * 0.4:.2f} GiB. GPU 0 has a total capacity of "
            f"{hw.mem_gib:.2f} GiB of which {max(0.5, budget * 0.2):.2f} GiB is free"
        )
        return
    if c.comm_cls in ("DeepEP", "DeepEPLowLatency") and u_fail < 0.004:
        c.status, c.built, c.autotune, c.rank_status = "failed", False, None, "timeout"
        c.reason = f"watchdog_timeout: exceeded 900s; suspected NCCL/CUDA hang ({_label(c)})"
        return
    if u_fail > 0.997:
        c.status, c.mapping_only, c.autotune, c.rank_status = "failed", True, "not_run", "failed"
        c.reason = (
            f"build error: RuntimeError: [TensorRT-LLM][ERROR] no valid tactic for "
            f"{c.backend} grouped GEMM with hidden_size={mdl['hidden_size']}, "
            f"intermediate_size={mdl['intermediate_size'] // tp}"
        )
        return
    if 0.5 < u_fail < 0.503:
        c.autotune = (
            "failed:RuntimeError: autotuner profiling raised CUDA error 700 for "
            "one tactic; falling back to the default tactic"
        )
    elif not c.cg and 0.6 < u_fail < 0.62:
        c.autotune = "success:fast"
    c.base_us = model_latency_us(
        hw, mdl, quant, ws, c.nt, c.backend, c.mode, c.comm_cls, c.cg, c.lpmc
    )


def _samples(cands: list[_Cand], ws: int, iters: int) -> np.ndarray:
    """(C, ws, iters) samples in ms, rounded to 1 ns."""
    keys = np.array([c.key for c in cands], dtype=np.uint64)
    base = np.array([c.base_us for c in cands]) / 1000.0
    cg = np.array([c.cg for c in cands])
    sigma = np.where(cg, 0.005, 0.015)
    rank_off = 0.005 * _normal(keys, 1, ws)  # (C, R)
    jit = _normal(keys, 2, ws * iters).reshape(-1, ws, iters)
    x = base[:, None, None] * (1.0 + rank_off[:, :, None] + sigma[:, None, None] * jit)
    x = x + 0.0003 * np.abs(_normal(keys, 3, ws * iters).reshape(-1, ws, iters))
    # occasional outlier iterations (one or two spikes on a single rank)
    u = _uniform(keys, 8, 8)
    p_out = np.where(cg, 0.14, 0.22)
    for slot in range(2):
        has = u[:, slot] < (p_out if slot == 0 else p_out * 0.25)
        it = np.minimum((u[:, 2 + slot] * iters).astype(np.int64), iters - 1)
        rk = np.minimum((u[:, 4 + slot] * ws).astype(np.int64), ws - 1)
        mag = 0.15 + 1.05 * u[:, 6 + slot]
        idx = np.nonzero(has)[0]
        x[idx, rk[idx], it[idx]] *= 1.0 + mag[idx]
    x = np.maximum(x, 0.001)
    return np.asarray(np.round(x, 6))
