"""Performance model: batch relations, balance, constraints, memory, Tc, and the Te fit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.planner.catalog import GPUS, MODELS, GPUSpec, ModelSpec
from analysis.planner.perf_model import (
    Efficiency,
    UtilCurve,
    attention_memory_bytes,
    attention_time_roofline,
    balance_na,
    comm_time_ms,
    expert_node_time_ms,
    expert_time_roofline,
    iteration_bounds_ms,
    max_attention_batch,
    micro_batch_sizes,
    min_micro_batches,
    pipeline_unit_ms,
    time_between_tokens_ms,
    total_latency_ms,
)
from analysis.planner.tp_cost import NO_TP_COST, TPCost, allreduce_ms, shard_slowdown

EXACT = Efficiency(compute=1.0, bandwidth=1.0, layer_overhead_ms=0.0)
TOY = ModelSpec("toy", 8, 2, 1024, 2048, 4, 4.0, 2e9, 1e9)
TOY_GPU = GPUSpec("toy", 10, 1000, 100, 1.0, 100, 80, 100)


# --- batch relations and balance -------------------------------------------------------


@given(
    ba=st.integers(1, 512),
    m=st.integers(1, 8),
    na=st.integers(1, 64),
    e=st.sampled_from([8, 16, 32, 256]),
    k=st.integers(1, 8),
)
def test_batch_relation_ba_m_na_equals_be_m_e_over_k(
    ba: int, m: int, na: int, e: int, k: int
) -> None:
    batch = ba * m * na
    ba2, be = micro_batch_sizes(batch, m, na, e, k)
    assert ba2 == pytest.approx(ba)
    assert be * m * e / k == pytest.approx(batch)
    assert ba2 * m * na == pytest.approx(be * m * e / k)


def test_balance_na_is_k1_e_over_k3_k() -> None:
    assert balance_na(2.0, 1.0, 8, 2) == 8.0
    assert balance_na(2.0, 1.0, 8, 2, experts_per_node=4) == 2.0


def test_balanced_na_equalises_ta_and_te_without_constants() -> None:
    k1, k3, e, k = 0.03, 0.01, 16, 4
    na = balance_na(k1, k3, e, k)
    ba = 60.0
    _, be = micro_batch_sizes(ba * 3 * na, 3, round(na), e, k)
    assert k1 * ba == pytest.approx(k3 * be)


# --- constraint 3 and latency -----------------------------------------------------------


@pytest.mark.parametrize(
    ("tc", "expected"),
    [(0.0, 2), (0.1, 3), (0.49, 3), (0.5, 3), (0.51, 4), (0.9, 4), (1.0, 4), (1.2, 5)],
)
def test_min_micro_batches_boundaries(tc: float, expected: int) -> None:
    # Paper: Tc < Tf/2 needs at least 3; Tf/2 < Tc < Tf needs 4; Tc = Tf/2 gives exactly 3.
    assert min_micro_batches(tc, 1.0) == expected


def test_iteration_bounds_and_total_latency_known_answer() -> None:
    ta, te, tc, m, layers = 1.0, 2.0, 0.5, 3, 4
    lower, upper = iteration_bounds_ms(ta, te, tc, m, layers)
    assert lower == (1 + 2 + 1) + 3 * 2 * 3  # 22
    assert upper == 3 * 2 * 4  # 24
    assert total_latency_ms(ta, te, tc, m, layers) == 4 + 2 * (3 * 4 - 1)  # 26
    assert time_between_tokens_ms(ta, te, tc, m, layers) == upper


def test_pipeline_unit_grows_when_communication_or_depth_constraints_fail() -> None:
    assert pipeline_unit_ms(1.0, 1.0, 0.3, 3) == 1.0  # all constraints met -> Tf
    assert pipeline_unit_ms(1.0, 1.0, 2.0, 3) == 2.0  # Tc > Tf: the link sets the pace
    assert pipeline_unit_ms(1.0, 1.0, 0.9, 2) == pytest.approx(1.9)  # m < 2(1+Tc/Tf)


# --- memory -----------------------------------------------------------------------------


def test_attention_memory_matches_paper_equation_8() -> None:
    m, ba, s = 3, 10, 500.0
    params = TOY.attention_param_bytes / 2
    paper = 4 * m * ba * s * TOY.hidden_size * TOY.num_layers / TOY.gqa_groups + 2 * params
    assert attention_memory_bytes(TOY, m, ba, s) == pytest.approx(paper)


def test_max_attention_batch_is_the_memory_boundary() -> None:
    m, s, usable = 2, 1000.0, 0.9
    ba = max_attention_batch(TOY, TOY_GPU, 2, m, s, usable)
    cap = usable * 2 * TOY_GPU.memory_bytes
    assert ba > 0
    assert attention_memory_bytes(TOY, m, ba, s) < cap
    assert attention_memory_bytes(TOY, m, ba + 1, s) >= cap


def test_max_attention_batch_is_zero_when_weights_do_not_fit() -> None:
    big = ModelSpec("big", 8, 2, 1024, 2048, 4, 4.0, 20e9, 1e9)
    assert max_attention_batch(big, TOY_GPU, 1, 2, 100.0, 1.0) == 0
    assert max_attention_batch(big, TOY_GPU, 4, 2, 100.0, 1.0) > 0


# --- communication ------------------------------------------------------------------------


def test_util_curve_anchor_and_shape() -> None:
    curve = UtilCurve()
    assert curve.util(256 * 1024) == pytest.approx(0.894, abs=0.005)
    sizes = [1024 * 2**i for i in range(14)]
    utils = [curve.util(x) for x in sizes]
    assert utils == sorted(utils)
    assert utils[0] < 0.1 and utils[-1] < curve.peak


def test_comm_time_known_answer() -> None:
    curve = UtilCurve(peak=1.0, half_bytes=0.0)  # full line rate: time = bytes / NIC
    gpu = TOY_GPU  # 80 Gb/s = 1e10 B/s
    ba, na, tpa, tpe = 100, 4, 2, 1
    be = ba * na * TOY.top_k / TOY.num_experts  # 100
    tc = comm_time_ms(TOY, gpu, gpu, ba=ba, be=be, tpa=tpa, tpe=tpe, na=na, curve=curve)
    send = ba * 2 * 1024 * 2 / tpa  # 204800 B
    recv = be * 1024 * 2 / tpe  # 204800 B
    assert tc == pytest.approx(1e3 * max(send, recv) / 1e10)
    slow_expert = GPUSpec("slow", 10, 1000, 100, 1.0, 100, 8, 100)
    tc2 = comm_time_ms(TOY, gpu, slow_expert, ba=ba, be=be, tpa=tpa, tpe=tpe, na=na, curve=curve)
    assert tc2 == pytest.approx(1e3 * recv / 1e9)  # receive side is now the bottleneck


# --- roofline -----------------------------------------------------------------------------


def test_attention_roofline_known_answer() -> None:
    s = 1000.0
    fit = attention_time_roofline(TOY, TOY_GPU, 2, s, EXACT, NO_TP_COST)
    bw, flops = 2 * 1000e9, 2 * 100e12
    kv = s * 4 * 1024 / 4.0
    attn_flops = 2 * (2e9 / 2) / 4
    assert fit.slope_ms == pytest.approx(1e3 * (kv / bw + attn_flops / flops))
    assert fit.intercept_ms == pytest.approx(1e3 * (2e9 / 4) / bw)
    assert fit.source == "roofline"


def test_expert_roofline_known_answer_and_node_scaling() -> None:
    fit = expert_time_roofline(TOY, TOY_GPU, EXACT)
    assert fit.slope_ms == pytest.approx(1e3 * 6 * 1024 * 2048 / 100e12)
    assert fit.intercept_ms == pytest.approx(1e3 * (1e9 / 4) / 1000e9)
    assert expert_node_time_ms(fit, 10, 4, 2) == pytest.approx(2 * fit.predict(10))


def test_launch_overhead_is_charged_once_per_node_not_per_expert() -> None:
    fit = expert_time_roofline(TOY, TOY_GPU)  # default efficiency: 0.01 ms overhead
    assert fit.overhead_ms == pytest.approx(0.01)
    one = expert_node_time_ms(fit, 10, 1, 1)
    four = expert_node_time_ms(fit, 10, 4, 1)
    assert four - 0.01 == pytest.approx(4 * (one - 0.01))


def test_tensor_parallelism_is_not_free() -> None:
    gpu = GPUS["L40S"]  # PCIe: 32 GB/s per GPU
    model = MODELS["mixtral_8x22b"]
    fit = expert_time_roofline(model, gpu)
    be = 64.0
    tp1 = expert_node_time_ms(fit, be, 1, 1, model=model, gpu=gpu)
    tp8 = expert_node_time_ms(fit, be, 1, 8, model=model, gpu=gpu)
    # faster per node, but well short of 8x: all-reduce over PCIe and narrow shards
    assert tp1 / 8 < tp8 < tp1
    nvl = expert_node_time_ms(fit, be, 1, 8, model=model, gpu=GPUS["H20"])
    assert nvl < expert_node_time_ms(expert_time_roofline(model, GPUS["H20"]), be, 1, 1)
    assert allreduce_ms(1e6, 1, 32.0) == 0.0
    # ring: 2*(tp-1)/tp of the buffer over the link, plus 2*(tp-1) steps
    assert allreduce_ms(1e6, 4, 100.0, TPCost(1.0, 0.0, 256)) == pytest.approx(
        1e3 * 1.5 * 1e6 / 100e9
    )
    assert shard_slowdown(2048, 1) == 1.0 and shard_slowdown(2048, 8) > shard_slowdown(2048, 2)
    a1 = attention_time_roofline(model, gpu, 1, 650)
    a8 = attention_time_roofline(model, gpu, 8, 650)
    assert a8.slope_ms > a1.slope_ms / 8 and a8.intercept_ms > a1.intercept_ms / 8
