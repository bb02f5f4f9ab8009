"""Synthetic performance model of one MoE forward (plausible, not exact).

All times in microseconds per MoE forward on the busiest rank. Notation: ``nt`` =
``workload.num_tokens``, ``k`` = top_k, ``h`` = hidden, ``i`` = intermediate,
``E`` = num_experts, ``ep``/``tp`` = MoE EP/TP sizes, ``L`` = input tokens on the busiest
rank (``ceil(nt/ws)`` with attention DP, ``nt`` with attention TP).

* **Expert GEMM.** ``A = nt*k/ep`` token-expert assignments per rank (balanced routing),
  ``E_loc = E/ep`` local experts of which ``min(E_loc, A)`` are active, ``m = A/active``
  rows per expert. FLOPs ``2*3*A*h*i/tp`` over the GPU's dense rate for the quant times a
  backend efficiency ``emax*m/(m+m_half)`` (TRTLLM reaches its plateau at small ``m``;
  CUTEDSL has a higher plateau but needs larger ``m``; CUTLASS is lower overall).
  Weight bytes ``active*3*h*i/tp*bytes_per_weight`` over HBM bandwidth times a backend
  efficiency; CUTEDSL's efficiency falls as the number of groups (``E_loc``) grows
  (many small-M groups at ws <= 8 favour TRTLLM, few groups at larger ws favour CUTEDSL).
  Activations (input, BF16 intermediate written and read back, output) add HBM traffic.
  ``t_gemm = max(t_flop, t_mem) + 0.25*min(...) + active*per_group_cost``.
* **Dispatch/combine** (attention DP, EP > 1). Each rank sends ``L*k*(ep-1)/ep``
  assignments of ``h * bytes_per_elem`` (NVFP4 0.5625, FP8/MXFP8 ~1.03, BF16 2; DeepEP
  normal mode dispatches BF16) and receives the combine in BF16 (FP8 with
  ``use_low_precision_moe_combine`` on the NVLink and low-latency paths). Bandwidth is
  NVLink inside the NVLink domain (GB300: NVL72; B300/H200: 8 GPUs per node) and the
  network (~20x slower per GPU) for the share of peers outside it. Each strategy has a
  fixed cost and a bandwidth efficiency; DeepEP low-latency has the smallest fixed cost
  but its efficiency collapses as the per-rank message grows (buffer chunking, incast),
  while ALLGATHER+ReduceScatter moves more bytes at near line rate, so across domains
  DEEPEPLOWLATENCY wins small dispatches and ALLGATHER large ones. MoE-TP with attention
  DP uses ALLGATHER (all tokens to every rank). Attention TP pays an all-reduce of the
  outputs instead (``nt*h*2`` bytes, ring factor ``2(ws-1)/ws``).
* **Fixed costs.** Graph on: a per-backend launch/sync cost (TRTLLM grows slightly with
  ``ep``) plus the comm strategy's fixed cost. MEGAMOE (fused comm, actual comm NONE):
  three NVLink barriers plus metadata prep that follows the token bucket
  (``next_pow2(L)``), but dispatch/combine overlap the GEMM:
  ``fixed + max(t_gemm, t_comm) + 0.15*min(...)``. Graph off: every backend has a host
  dispatch time (TRTLLM one host call; the fused path a chain of host steps with its own
  tactic lookups, much larger); the forward costs ``max(host, gpu) + 0.1*min(host, gpu)``
  so host overhead hides small GPU work. With these numbers MEGAMOE_CUTEDSL overtakes
  TRTLLM (NVFP4, GB300, DEP) around 512 activated tokens/rank with graph on and around
  16k with graph off.
"""

from __future__ import annotations

import math
from typing import Any

from ingest.demo.tables import _FUSED, _QUANT, _Hw, parallel_layout

# backend -> (compute emax, m_half, hbm efficiency, per-active-group us,
#             graph-on fixed us, fixed us per ep rank, graph-off host us, kernels/forward)
_BK = {
    "TRTLLM": (0.62, 24.0, 0.85, 0.03, 12.0, 0.40, 70.0, 6),
    "CUTEDSL": (0.68, 76.0, 0.85, 0.05, 14.0, 0.10, 180.0, 7),
    "CUTLASS": (0.55, 48.0, 0.72, 0.08, 18.0, 0.10, 100.0, 9),
    "DEEPGEMM": (0.66, 48.0, 0.80, 0.06, 20.0, 0.10, 120.0, 10),
    "MEGAMOE_CUTEDSL": (0.74, 48.0, 0.85, 0.03, 0.0, 0.0, 0.0, 4),
    "MEGAMOE_DEEPGEMM": (0.72, 48.0, 0.84, 0.03, 0.0, 0.0, 0.0, 4),
}

# comm class -> (graph-on fixed us, NVLink efficiency, network efficiency,
#                graph-off host us, dispatch bytes override (None = quantised))
_CM = {
    "NVLinkOneSided": (8.0, 0.80, 0.0, 25.0, None),
    "NVLinkTwoSided": (13.0, 0.75, 0.0, 35.0, None),
    "DeepEP": (38.0, 0.62, 0.27, 90.0, 2.0),
    "DeepEPLowLatency": (11.0, 0.45, 0.70, 30.0, 1.0),
    "AllGatherReduceScatter": (22.0, 0.85, 0.92, 30.0, None),
    "NONE": (0.0, 1.0, 1.0, 0.0, None),
}


def _next_pow2(x: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1.0, x))))


def _gemm_us(
    hw: _Hw, mdl: dict[str, Any], quant: Any, backend: str, ep: int, tp: int, nt: int
) -> float:
    emax, m_half, hbm_eff, group_us = _BK[backend][:4]
    w_bytes, _, prec = _QUANT[quant]
    e_loc = mdl["num_experts"] / ep
    a = nt * mdl["top_k"] / ep
    active = min(e_loc, max(a, 1.0))
    m = a / active
    n_width = mdl["intermediate_size"] / tp
    h = mdl["hidden_size"]
    if backend == "CUTEDSL":  # generic grouped GEMM: many small groups hurt
        hbm_eff *= min(1.05, max(0.72, 1.10 - 0.10 * e_loc / 32.0))
    t_flop = 2.0 * 3.0 * a * h * n_width / (hw.tflops[prec] * 1e6 * emax * m / (m + m_half))
    act_bytes = a * (h * _QUANT[quant][1] + 2.0 * n_width * 2.0 * 2.0 + h * 2.0)
    t_mem = (active * 3.0 * h * n_width * w_bytes + act_bytes) / (hw.hbm_gbps * 1e3 * hbm_eff)
    return float(max(t_flop, t_mem) + 0.25 * min(t_flop, t_mem) + active * group_us + 2.0)


def _xfer_us(hw: _Hw, nbytes: float, off_frac: float, nvl_eff: float, net_eff: float) -> float:
    t_nvl = nbytes * (1.0 - off_frac) / (hw.nvl_gbps * 1e3 * nvl_eff)
    t_net = nbytes * off_frac / (hw.net_gbps * 1e3 * net_eff) if off_frac > 0 else 0.0
    return max(t_nvl, t_net) + 0.1 * min(t_nvl, t_net)


def _comm_us(
    hw: _Hw,
    mdl: dict[str, Any],
    quant: Any,
    comm_cls: str,
    ws: int,
    ep: int,
    tp: int,
    adp: bool,
    nt: int,
    lpmc: bool,
) -> tuple[float, float]:
    """(gpu us, host us) of dispatch+combine (or the attention-TP all-reduce)."""
    h = mdl["hidden_size"]
    k = mdl["top_k"]
    _, disp_bpe, _ = _QUANT[quant]
    if not adp:  # attention TP: all-reduce of the MoE output
        if ws == 1:
            return 0.0, 0.0
        nbytes = nt * h * 2.0 * 2.0 * (ws - 1) / ws
        off = max(0, ws - hw.nvl_domain) / ws
        return 6.0 + _xfer_us(hw, nbytes, off, 0.70, 0.85), 12.0
    if comm_cls == "NONE" or ws == 1:
        return 0.0, 0.0
    fixed, nvl_eff, net_eff, host, disp_override = _CM[comm_cls]
    cross = ws > hw.nvl_domain
    fixed += 0.1 * ep  # more peers to coordinate with
    if cross:
        fixed *= 2.0
    local = math.ceil(nt / ws)
    if comm_cls == "AllGatherReduceScatter":
        others = max(0, nt - local)
        nbytes = others * h * (disp_bpe + 2.0)
        off = max(0, ws - hw.nvl_domain) / ws
        return fixed + _xfer_us(hw, nbytes, off, nvl_eff, net_eff), host
    sent = local * k * (ep - 1) / ep
    d_bpe = disp_override if disp_override is not None else disp_bpe
    c_bpe = (
        1.0
        if (lpmc and comm_cls in ("NVLinkOneSided", "NVLinkTwoSided", "DeepEPLowLatency"))
        else 2.0
    )
    nbytes = sent * h * (d_bpe + c_bpe)
    off = max(0, ep - hw.nvl_domain) / max(1, ep - 1)
    if comm_cls == "DeepEPLowLatency":
        # low-latency kernels: per-token messages, fixed-size buffers -> efficiency falls
        # as the per-rank message grows
        per_rank_mb = nbytes / 2.0 / 1e6
        nvl_eff /= min(4.0, 1.0 + per_rank_mb / 12.0)
        net_eff /= min(6.0, 1.0 + per_rank_mb / 5.0)
        fixed += 4.0 * max(0, math.ceil(local / 256) - 1)
    return fixed + _xfer_us(hw, nbytes, off, nvl_eff, net_eff), host


def model_latency_us(
    hw: _Hw,
    mdl: dict[str, Any],
    quant: Any,
    ws: int,
    nt: int,
    backend: str,
    mode: str,
    comm_cls: str,
    cuda_graph: bool,
    lpmc: bool,
) -> float:
    """Noise-free forward time (us) of the busiest rank for one candidate."""
    ep, tp, adp = parallel_layout(mode, ws)
    t_gemm = _gemm_us(hw, mdl, quant, backend, ep, tp, nt)
    t_comm, host_comm = _comm_us(hw, mdl, quant, comm_cls, ws, ep, tp, adp, nt, lpmc)
    local = math.ceil(nt / ws) if adp else nt
    if backend in _FUSED:
        _, disp_bpe, _ = _QUANT[quant]
        h, k = mdl["hidden_size"], mdl["top_k"]
        sent = local * k * (ep - 1) / ep
        t_fused_comm = sent * h * (disp_bpe + 2.0) / (hw.nvl_gbps * 1e3 * 0.85)
        barrier = 3.0 * (6.0 + 0.1 * ep)  # three cross-rank NVLink barriers
        meta = 6.0 + 0.004 * _next_pow2(local)  # metadata prep follows the token bucket
        gpu = barrier + meta + max(t_gemm, t_fused_comm) + 0.15 * min(t_gemm, t_fused_comm)
        host = 650.0 + 0.01 * local  # chain of host steps, each with dispatch + tactic lookup
        n_kernels = _BK[backend][7]
    else:
        _, _, _, _, fixed, fixed_ep, host_b, n_kernels = _BK[backend]
        gpu = fixed + fixed_ep * ep + t_comm + t_gemm
        if not adp and backend != "TRTLLM":
            # attention TP: every rank scans all nt tokens; TRTLLM fuses routing+permute,
            # the others run a separate local-expert filter/permute pass
            gpu += 5.0 + 0.0015 * nt * mdl["top_k"]
        host = host_b + host_comm
    if cuda_graph:
        return float(gpu)
    gpu_eager = gpu + 1.5 * n_kernels  # launch gaps between kernels
    return float(max(host, gpu_eager) + 0.1 * min(host, gpu_eager))


def _workspace_gib(
    mdl: dict[str, Any], quant: Any, backend: str, ws: int, ep: int, tp: int, adp: bool, nt: int
) -> float:
    """Rough MoE workspace estimate (GiB) used for the synthetic OOM rule."""
    h, k, i = mdl["hidden_size"], mdl["top_k"], mdl["intermediate_size"]
    local = math.ceil(nt / ws) if adp else nt
    a = local * k if not adp else nt * k / ep
    factor = {"CUTLASS": 3.0, "CUTEDSL": 2.5, "TRTLLM": 1.6, "DEEPGEMM": 2.4}.get(backend, 2.0)
    per_row = h * 2.0 + 2.0 * i / tp * 2.0 + h * 4.0
    return float(a * per_row * factor / 2**30 + local * h * 2.0 * 4 / 2**30)
