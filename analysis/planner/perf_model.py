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

from analysis.planner.catalog import GPUSpec, ModelSpec
from analysis.planner.tp_cost import (
    DEFAULT_TP_COST,
    TPCost,
    allreduce_ms,
    allreduce_slope_ms,
    shard_slowdown,
)


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
    ``overhead_ms`` is a fixed cost charged once per node and layer (kernel launches), not
    scaled by experts per node or TP; roofline expert fits carry the launch overhead here
    (issue 16: it used to be charged once per expert on a node).
    """

    slope_ms: float  # ms per token (k1 or k3)
    intercept_ms: float  # ms (k2 or k4)
    source: str
    n_points: int = 0
    r2: float = math.nan
    residual_std_ms: float = math.nan
    residual_max_ms: float = math.nan
    note: str = ""
    overhead_ms: float = 0.0
    x_min: float = math.nan  # token range of the fitted points (NaN unless source "fit")
    x_max: float = math.nan

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
    tp_cost: TPCost = DEFAULT_TP_COST,
) -> Fit:
    """Roofline ``Ta = k1*ba + k2`` for one attention node of ``tpa`` GPUs, one MoE layer.

    k1: per token, the KV cache read (``seq_len`` tokens x KV bytes per token per layer,
    times kv_layers/L so leading dense layers are charged too) over bandwidth, plus the
    attention-side GEMM FLOPs over TFLOPS. k2: the attention-side weights of one layer
    (Pa / L, which spreads embeddings and dense layers over the MoE layers) over bandwidth,
    plus the fixed overhead. Both are split over ``tpa`` GPUs. TP is not free
    (:mod:`analysis.planner.tp_cost`): the GEMM and weight terms run slower by the shard
    slowdown of the ``h``-wide projections split ``tpa`` ways, and the output all-reduce
    of ``h`` activations per token over the intra-node link adds to k1 (bytes) and k2
    (ring-step latency). The KV read splits by heads and is not slowed.
    """
    bw = gpu.bandwidth_gb_s * 1e9 * efficiency.bandwidth * tpa  # bytes/s
    flops = gpu.bf16_tflops * 1e12 * efficiency.compute * tpa
    slow = shard_slowdown(model.hidden_size, tpa, tp_cost)
    kv_per_token = seq_len * model.kv_bytes_per_token_layer * model.kv_layers / model.num_layers
    ar_k1, ar_k2 = allreduce_slope_ms(
        model.hidden_size * model.activation_bytes, tpa, gpu.intra_node_gb_s, tp_cost
    )
    k1 = 1e3 * (kv_per_token / bw + slow * model.attention_flops_per_token_layer / flops) + ar_k1
    k2 = 1e3 * slow * (model.attention_param_bytes / model.num_layers) / bw + ar_k2
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
    return Fit(
        k3,
        k4,
        "roofline",
        note=f"roofline on {gpu.name}",
        overhead_ms=efficiency.layer_overhead_ms,
    )


def expert_node_time_ms(
    fit: Fit,
    be: float,
    experts_per_node: int,
    tpe: int,
    *,
    model: ModelSpec | None = None,
    gpu: GPUSpec | None = None,
    tp_cost: TPCost = DEFAULT_TP_COST,
) -> float:
    """Te for one expert node of ``tpe`` GPUs holding x experts, one layer (ms).

    ``(x/tpe) * (k3*be + k4) * shard_slowdown(h', tpe) + overhead + all-reduce`` where the
    overhead (``fit.overhead_ms``) is charged once per node, and the all-reduce of the
    node's ``x*be*h`` output activations runs over the GPU's intra-node link. Without
    ``model`` and ``gpu`` the TP terms are left out (the paper's bare formula).
    """
    base = experts_per_node / tpe * fit.predict(be) + fit.overhead_ms
    if model is None or gpu is None or tpe <= 1:
        return base
    slow = shard_slowdown(model.intermediate_size, tpe, tp_cost)
    nbytes = experts_per_node * be * model.hidden_size * model.activation_bytes
    ar = allreduce_ms(nbytes, tpe, gpu.intra_node_gb_s, tp_cost)
    return experts_per_node / tpe * fit.predict(be) * slow + fit.overhead_ms + ar


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
