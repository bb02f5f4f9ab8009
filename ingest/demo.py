"""Deterministic generator of *synthetic* TensorRT-LLM ``bench_moe`` reports.

Everything produced here is made up. The reports follow the real JSON schema
(``/work/shared/reference/bench_moe_schema.md``): the 7 top-level keys in order, the 14
row keys in order, the default blocks for skipped/failed rows (section 2.4), the score
(section 2.5: per-iteration slowest rank, MAD-trimmed mean) and the rankings (section 3).
They exist so the dashboard has realistic data to show and to benchmark against; they
must never be mistaken for measurements (``DemoMeta.synthetic`` is always True).

Public API
----------
``generate_report(model, hardware, quant, world_size, num_tokens, *, seed=0, ...)``
    one report (one process group: one model/quant/GPU/world size, many workloads).
``dump_report(report, compact=False)``
    JSON bytes exactly as ``json.dumps(report, indent=2, allow_nan=True)`` (or
    ``indent=None`` when ``compact``) would write them, so ``Infinity`` is a bare token.
    Fast path: orjson, float tokens re-rendered with ``repr`` where orjson's spelling
    differs; anything orjson cannot reproduce exactly falls back to :mod:`json`.
``demo_reports()``
    the default demo dataset: ``[(report, DemoMeta), ...]``.
``big_report(n_candidates, seed=0)``
    one large report (world size 8) with about ``n_candidates`` rows, for benchmarks.

Performance model (plausible, not exact)
----------------------------------------
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

import contextlib
import dataclasses
import gc
import hashlib
import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

try:  # orjson is a hard dependency of moedash, but keep the module importable without it
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]

__all__ = [
    "DemoMeta",
    "generate_report",
    "dump_report",
    "demo_reports",
    "big_report",
    "MODELS",
    "HARDWARE",
    "compute_score",
    "compute_rankings",
    "parallel_layout",
    "model_latency_us",
    "BACKEND_QUANTS",
]

INF = float("inf")

# --------------------------------------------------------------------------------------
# Static tables
# --------------------------------------------------------------------------------------

_MODEL_KEYS = (
    "name", "num_experts", "top_k", "hidden_size", "intermediate_size", "quant_algo",
    "routing_method", "n_group", "topk_group", "n_shared_experts", "shared_expert_mode",
    "swiglu_alpha", "swiglu_beta", "swiglu_limit", "activation_type", "situ_beta",
    "situ_linear_beta", "routing_method_class",
)

_ROUTING_CLASS = {
    "RENORMALIZE": "RenormalizeMoeRoutingMethod",
    "DEEPSEEK_V3": "DeepSeekV3MoeRoutingMethod",
}

# The perf guide's covered models (bench_moe specs.py names and shapes).
MODELS: dict[str, dict[str, Any]] = {
    "deepseek_v4_pro": dict(num_experts=384, top_k=6, hidden_size=7168, intermediate_size=3072,
                            routing_method="RENORMALIZE"),
    "glm_5": dict(num_experts=256, top_k=8, hidden_size=6144, intermediate_size=2048,
                  routing_method="DEEPSEEK_V3", n_group=1, topk_group=1),
    "kimi_k2": dict(num_experts=384, top_k=8, hidden_size=7168, intermediate_size=2048,
                    routing_method="DEEPSEEK_V3", n_group=1, topk_group=1),
    "qwen3_8": dict(num_experts=512, top_k=10, hidden_size=8192, intermediate_size=2048,
                    routing_method="RENORMALIZE"),
    "kimi_k3": dict(num_experts=896, top_k=16, hidden_size=3584, intermediate_size=3072,
                    routing_method="DEEPSEEK_V3", n_group=1, topk_group=1, situ_beta=4.0,
                    situ_linear_beta=25.0),
}


@dataclasses.dataclass(frozen=True)
class _Hw:
    label: str
    device_name: str
    sm: int
    arch: str  # "blackwell" | "hopper"
    nvl_domain: int  # GPUs per NVLink domain
    gpus_per_node: int  # visible GPUs per host (environment.world_size_per_node)
    nvl_gbps: float  # NVLink GB/s per GPU per direction
    net_gbps: float  # network GB/s per GPU
    hbm_gbps: float
    mem_gib: float
    tflops: dict[str, float]  # dense rate by compute precision
    hostname: str
    platform: str
    cuda_version: str
    driver_version: str


HARDWARE: dict[str, _Hw] = {
    "GB300": _Hw("GB300", "NVIDIA GB300", 103, "blackwell", 72, 4, 900.0, 45.0, 8000.0, 279.0,
                 {"fp4": 15000.0, "fp8": 5000.0, "bf16": 2500.0}, "gb300-nvl72-c{n:02d}",
                 "Linux-6.8.0-1031-nvidia-64k-aarch64-with-glibc2.39", "13.0", "580.95.05"),
    "B300": _Hw("B300", "NVIDIA B300 SXM6 AC", 103, "blackwell", 8, 8, 900.0, 45.0, 8000.0,
                268.0, {"fp4": 14000.0, "fp8": 4500.0, "bf16": 2250.0}, "b300-hgx-{n:02d}",
                "Linux-6.8.0-85-generic-x86_64-with-glibc2.39", "13.0", "580.95.05"),
    "H200": _Hw("H200", "NVIDIA H200", 90, "hopper", 8, 8, 450.0, 45.0, 4800.0, 140.0,
                {"fp8": 1979.0, "bf16": 989.0}, "h200-hgx-{n:02d}",
                "Linux-6.8.0-85-generic-x86_64-with-glibc2.39", "12.9", "575.57.08"),
}

# quant -> (weight bytes/elem incl. scales, dispatch bytes/elem incl. scales, compute precision)
_QUANT = {
    "NVFP4": (0.5625, 0.5625, "fp4"),
    "W4A8_MXFP4_MXFP8": (0.53125, 1.03125, "fp8"),
    "FP8_BLOCK_SCALES": (1.03125, 1.03125, "fp8"),
    "FP8": (1.0, 1.0, "fp8"),
    None: (2.0, 2.0, "bf16"),
}

# Backend capability matrix (perf guide): backend -> {arch: quants}.
BACKEND_QUANTS: dict[str, dict[str, tuple[Any, ...]]] = {
    "CUTLASS": {"blackwell": ("NVFP4", "W4A8_MXFP4_MXFP8", "FP8_BLOCK_SCALES", "FP8", None),
                "hopper": ("FP8_BLOCK_SCALES", "FP8", None)},
    "TRTLLM": {"blackwell": ("NVFP4", "W4A8_MXFP4_MXFP8", "FP8_BLOCK_SCALES", None)},
    "CUTEDSL": {"blackwell": ("NVFP4",)},
    "DEEPGEMM": {"blackwell": ("FP8_BLOCK_SCALES",)},
    "MEGAMOE_CUTEDSL": {"blackwell": ("NVFP4",)},
    "MEGAMOE_DEEPGEMM": {"blackwell": ("W4A8_MXFP4_MXFP8",)},
}
_BACKEND_ORDER = ("TRTLLM", "CUTEDSL", "CUTLASS", "DEEPGEMM", "MEGAMOE_CUTEDSL",
                  "MEGAMOE_DEEPGEMM")
_FUSED = ("MEGAMOE_CUTEDSL", "MEGAMOE_DEEPGEMM")
_NO_MOE_TP = ("CUTEDSL", "DEEPGEMM", "MEGAMOE_CUTEDSL", "MEGAMOE_DEEPGEMM")

_COMM_ORDER = ("NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED", "DEEPEP", "DEEPEPLOWLATENCY",
               "ALLGATHER")
_COMM_CLASS = {
    "NVLINK_ONE_SIDED": "NVLinkOneSided",
    "NVLINK_TWO_SIDED": "NVLinkTwoSided",
    "DEEPEP": "DeepEP",
    "DEEPEPLOWLATENCY": "DeepEPLowLatency",
    "ALLGATHER": "AllGatherReduceScatter",
    "NONE": "NONE",
}
_DEEPEP_LL_HIDDEN = (2048, 2560, 3584, 4096, 5120, 6144, 7168)

# Default hybrid layouts added to DEP/TEP (a subset of bench_moe's default parallel axis).
_HYBRIDS = {
    4: ("DTP2EP2", "TTP2EP2"),
    8: ("TTP2EP4",),
    16: ("TTP4EP4",),
    32: ("TTP4EP8",),
    64: ("TTP8EP8",),
}
_HYBRID_RE = re.compile(r"^([DT])TP(\d+)EP(\d+)$")

_NATIVE_WARNING = ("observed_* numbers re-materialise the plan; native-mode kernel top-k "
                   "may differ")


def parallel_layout(mode: str, world_size: int) -> tuple[int, int, bool]:
    """(moe_ep_size, moe_tp_size, attention_dp) of a named parallel mode (schema 2.11)."""
    if mode == "DEP":
        return world_size, 1, True
    if mode == "TEP":
        return world_size, 1, False
    if mode == "DTP":
        return 1, world_size, True
    if mode == "TTP":
        return 1, world_size, False
    m = _HYBRID_RE.match(mode)
    if not m:
        raise ValueError(f"Unknown parallel_mode={mode!r}")
    return int(m.group(3)), int(m.group(2)), m.group(1) == "D"


# --------------------------------------------------------------------------------------
# Deterministic hashing / counter-based random numbers
# --------------------------------------------------------------------------------------

_M64 = (1 << 64) - 1


def _key_hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on a uint64 array (wrapping arithmetic, array-only)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.asarray(x ^ (x >> np.uint64(31)))


def _uniform(keys: np.ndarray, stream: int, n: int) -> np.ndarray:
    """(len(keys), n) uniforms in (0, 1), a pure function of (key, stream, column)."""
    ctr = (np.arange(n, dtype=np.uint64) + np.uint64(stream << 32))[None, :]
    x = _splitmix(_splitmix(keys[:, None] ^ _splitmix(ctr)))
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)


def _normal(keys: np.ndarray, stream: int, n: int) -> np.ndarray:
    u1 = _uniform(keys, 2 * stream, n)
    u2 = _uniform(keys, 2 * stream + 1, n)
    return np.asarray(np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2))


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Building ~10^5 nested dicts/lists triggers the cyclic GC over and over (it is
    quadratic-ish in practice); nothing built here is cyclic, so pause it meanwhile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# --------------------------------------------------------------------------------------
# Performance model
# --------------------------------------------------------------------------------------

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


def _comm_us(hw: _Hw, mdl: dict[str, Any], quant: Any, comm_cls: str, ws: int, ep: int, tp: int,
             adp: bool, nt: int, lpmc: bool) -> tuple[float, float]:
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
    c_bpe = 1.0 if (lpmc and comm_cls in ("NVLinkOneSided", "NVLinkTwoSided",
                                          "DeepEPLowLatency")) else 2.0
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


def model_latency_us(hw: _Hw, mdl: dict[str, Any], quant: Any, ws: int, nt: int, backend: str,
                     mode: str, comm_cls: str, cuda_graph: bool, lpmc: bool) -> float:
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
        gpu = (barrier + meta + max(t_gemm, t_fused_comm) + 0.15 * min(t_gemm, t_fused_comm))
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


def _workspace_gib(mdl: dict[str, Any], quant: Any, backend: str, ws: int, ep: int, tp: int,
                   adp: bool,
                   nt: int) -> float:
    """Rough MoE workspace estimate (GiB) used for the synthetic OOM rule."""
    h, k, i = mdl["hidden_size"], mdl["top_k"], mdl["intermediate_size"]
    local = math.ceil(nt / ws) if adp else nt
    a = local * k if not adp else nt * k / ep
    factor = {"CUTLASS": 3.0, "CUTEDSL": 2.5, "TRTLLM": 1.6, "DEEPGEMM": 2.4}.get(backend, 2.0)
    per_row = h * 2.0 + 2.0 * i / tp * 2.0 + h * 4.0
    return float(a * per_row * factor / 2**30 + local * h * 2.0 * 4 / 2**30)


# --------------------------------------------------------------------------------------
# Score / stats (schema 2.5) - sequential sums so they match plain Python bit for bit
# --------------------------------------------------------------------------------------


def _seq_sum(a: np.ndarray) -> np.ndarray:
    """Left-to-right sum over the last axis (same rounding as a Python for-loop)."""
    s = a[..., 0].copy()
    for j in range(1, a.shape[-1]):
        s = s + a[..., j]
    return s


def _stats_arrays(x: np.ndarray) -> dict[str, np.ndarray]:
    """_compute_stats over the last axis: mean, median, stdev (population), min, max, p90."""
    n = x.shape[-1]
    srt = np.sort(x, axis=-1)
    mean = _seq_sum(x) / n
    d = x - mean[..., None]
    stdev = np.sqrt(_seq_sum(d * d) / n)
    median = srt[..., n // 2] if n % 2 else (srt[..., n // 2 - 1] + srt[..., n // 2]) / 2.0
    p90 = srt[..., round(0.9 * (n - 1))]
    return {"mean": mean, "median": median, "stdev": stdev, "min": srt[..., 0],
            "max": srt[..., -1], "p90": p90}


def compute_score(per_rank: dict[str, list[float]]) -> dict[str, Any]:
    """Reference (pure Python) implementation of the bench_moe score, schema 2.5.

    Returns ``{"score", "score_type", "raw_score", "iter_max", "outliers"}``. Sums run
    left to right, like the vectorised generator, so results match bit for bit.
    """
    ranks = list(per_rank.values())
    n = min(len(r) for r in ranks)
    iter_max = [max(r[i] for r in ranks) for i in range(n)]
    total = 0.0
    for v in iter_max:
        total += v
    raw = total / n
    srt = sorted(iter_max)
    center = srt[n // 2] if n % 2 else (srt[n // 2 - 1] + srt[n // 2]) / 2.0
    if n < 8:
        return {"score": center, "score_type": "slowest_rank_median", "raw_score": raw,
                "iter_max": iter_max, "outliers": []}
    devs = sorted(abs(v - center) for v in iter_max)
    mad = devs[n // 2] if n % 2 else (devs[n // 2 - 1] + devs[n // 2]) / 2.0
    outliers = []
    for idx, v in enumerate(iter_max):
        if mad == 0.0:
            if abs(v - center) > 0.05 * center:
                outliers.append(idx)
        elif abs(0.6745 * (v - center) / mad) > 3.5:
            outliers.append(idx)
    kept = [v for idx, v in enumerate(iter_max) if idx not in outliers] or iter_max
    s = 0.0
    for v in kept:
        s += v
    return {"score": s / len(kept), "score_type": "slowest_rank_trimmed_mean", "raw_score": raw,
            "iter_max": iter_max, "outliers": outliers}


def _latency_blocks(samples: np.ndarray) -> list[dict[str, Any]]:
    """latency_ms blocks for C success rows from samples shaped (C, R, I)."""
    c_n, r_n, n = samples.shape
    iter_max = samples.max(axis=1)  # (C, I)
    im = _stats_arrays(iter_max)
    raw = im["mean"]
    center = im["median"]
    ad = np.abs(iter_max - center[:, None])
    ad_s = np.sort(ad, axis=1)
    mad = ad_s[:, n // 2] if n % 2 else (ad_s[:, n // 2 - 1] + ad_s[:, n // 2]) / 2.0
    zero = mad == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = 0.6745 * (iter_max - center[:, None]) / np.where(zero, 1.0, mad)[:, None]
    out = np.where(zero[:, None], ad > 0.05 * center[:, None], np.abs(z) > 3.5)
    if n < 8:
        out[:] = False
    all_out = out.all(axis=1)
    keep = ~out | all_out[:, None]
    kept_n = keep.sum(axis=1)
    score = _seq_sum(np.where(keep, iter_max, 0.0)) / kept_n
    if n < 8:
        score = center
    pr = _stats_arrays(samples)  # each (C, R)

    im_l = {k: v.tolist() for k, v in im.items()}
    pr_l = {k: v.tolist() for k, v in pr.items()}
    score_l, raw_l, center_l, mad_l = score.tolist(), raw.tolist(), center.tolist(), mad.tolist()
    rank_names = [f"rank{r}" for r in range(r_n)]
    blocks = []
    out_rows = np.nonzero(out.any(axis=1))[0].tolist()
    out_items: dict[int, list[dict[str, Any]]] = {}
    for c in out_rows:
        items = []
        for idx in np.nonzero(out[c])[0].tolist():
            v = float(iter_max[c, idx])
            items.append({
                "index": idx,
                "value": v,
                "center": center_l[c],
                "modified_z_score": None if zero[c] else float(z[c, idx]),
                "absolute_deviation": float(ad[c, idx]),
                "direction": "high" if v > center_l[c] else "low",
            })
        out_items[c] = items
    for c in range(c_n):
        if n < 8:
            outl: dict[str, Any] = {"method": "disabled_insufficient_samples", "count": 0,
                                    "samples_used": n, "samples_total": n, "items": []}
        else:
            items = out_items.get(c, [])
            outl = {"method": "modified_z_score_mad", "threshold": 3.5, "center": center_l[c],
                    "mad": mad_l[c], "count": len(items),
                    "samples_used": n - len(items) if len(items) < n else n,
                    "samples_total": n, "items": items}
        blocks.append({
            "score": score_l[c],
            "score_type": "slowest_rank_trimmed_mean" if n >= 8 else "slowest_rank_median",
            "raw_score": raw_l[c],
            "raw_score_type": "slowest_rank_mean",
            "iter_max_stats": {"mean": im_l["mean"][c], "median": im_l["median"][c],
                               "stdev": im_l["stdev"][c], "min": im_l["min"][c],
                               "max": im_l["max"][c], "p90": im_l["p90"][c]},
            "iter_max_outliers": outl,
            "per_rank": {
                rank_names[r]: {"mean": pr_l["mean"][c][r], "median": pr_l["median"][c][r],
                                "stdev": pr_l["stdev"][c][r], "min": pr_l["min"][c][r],
                                "max": pr_l["max"][c][r], "p90": pr_l["p90"][c][r]}
                for r in range(r_n)
            },
        })
    return blocks


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
        ranking = sorted(groups[key], key=lambda e: (e["score_ms"] is None,
                                                     e["score_ms"] if e["score_ms"] is not None
                                                     else 0.0))
        best = None
        for e in ranking:
            if (e["score_ms"] is not None and e["status"] == "success"
                    and not str(e["autotune_status"] or "").startswith("failed")):
                best = dict(e)
                break
        out.append({"num_tokens": key[0], "parallel_mode": key[1], "best": best,
                    "ranking": ranking})
    return out


# --------------------------------------------------------------------------------------
# Report generation
# --------------------------------------------------------------------------------------


def _default_backends(hw: _Hw, quant: Any) -> list[str]:
    return [b for b in _BACKEND_ORDER if quant in BACKEND_QUANTS[b].get(hw.arch, ())]


def _default_modes(ws: int) -> list[str]:
    return ["DEP", "TEP", *_HYBRIDS.get(ws, ())]


def _default_comms(hw: _Hw, ws: int, mdl: dict[str, Any]) -> list[str]:
    mnnvl = hw.arch == "blackwell" and ws <= hw.nvl_domain
    out = [c for c in _COMM_ORDER if mnnvl or not c.startswith("NVLINK")]
    return out


def _model_block(model: str, quant: Any) -> dict[str, Any]:
    spec = MODELS[model]
    blk = {
        "name": model, "num_experts": spec["num_experts"], "top_k": spec["top_k"],
        "hidden_size": spec["hidden_size"], "intermediate_size": spec["intermediate_size"],
        "quant_algo": quant, "routing_method": spec["routing_method"],
        "n_group": spec.get("n_group"), "topk_group": spec.get("topk_group"),
        "n_shared_experts": 0, "shared_expert_mode": "fused", "swiglu_alpha": 1.0,
        "swiglu_beta": 0.0, "swiglu_limit": INF, "activation_type": "SWIGLU",
        "situ_beta": spec.get("situ_beta"), "situ_linear_beta": spec.get("situ_linear_beta"),
        "routing_method_class": _ROUTING_CLASS[spec["routing_method"]],
    }
    assert tuple(blk) == _MODEL_KEYS
    return blk


def _environment(hw: _Hw, ws: int, seed: int, graph_default: bool) -> dict[str, Any]:
    return {
        "world_size": ws,
        "world_size_per_node": min(ws, hw.gpus_per_node),
        "hostname": hw.hostname.format(n=1 + seed % 18),
        "username": "moedash-synthetic",
        "device_name": hw.device_name,
        "sm": hw.sm,
        "cuda_version": hw.cuda_version,
        "driver_version": hw.driver_version,
        "torch_version": "2.9.0a0+50eac811a6.nv25.10",
        "trtllm_commit": f"{_key_hash(f'commit|{seed}') & 0xFFFFFFFFFF:010x}",
        "platform": hw.platform,
        "nvlink_topology": "unknown",
        "memory_type": "unknown",
        "clock_locked": False,
        "cuda_graph_default": graph_default,
    }


def _per_rank_tokens(nt: int, ws: int, adp: bool) -> list[int]:
    if not adp:
        return [nt] * ws
    q, r = divmod(nt, ws)
    return [q + (1 if j < r else 0) for j in range(ws)]


def _requested_routing(prt: list[int] | None) -> dict[str, Any]:
    return {"routing_mode": "native", "projection_policy": "project",
            "comm_pattern": "balanced_alltoall", "expert_pattern": "balanced",
            "routing_pattern_file": None, "per_rank_num_tokens": prt,
            "routing_dump_matrix": False, "seed": 0}


def _split(total: int, parts: int) -> list[int]:
    q, r = divmod(total, parts)
    return [q + (1 if j < r else 0) for j in range(parts)]


def _routing_block(prt: list[int], mdl: dict[str, Any], ep: int, tp: int, num_chunks: int | None
                   ) -> dict[str, Any]:
    k, e = mdl["top_k"], mdl["num_experts"]
    total = sum(prt) * k // tp
    sums = _split(total, ep)
    hist_total = total
    req = _requested_routing(prt)
    del req["routing_dump_matrix"]
    return {
        "requested": req,
        "actual": {
            "routing_path": "logits_native",
            "routing_realization": {"status": "exact",
                                    "reason": "native logits projected onto the planned top-k",
                                    "max_abs_slot_error": 0, "max_relative_slot_error": 0.0},
            "enable_perfect_router": False,
            "effective_src_axis": "dp_rank",
            "max_num_tokens_per_rank": max(prt),
            "num_chunks_observed": num_chunks,
            "use_dp_padding": False,
            "observation_source": "plan_simulation",
            "observed_dispatch_matrix_summary": {
                "row_sums": list(sums), "col_sums": list(sums),
                "off_diagonal_ratio": (ep - 1) / ep, "max_abs_slot_error": 0,
                "matrix_dump_path": None},
            "observed_expert_histogram_summary": {
                "min": hist_total // e, "max": -(-hist_total // e),
                "active_experts": min(e, hist_total)},
            "selected_scales": {"distribution": "uniform", "dtype": "torch.bfloat16",
                                "seed": 0},
            "warnings": [_NATIVE_WARNING],
        },
    }


def _default_latency() -> dict[str, Any]:
    return {"score": None, "score_type": "slowest_rank_trimmed_mean", "raw_score": None,
            "raw_score_type": "slowest_rank_mean", "iter_max_stats": {},
            "iter_max_outliers": {}, "per_rank": {}}


def _null_actual() -> dict[str, Any]:
    return {"backend": None, "comm_method": None, "comm_fallback_reason": None,
            "scheduler_kind": None, "moe_ep_size": None, "moe_tp_size": None,
            "enable_attention_dp": None, "num_chunks": None}


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
        return (f"unsupported_arch: {c.backend} requires {archs} "
                f"(got SM{hw.sm}, {hw.device_name})")
    if quant not in caps[hw.arch]:
        return (f"unsupported_quant: {c.backend} does not implement quant_algo={quant} "
                f"on SM{hw.sm}")
    ep, tp, adp = parallel_layout(c.mode, ws)
    if ep * tp != ws:
        return f"moe_ep_size * moe_tp_size = {ep * tp} must equal world_size={ws}"
    if c.backend in _FUSED and not adp:
        return (f"{c.backend} does not support {c.mode} (fused dispatch/combine requires "
                f"enable_attention_dp=True)")
    if c.backend in _NO_MOE_TP and tp > 1:
        return (f"{c.backend} does not support MoE-TP (moe_tp_size={tp}); use an EP-only "
                f"parallel_mode")
    if c.comm not in ("AUTO", "NONE"):
        if not adp:
            return f"comm_method={c.comm} requires enable_attention_dp=True"
        if tp != 1 and c.comm != "ALLGATHER":
            return f"comm_method={c.comm} requires moe_tp_size=1 (got {tp})"
        if ws == 1:
            return f"comm_method={c.comm} has no effect at world_size=1"
        if c.comm == "DEEPEPLOWLATENCY" and (mdl["hidden_size"] not in _DEEPEP_LL_HIDDEN
                                             or mdl["top_k"] > 16):
            return (f"comm_method=DEEPEPLOWLATENCY: hidden_size={mdl['hidden_size']} not "
                    f"supported by DeepEP low-latency kernels (supported hidden sizes: "
                    f"{', '.join(map(str, _DEEPEP_LL_HIDDEN))}; top_k <= 16)")
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
        c.reason = (f"build error: RuntimeError: {c.comm_cls} requires MNNVL fabric memory "
                    f"across all {ep} EP ranks; this topology has {hw.nvl_domain} GPUs per "
                    f"NVLink domain")
        c.rank_status = "failed"
        return
    if c.backend in _FUSED and ep > hw.nvl_domain:
        c.status, c.mapping_only, c.autotune = "failed", True, "not_run"
        c.reason = (f"build error: RuntimeError: {c.backend} symmetric-memory heap needs all "
                    f"{ep} EP ranks in one NVLink domain (domain size {hw.nvl_domain})")
        c.rank_status = "failed"
        return
    ws_gib = _workspace_gib(mdl, quant, c.backend, ws, ep, tp, adp, c.nt)
    budget = hw.mem_gib * 0.1
    if ws_gib > budget:
        c.status, c.autotune, c.rank_status = "failed", "success", "failed"
        c.reason = (f"timed phase error: OutOfMemoryError: CUDA out of memory. Tried to "
                    f"allocate {ws_gib * 0.4:.2f} GiB. GPU 0 has a total capacity of "
                    f"{hw.mem_gib:.2f} GiB of which {max(0.5, budget * 0.2):.2f} GiB is free")
        return
    if c.comm_cls in ("DeepEP", "DeepEPLowLatency") and u_fail < 0.004:
        c.status, c.built, c.autotune, c.rank_status = "failed", False, None, "timeout"
        c.reason = f"watchdog_timeout: exceeded 900s; suspected NCCL/CUDA hang ({_label(c)})"
        return
    if u_fail > 0.997:
        c.status, c.mapping_only, c.autotune, c.rank_status = "failed", True, "not_run", "failed"
        c.reason = (f"build error: RuntimeError: [TensorRT-LLM][ERROR] no valid tactic for "
                    f"{c.backend} grouped GEMM with hidden_size={mdl['hidden_size']}, "
                    f"intermediate_size={mdl['intermediate_size'] // tp}")
        return
    if 0.5 < u_fail < 0.503:
        c.autotune = "failed:RuntimeError: autotuner profiling raised CUDA error 700 for " \
                     "one tactic; falling back to the default tactic"
    elif not c.cg and 0.6 < u_fail < 0.62:
        c.autotune = "success:fast"
    c.base_us = model_latency_us(hw, mdl, quant, ws, c.nt, c.backend, c.mode, c.comm_cls,
                                 c.cg, c.lpmc)


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


def _search_block(backends: list[str], modes: list[str], comms: list[str],
                  cgs: list[bool]) -> dict[str, Any]:
    axes = []
    if len(backends) > 1:
        axes.append("backend")
    if len(comms) > 1:
        axes.append("comm")
    if len(modes) > 1:
        axes.append("parallel")
    full = len(cgs) > 1
    mode = "full" if full else (",".join(axes) if axes else "none")
    return {
        "mode": mode,
        "backends": list(backends) if (full or "backend" in axes) else [],
        "parallel_modes": list(modes) if (full or "parallel" in axes) else [],
        "comm_methods": list(comms) if (full or "comm" in axes) else [],
        "cuda_graph_options": list(cgs) if full else [],
        "combine_precision_options": [],
    }


def generate_report(model: str, hardware: str, quant: str, world_size: int,
                    num_tokens: Sequence[int], *, seed: int = 0,
                    cuda_graph: Sequence[bool] = (True, False),
                    parallel_modes: Sequence[str] | None = None,
                    backends: Sequence[str] | None = None,
                    comm_methods: Sequence[str] | None = None,
                    iters: int = 12, with_raw_samples: bool = True,
                    time_budget_tail: int = 0) -> dict[str, Any]:
    """One synthetic bench_moe report (schema-exact dict; ``swiglu_limit`` is ``inf``).

    ``backends``/``parallel_modes``/``comm_methods`` default to what ``--search full``
    would sweep on that GPU: capable backends, ``DEP, TEP`` + default hybrids, the
    forced comm methods the topology supports. Unsupported values are kept and produce
    pruned (skipped) rows. ``time_budget_tail`` marks the last N runnable candidates as
    ``time_budget_exceeded``. Deterministic in all arguments.
    """
    with _gc_paused():
        return _generate_report(model, hardware, quant, world_size, num_tokens, seed=seed,
                                cuda_graph=cuda_graph, parallel_modes=parallel_modes,
                                backends=backends, comm_methods=comm_methods, iters=iters,
                                with_raw_samples=with_raw_samples,
                                time_budget_tail=time_budget_tail)


def _generate_report(model: str, hardware: str, quant: str, world_size: int,
                     num_tokens: Sequence[int], *, seed: int, cuda_graph: Sequence[bool],
                     parallel_modes: Sequence[str] | None, backends: Sequence[str] | None,
                     comm_methods: Sequence[str] | None, iters: int, with_raw_samples: bool,
                     time_budget_tail: int) -> dict[str, Any]:
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
    modes = [m.upper() for m in parallel_modes] if parallel_modes is not None \
        else _default_modes(ws)
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
        u_fail = _uniform(np.array([c.key for c in runnable_all], dtype=np.uint64), 901,
                          1)[:, 0].tolist()
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
        workload = {"num_tokens": c.nt, "per_rank_num_tokens": prt,
                    "routing_control": _requested_routing(None)}
        requested = {"backend": c.backend, "parallel_mode": c.mode, "moe_ep_size": None,
                     "moe_tp_size": None, "enable_attention_dp": None,
                     "comm_method": c.comm, "cuda_graph": c.cg,
                     "use_low_precision_moe_combine": c.lpmc}
        if c.built and c.mapping_only:
            num_chunks = None
            actual = _null_actual()
            actual.update(moe_ep_size=ep, moe_tp_size=tp, enable_attention_dp=row_adp)
        elif c.built:
            num_chunks = 1 if (row_adp and c.comm_cls not in ("NONE", None)) else None
            actual = {"backend": c.backend, "comm_method": c.comm_cls,
                      "comm_fallback_reason": None,
                      "scheduler_kind": "FUSED_COMM" if c.backend in _FUSED else "EXTERNAL_COMM",
                      "moe_ep_size": ep, "moe_tp_size": tp, "enable_attention_dp": row_adp,
                      "num_chunks": num_chunks}
        else:
            num_chunks = None
            actual = _null_actual()
        instr: dict[str, Any] = {"level": "summary", "cuda_graph": c.cg,
                                 "cupti_available": False, "nsys_capture": False,
                                 "phase_timing_available": False,
                                 "kernel_breakdown_available": False}
        if not c.pruned and c.autotune is not None:
            instr["autotune_status"] = c.autotune
            instr["latency_source"] = "cuda_event_external" if c.cg else "cuda_event_eager"
            if c.autotune != "not_run":
                instr["input_seed"] = c.key >> 1
        if c.status == "success":
            lat = lat_blocks[j_ok]
            per_rank_raw = ({rank_names[r]: raw_lists[j_ok][r] for r in range(ws)}
                            if raw_lists is not None else {})
            j_ok += 1
            assert prt is not None and ep is not None and tp is not None  # success rows
            routing = _routing_block(prt, mdl, ep, tp, num_chunks)
        else:
            lat = _default_latency()
            per_rank_raw = {}
            routing = None
        results.append({
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
            "raw_data": {"forward_times_ms": {"per_rank": per_rank_raw},
                         "kernel_times_ms": {"moe_forward_kernels": [], "other_kernels": []}},
            "routing_control": routing,
        })

    base_mode = modes[0] if modes else "DEP"
    return {
        "benchmark": "bench_moe",
        "environment": _environment(hw, ws, seed, cgs[0] if cgs else True),
        "model": _model_block(model, quant),
        "search": _search_block(bks, modes, comms, cgs),
        "base_config": {"backend": bks[0] if bks else "TRTLLM", "parallel_mode": base_mode,
                        "moe_ep_size": None, "moe_tp_size": None, "enable_attention_dp": None,
                        "comm_method": "AUTO", "cuda_graph": cgs[0] if cgs else True,
                        "use_low_precision_moe_combine": lpmc},
        "results": results,
        "rankings": compute_rankings(results),
    }


# --------------------------------------------------------------------------------------
# JSON writing
# --------------------------------------------------------------------------------------

# orjson and Python's repr agree on every finite float except (a) single-digit negative
# exponents ("1.5e-7" vs "1.5e-07") and (b) magnitudes below 1e-4, which orjson writes in
# fixed notation ("0.00001") and Python in exponent notation ("1e-05"). Hits of these two
# literal patterns are few; each is confirmed by a line-anchored regex (a line holding one
# number token, as an array element or a "key": value) so string contents never match,
# then re-rendered with repr().
_HIT_RES = (re.compile(rb"e-\d(?!\d)"), re.compile(rb"0\.0000"))
_LINE_RE = re.compile(
    rb'( *(?:"(?:[^"\\\n]|\\.)*": )?)(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(,?)')


def _fix_floats(buf: bytes) -> bytes:
    starts = set()
    for rx in _HIT_RES:
        for m in rx.finditer(buf):
            starts.add(buf.rfind(b"\n", 0, m.start()) + 1)
    if not starts:
        return buf
    out = []
    pos = 0
    for ls in sorted(starts):
        le = buf.find(b"\n", ls)
        if le < 0:
            le = len(buf)
        line = _LINE_RE.fullmatch(buf, ls, le)
        if line is None:
            continue
        m = line
        tok = m.group(2)
        if b"." not in tok and b"e" not in tok and b"E" not in tok:
            continue  # an int
        fixed = repr(float(tok)).encode()
        if fixed != tok:
            out.append(buf[pos:m.start(2)])
            out.append(fixed)
            pos = m.end(2)
    out.append(buf[pos:])
    return b"".join(out)


_NONE_T = type(None)
_SCALARS = (str, int, bool, _NONE_T)


def _plain_finite(obj: Any) -> bool:
    """True when ``obj`` holds only dict/list/str/int/bool/None/finite-float values and
    str dict keys: then orjson writes what json.dumps would (modulo _fix_floats).

    Containers of numbers are checked with one C-level ``sum`` (a finite sum implies
    finite elements); other types make orjson raise, which also means "use json"."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if type(o) is dict:
            for key in o:
                if type(key) is not str:
                    return False
            vals: Any = o.values()
        else:
            vals = o
        if vals and type(next(iter(vals))) is float:
            try:
                total = sum(vals)
            except TypeError:
                pass
            else:
                if total - total == 0.0:
                    continue
        for v in vals:
            t = type(v)
            if t is float:
                if v - v != 0.0:
                    return False
            elif t is dict or t is list:
                stack.append(v)
            elif t not in _SCALARS:
                return False
    return True


def _fast_block(value: Any) -> bytes | None:
    """orjson rendering of ``value`` identical to json.dumps(indent=2), or None."""
    if orjson is None or not _plain_finite(value):
        return None
    try:
        buf = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except (TypeError, orjson.JSONEncodeError):
        return None
    if not buf.isascii() or b"\x7f" in buf:  # json escapes these, orjson does not
        return None
    return _fix_floats(buf)


def dump_report(report: dict[str, Any], compact: bool = False) -> bytes:
    """JSON bytes identical to ``json.dumps(report, indent=2, allow_nan=True)``.

    ``compact=True`` gives ``json.dumps(report, allow_nan=True)`` (one line, Python's
    default ``", "``/``": "`` separators). The indented form uses orjson for the big
    ``results``/``rankings`` arrays and falls back to :mod:`json` for anything orjson
    cannot reproduce byte for byte (NaN/Infinity, non-ASCII, non-str keys, ...).
    """
    with _gc_paused():
        return _dump_report(report, compact)


def _dump_report(report: Any, compact: bool) -> bytes:
    if compact:
        return json.dumps(report, allow_nan=True).encode()
    if not isinstance(report, dict) or not report:
        return json.dumps(report, indent=2, allow_nan=True).encode()
    parts = []
    for key, value in report.items():
        if not isinstance(key, str):
            return json.dumps(report, indent=2, allow_nan=True).encode()
        body = None
        if isinstance(value, list) and len(value) > 50:
            body = _fast_block(value)
        if body is None:
            body = json.dumps(value, indent=2, allow_nan=True).encode()
        parts.append(b"  " + json.dumps(key).encode() + b": " + body.replace(b"\n", b"\n  "))
    return b"{\n" + b",\n".join(parts) + b"\n}"


# --------------------------------------------------------------------------------------
# Demo dataset and big report
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DemoMeta:
    """Upload metadata of one demo report (field names match ``db.records.UploadMeta``)."""

    hardware: str
    trtllm_version: str = "v1.3.0rc26-synthetic"
    trtllm_commit: str | None = None
    run_date: str | None = None
    notes: str = "synthetic demo data generated by moedash"
    filename: str | None = None
    synthetic: bool = True

    def upload_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``db.records.UploadMeta``."""
        return dataclasses.asdict(self)


_POW2 = tuple(2**j for j in range(16))  # 1 .. 32768

# (model, hardware, quant, world sizes, num_tokens)
_DEMO_PLAN: tuple[tuple[str, str, str, tuple[int, ...], tuple[int, ...]], ...] = (
    ("deepseek_v4_pro", "GB300", "NVFP4", (4, 8, 16, 32), _POW2),
    ("kimi_k2", "GB300", "NVFP4", (8, 16, 32), _POW2[2:]),
    ("glm_5", "GB300", "NVFP4", (8, 16, 32), _POW2[2:]),
    ("qwen3_8", "GB300", "NVFP4", (16, 32), _POW2[4:]),
    ("kimi_k3", "GB300", "NVFP4", (16, 32), _POW2[4:]),
    ("deepseek_v4_pro", "GB300", "W4A8_MXFP4_MXFP8", (8, 16), _POW2[::2]),
    ("deepseek_v4_pro", "B300", "NVFP4", (4, 8, 16, 32), _POW2),
    ("kimi_k2", "B300", "NVFP4", (8, 16), _POW2[2:]),
    ("glm_5", "B300", "NVFP4", (16,), _POW2[2:]),
    ("qwen3_8", "B300", "NVFP4", (8, 16), _POW2[4:]),
    ("deepseek_v4_pro", "B300", "W4A8_MXFP4_MXFP8", (16,), _POW2[::2]),
    ("deepseek_v4_pro", "H200", "FP8_BLOCK_SCALES", (8, 16), _POW2),
    ("kimi_k2", "H200", "FP8_BLOCK_SCALES", (8, 16), _POW2[2:]),
    ("glm_5", "H200", "FP8_BLOCK_SCALES", (8,), _POW2[2:]),
)


def demo_reports() -> list[tuple[dict[str, Any], DemoMeta]]:
    """The default demo dataset: synthetic reports with their upload metadata.

    Deterministic. A couple of reports end with ``time_budget_exceeded`` rows.
    """
    out = []
    seed = 0
    for model, hardware, quant, wss, nts in _DEMO_PLAN:
        for ws in wss:
            seed += 1
            tail = 7 if seed % 9 == 4 else 0
            rep = generate_report(model, hardware, quant, ws, nts, seed=seed,
                                  time_budget_tail=tail)
            day = 1 + (seed * 7) % 28
            meta = DemoMeta(
                hardware=hardware,
                trtllm_commit=rep["environment"]["trtllm_commit"],
                run_date=f"2026-09-{day:02d}",
                filename=f"{model}_{quant.lower()}_{hardware.lower()}_ws{ws}.json",
            )
            out.append((rep, meta))
    return out


def big_report(n_candidates: int, seed: int = 0, with_raw_samples: bool = True) -> dict[str, Any]:
    """One large report (deepseek_v4_pro, GB300, NVFP4, world size 8) with about
    ``n_candidates`` rows: all backends/modes/comms/graph settings over as many
    ``num_tokens`` values (1, 2, ... not only powers of two) as needed.
    ``with_raw_samples=False`` drops raw per-iteration samples (as ``--analysis none``
    still keeps them, this is lighter than any real report: ~9 KB vs ~2 KB a row)."""
    probe = generate_report("deepseek_v4_pro", "GB300", "NVFP4", 8, [64], seed=seed,
                            with_raw_samples=False)
    per_nt = len(probe["results"])
    n_nt = max(1, round(n_candidates / per_nt))
    if n_nt <= 32768:
        # geometric-ish spread of distinct token counts over 1 .. 32768
        vals = np.unique(np.round(np.geomspace(1, 32768, num=n_nt * 3)).astype(np.int64))
        if len(vals) >= n_nt:
            pick = np.round(np.linspace(0, len(vals) - 1, n_nt)).astype(np.int64)
            nts = sorted(set(vals[pick].tolist()))
        else:
            nts = list(range(1, n_nt + 1))
        k = 1
        while len(nts) < n_nt:  # fill gaps with unused integers
            if k not in nts:
                nts.append(k)
            k += 1
        nts = sorted(nts)
    else:
        nts = list(range(1, n_nt + 1))
    return generate_report("deepseek_v4_pro", "GB300", "NVFP4", 8, nts, seed=seed,
                           with_raw_samples=with_raw_samples)
