"""MegaScale-Infer's performance model: Ta, Te, Tc, batch relations, pipeline constraints.

Units: times are milliseconds, batch sizes are tokens (one decode token per sequence),
bytes are bytes. Notation follows the paper: ``ba`` tokens per attention node per
micro-batch, ``be`` tokens per expert per micro-batch, ``m`` micro-batches, ``na``
attention nodes, ``tpa``/``tpe`` tensor-parallel GPUs per attention/expert node.

One generalisation: an expert node may hold ``experts_per_node`` (x) experts. The paper's
plan is x = 1 (E expert nodes); models with hundreds of experts need x > 1.

Expert time convention. ``Fit`` objects for experts describe *one GPU running one
expert-equivalent* (a whole expert's weights) with ``be`` tokens: ``k3*be + k4``. A node of
tpe GPUs holding x experts takes ``(x/tpe) * (k3*be + k4)``: weights and FLOPs per GPU both
scale with x/tpe. Attention ``Fit`` objects are node times for a given tpa and sequence
length: ``Ta = k1*ba + k2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.planner.catalog import GPUSpec, ModelSpec


@dataclass(frozen=True)
class Efficiency:
    """Fractions of datasheet peak a roofline estimate assumes, plus a fixed overhead.

    ``compute``: achieved fraction of dense BF16 TFLOPS in decode GEMMs.
    ``bandwidth``: achieved fraction of HBM bandwidth for weight and KV reads.
    ``layer_overhead_ms``: kernel-launch and sync cost per module per layer.
    """

    compute: float = 0.7
    bandwidth: float = 0.8
    layer_overhead_ms: float = 0.01


DEFAULT_EFFICIENCY = Efficiency()


@dataclass(frozen=True)
class Fit:
    """A linear time model ``t_ms = slope_ms * x + intercept_ms`` and where it came from.

    ``source``: "fit" (least squares on stored sweeps), "roofline" (datasheet estimate) or
    "user". ``r2``, ``n_points`` and the residual spread are NaN/0 unless source is "fit".
    """

    slope_ms: float  # ms per token (k1 or k3)
    intercept_ms: float  # ms (k2 or k4)
    source: str
    n_points: int = 0
    r2: float = math.nan
    residual_std_ms: float = math.nan
    residual_max_ms: float = math.nan
    note: str = ""

    def predict(self, x: float) -> float:
        """Time in ms for ``x`` tokens."""
        return self.slope_ms * x + self.intercept_ms


def user_fit(slope_ms: float, intercept_ms: float, note: str = "") -> Fit:
    """Coefficients the user measured or chose (e.g. profiled k1, k2)."""
    return Fit(slope_ms, intercept_ms, "user", note=note)


# --- attention -------------------------------------------------------------------------


def attention_time_roofline(
    model: ModelSpec,
    gpu: GPUSpec,
    tpa: int,
    seq_len: float,
    efficiency: Efficiency = DEFAULT_EFFICIENCY,
) -> Fit:
    """Roofline ``Ta = k1*ba + k2`` for one attention node of ``tpa`` GPUs, one MoE layer.

    k1: per token, the KV cache read (``seq_len`` tokens x KV bytes per token per layer,
    times kv_layers/L so leading dense layers are charged too) over bandwidth, plus the
    attention-side GEMM FLOPs over TFLOPS. k2: the attention-side weights of one layer
    (Pa / L, which spreads embeddings and dense layers over the MoE layers) over bandwidth,
    plus the fixed overhead. Both are split over ``tpa`` GPUs.
    """
    bw = gpu.bandwidth_gb_s * 1e9 * efficiency.bandwidth * tpa  # bytes/s
    flops = gpu.bf16_tflops * 1e12 * efficiency.compute * tpa
    kv_per_token = seq_len * model.kv_bytes_per_token_layer * model.kv_layers / model.num_layers
    k1 = 1e3 * (kv_per_token / bw + model.attention_flops_per_token_layer / flops)
    k2 = 1e3 * (model.attention_param_bytes / model.num_layers) / bw
    return Fit(
        k1,
        k2 + efficiency.layer_overhead_ms,
        "roofline",
        note=f"roofline on {gpu.name}, tpa={tpa}, s={seq_len:g}",
    )


# --- experts ---------------------------------------------------------------------------


def expert_time_roofline(
    model: ModelSpec, gpu: GPUSpec, efficiency: Efficiency = DEFAULT_EFFICIENCY
) -> Fit:
    """Roofline per expert-equivalent on one GPU: k3 = FLOPs/TFLOPS, k4 = weights/bandwidth.

    The sum (not the max) of the two terms keeps the model linear in ``be``; it is
    pessimistic near the ridge point.
    """
    k3 = 1e3 * model.expert_flops_per_token_layer / (gpu.bf16_tflops * 1e12 * efficiency.compute)
    k4 = 1e3 * model.expert_bytes_per_layer / (gpu.bandwidth_gb_s * 1e9 * efficiency.bandwidth)
    return Fit(k3, k4 + efficiency.layer_overhead_ms, "roofline", note=f"roofline on {gpu.name}")


def expert_points(
    candidates: pd.DataFrame,
    model: ModelSpec,
    hardware: str,
    *,
    quant: str | None = None,
    cuda_graph: bool | None = True,
    dispatch: str | None = "balanced",
    attention_dp: bool | None = None,
) -> pd.DataFrame:
    """The (be, t) points a bench_moe candidate frame gives for ``model`` on ``hardware``.

    Rows kept: status success, the same E/K/h/h' and hardware label, finite positive
    score_ms, and when the column exists and the filter is not None the same quant,
    cuda_graph (True = decode), dispatch pattern (skewed routing is not Te) and attention
    mode (``attention_dp=True`` keeps DEP-style rows, whose dispatch resembles M2N).

    Tokens per expert. ``num_tokens`` is the token count entering the MoE module: the
    global total under attention DP, and each rank's (identical, replicated) batch under
    attention TP; either way it is the number of distinct tokens routed. With balanced
    routing each expert sees ``be = num_tokens * top_k / num_experts``.

    Time per expert-equivalent. A rank holds ``E / moe_ep_size`` experts, each sliced to
    ``1 / moe_tp_size``, and score_ms is the slowest rank's module time, so one GPU's time
    for one whole expert is ``t = score_ms * moe_ep_size * moe_tp_size / E``. score_ms also
    contains the dispatch/combine communication inside the bench, which the paper keeps in
    Tc; the fit is therefore slightly pessimistic for Te.
    """
    df = candidates
    mask = (
        (df[C.STATUS] == "success")
        & (df[C.NUM_EXPERTS] == model.num_experts)
        & (df[C.TOP_K] == model.top_k)
        & (df[C.HIDDEN_SIZE] == model.hidden_size)
        & (df[C.INTERMEDIATE_SIZE] == model.intermediate_size)
        & (df[C.HARDWARE] == hardware)
    )
    if quant is not None and C.QUANT in df:
        mask &= df[C.QUANT] == quant
    if cuda_graph is not None and C.CUDA_GRAPH in df:
        mask &= df[C.CUDA_GRAPH] == cuda_graph
    if dispatch is not None and C.DISPATCH in df:
        mask &= df[C.DISPATCH] == dispatch
    if attention_dp is not None and C.ATTENTION_DP in df:
        mask &= df[C.ATTENTION_DP] == attention_dp
    sub = df.loc[mask.fillna(False).astype(bool)]
    score = pd.to_numeric(sub[C.SCORE_MS], errors="coerce").astype("float64")
    ep = pd.to_numeric(sub[C.MOE_EP_SIZE], errors="coerce").astype("float64")
    tp = pd.to_numeric(sub[C.MOE_TP_SIZE], errors="coerce").astype("float64")
    tokens = pd.to_numeric(sub[C.NUM_TOKENS], errors="coerce").astype("float64")
    out = pd.DataFrame(
        {
            "be": tokens * model.top_k / model.num_experts,
            "t_ms": score * ep * tp / model.num_experts,
        }
    )
    ok = np.isfinite(out["be"]) & np.isfinite(out["t_ms"]) & (out["t_ms"] > 0)
    return out.loc[ok].reset_index(drop=True)


def fit_expert_time(
    candidates: pd.DataFrame,
    model: ModelSpec,
    gpu: GPUSpec,
    *,
    hardware: str | None = None,
    quant: str | None = None,
    cuda_graph: bool | None = True,
    dispatch: str | None = "balanced",
    attention_dp: bool | None = None,
    min_points: int = 3,
    efficiency: Efficiency = DEFAULT_EFFICIENCY,
) -> Fit:
    """Least-squares ``Te = k3*be + k4`` per expert-equivalent from stored sweeps.

    Uses :func:`expert_points` (``hardware`` defaults to ``gpu.name``). Needs at least
    ``min_points`` points with two distinct ``be`` values; otherwise returns the roofline
    estimate (``source="roofline"``) with a note saying why. The fit reports R², the
    number of points and the standard deviation and max of the absolute residuals (ms).
    A negative intercept is kept (it is what the data says) but noted.
    """
    label = hardware or gpu.name
    pts = expert_points(
        candidates,
        model,
        label,
        quant=quant,
        cuda_graph=cuda_graph,
        dispatch=dispatch,
        attention_dp=attention_dp,
    )
    n = len(pts)
    if n < min_points or pts["be"].nunique() < 2:
        rf = expert_time_roofline(model, gpu, efficiency)
        why = f"{n} usable sweep point(s) for {model.name} on {label} (< {min_points})"
        return Fit(rf.slope_ms, rf.intercept_ms, "roofline", n_points=n, note=why + "; roofline")
    x = pts["be"].to_numpy(dtype=float)
    y = pts["t_ms"].to_numpy(dtype=float)
    design = np.column_stack([x, np.ones_like(x)])
    (k3, k4), *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - (k3 * x + k4)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    note = f"least squares on {n} points ({model.name}, {label})"
    if k4 < 0:
        note += "; negative intercept"
    return Fit(
        float(k3),
        float(k4),
        "fit",
        n_points=n,
        r2=r2,
        residual_std_ms=float(np.std(resid)),
        residual_max_ms=float(np.max(np.abs(resid))),
        note=note,
    )


def expert_node_time_ms(fit: Fit, be: float, experts_per_node: int, tpe: int) -> float:
    """Te for one expert node: ``(x / tpe) * (k3*be + k4)``."""
    return experts_per_node / tpe * fit.predict(be)


# --- batches, balance, constraints -----------------------------------------------------


def micro_batch_sizes(
    batch: float, m: int, na: int, num_experts: int, top_k: int
) -> tuple[float, float]:
    """``(ba, be)`` from ``ba*m*na = be*m*E/K = B`` (paper's batch relation)."""
    ba = batch / (m * na)
    be = batch * top_k / (num_experts * m)
    return ba, be


def balance_na(
    k1: float, k3: float, num_experts: int, top_k: int, experts_per_node: int = 1
) -> float:
    """Attention nodes that make ``k1*ba ≈ x*k3*be``: ``na = k1*E / (x*k3*K)``.

    ``k3`` is the node-level slope per expert (ms per token per expert). With x = 1 this is
    the paper's ``na ≈ k1*E/(k3*K)``; the constants k2, k4 are ignored as in the paper.
    """
    return k1 * num_experts / (experts_per_node * k3 * top_k)


def min_micro_batches(tc: float, tf: float) -> int:
    """Smallest integer m with ``m >= 2*(1 + Tc/Tf)`` (constraint 3)."""
    bound = 2.0 * (1.0 + tc / tf)
    return max(2, math.ceil(bound - 1e-9))


def pipeline_unit_ms(ta: float, te: float, tc: float, m: int) -> float:
    """Time each micro-batch-layer step costs in steady state.

    ``max(Ta, Te, Tc, (Ta+Te+2Tc)/m)``: the slower compute side (Tf) when constraints 2
    and 3 hold, else the network or the round trip of one micro-batch sets the pace.
    """
    return max(ta, te, tc, (ta + te + 2.0 * tc) / m)


def iteration_bounds_ms(
    ta: float, te: float, tc: float, m: int, layers: int
) -> tuple[float, float]:
    """Paper Eq. 4: ``(Ta+Te+2Tc) + m*Tf*(L-1) <= Titer <= m*Tf*L``."""
    tf = max(ta, te)
    return (ta + te + 2.0 * tc) + m * tf * (layers - 1), m * tf * layers


def total_latency_ms(ta: float, te: float, tc: float, m: int, layers: int) -> float:
    """Paper Eq. 5 with Tf replaced by :func:`pipeline_unit_ms` (equal when 2 and 3 hold)."""
    unit = pipeline_unit_ms(ta, te, tc, m)
    return (ta + te + 2.0 * tc) + unit * (m * layers - 1)


def time_between_tokens_ms(ta: float, te: float, tc: float, m: int, layers: int) -> float:
    """Per-micro-batch iteration time ``m*L*unit`` (the paper's upper bound when 2, 3 hold)."""
    return m * layers * pipeline_unit_ms(ta, te, tc, m)


# --- communication ---------------------------------------------------------------------


@dataclass(frozen=True)
class UtilCurve:
    """Achieved fraction of NIC bandwidth by per-connection message size.

    ``util(S) = peak * S / (S + half_bytes)``: fixed per-message costs (doorbell, completion
    polling, stream block/unblock) matter for small messages. Defaults put 256 KiB at 0.89
    (the paper's M2N library reaches ~180 of 200 Gb/s at 256 KB) and large messages at 0.95
    (it stays slightly below line rate even at 8 MB); 64 KiB gets 0.76, 4 KiB 0.19.
    """

    peak: float = 0.95
    half_bytes: float = 16 * 1024

    def util(self, message_bytes: float) -> float:
        if message_bytes <= 0:
            return self.peak
        return self.peak * message_bytes / (message_bytes + self.half_bytes)


DEFAULT_UTIL = UtilCurve()


def comm_time_ms(
    model: ModelSpec,
    attention_gpu: GPUSpec,
    expert_gpu: GPUSpec,
    *,
    ba: float,
    be: float,
    tpa: int,
    tpe: int,
    na: int,
    experts_per_node: int = 1,
    curve: UtilCurve = DEFAULT_UTIL,
) -> float:
    """One-way M2N (= N2M) time of one micro-batch, paper Eq. for Tc.

    Send side: each attention GPU sends ``ba*K*h*bytes/tpa`` spread over the E/x expert
    nodes. Receive side: each expert GPU receives ``x*be*h*bytes/tpe`` from na attention
    nodes. Tc is the slower side at ``NIC bandwidth * util(per-connection bytes)``. The
    paper writes Util of the total; we key the curve on the per-connection message, the
    size its M2N benchmarks report.
    """
    act = model.activation_bytes * model.hidden_size
    expert_nodes = model.num_experts / experts_per_node
    send = ba * model.top_k * act / tpa
    recv = experts_per_node * be * act / tpe
    t_send = send / (attention_gpu.nic_bytes_s * curve.util(send / expert_nodes))
    t_recv = recv / (expert_gpu.nic_bytes_s * curve.util(recv / na))
    return 1e3 * max(t_send, t_recv)


# --- memory ------------------------------------------------------------------------------


def attention_memory_bytes(model: ModelSpec, m: int, ba: float, seq_len: float) -> float:
    """KV cache of ``m*ba`` sequences of ``seq_len`` tokens plus attention weights (Eq. 8)."""
    kv = m * ba * seq_len * model.kv_bytes_per_token_layer * model.kv_layers
    return kv + model.attention_param_bytes


def expert_memory_bytes(model: ModelSpec, experts_per_node: int) -> float:
    """Weights one expert node holds."""
    return experts_per_node * model.expert_param_bytes


def max_attention_batch(
    model: ModelSpec, gpu: GPUSpec, tpa: int, m: int, seq_len: float, usable: float
) -> int:
    """Largest integer ``ba`` whose KV cache and weights fit ``usable * tpa * capacity``."""
    free = usable * tpa * gpu.memory_bytes - model.attention_param_bytes
    per_seq = m * seq_len * model.kv_bytes_per_token_layer * model.kv_layers
    if free <= 0 or per_seq <= 0:
        return 0
    return int(math.floor(free / per_seq * (1 - 1e-12)))


def largest_feasible(test: Callable[[int], bool], hi: int) -> int:
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
