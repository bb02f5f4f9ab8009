"""Performance model: batch relations, balance, constraints, memory, Tc, and the Te fit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
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
    fit_expert_time,
    iteration_bounds_ms,
    max_attention_batch,
    micro_batch_sizes,
    min_micro_batches,
    pipeline_unit_ms,
    time_between_tokens_ms,
    total_latency_ms,
)

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
    fit = attention_time_roofline(TOY, TOY_GPU, 2, s, EXACT)
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


# --- the Te fit on stored sweeps -------------------------------------------------------------

SHAPE = MODELS["deepseek_v4_pro"]  # E=384, K=6, h=7168, h'=3072
K3, K4 = 0.0015, 0.02  # ms per token per expert-equivalent, ms


def sweep_frame(noise: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """bench_moe-like rows whose per-expert-equivalent time is exactly k3*be + k4."""
    rng = np.random.default_rng(seed)
    rows = []
    for ep, tp in ((8, 1), (16, 1), (4, 2)):
        for tokens in (128, 512, 2048, 8192, 16384):
            be = tokens * SHAPE.top_k / SHAPE.num_experts
            per_gpu_experts = SHAPE.num_experts / (ep * tp)
            score = per_gpu_experts * (K3 * be + K4) * (1 + noise * rng.standard_normal())
            rows.append(
                {
                    C.MODEL: "deepseek_v4_pro",
                    C.NUM_EXPERTS: 384,
                    C.TOP_K: 6,
                    C.HIDDEN_SIZE: 7168,
                    C.INTERMEDIATE_SIZE: 3072,
                    C.QUANT: "NVFP4",
                    C.HARDWARE: "GB300",
                    C.WORLD_SIZE: ep * tp,
                    C.NUM_TOKENS: tokens,
                    C.MOE_EP_SIZE: ep,
                    C.MOE_TP_SIZE: tp,
                    C.ATTENTION_DP: True,
                    C.CUDA_GRAPH: True,
                    C.DISPATCH: "balanced",
                    C.STATUS: "success",
                    C.SCORE_MS: score,
                }
            )
    df = pd.DataFrame(rows)
    for col in C.INT_COLUMNS & set(df.columns):
        df[col] = df[col].astype("Int64")
    for col in C.BOOL_COLUMNS & set(df.columns):
        df[col] = df[col].astype("boolean")
    return df


def test_fit_recovers_known_linear_truth() -> None:
    fit = fit_expert_time(sweep_frame(), SHAPE, GPUS["GB300"])
    assert fit.source == "fit"
    assert fit.slope_ms == pytest.approx(K3, rel=1e-9)
    assert fit.intercept_ms == pytest.approx(K4, rel=1e-9)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.n_points == 15
    assert fit.residual_max_ms == pytest.approx(0.0, abs=1e-9)


def test_fit_with_noise_is_close_and_reports_spread() -> None:
    fit = fit_expert_time(sweep_frame(noise=0.02, seed=1), SHAPE, GPUS["GB300"])
    assert fit.slope_ms == pytest.approx(K3, rel=0.05)
    assert 0.9 < fit.r2 < 1.0
    assert fit.residual_std_ms > 0


def test_fit_ignores_rows_that_are_not_this_shape_gpu_decode_or_success() -> None:
    base = sweep_frame()
    junk = base.copy()
    junk[C.SCORE_MS] = 999.0
    variants = [
        junk.assign(**{C.HARDWARE: "B300"}),
        junk.assign(**{C.STATUS: "failed"}),
        junk.assign(**{C.CUDA_GRAPH: pd.array([False] * len(junk), dtype="boolean")}),
        junk.assign(**{C.DISPATCH: "recv_hotspot"}),
        junk.assign(**{C.TOP_K: pd.array([8] * len(junk), dtype="Int64")}),
    ]
    fit = fit_expert_time(pd.concat([base, *variants], ignore_index=True), SHAPE, GPUS["GB300"])
    assert fit.n_points == 15
    assert fit.slope_ms == pytest.approx(K3, rel=1e-9)


def test_fit_can_keep_only_one_attention_mode() -> None:
    base = sweep_frame()
    tp_rows = base.assign(**{C.ATTENTION_DP: pd.array([False] * len(base), dtype="boolean")})
    tp_rows[C.SCORE_MS] = tp_rows[C.SCORE_MS] * 3
    both = pd.concat([base, tp_rows], ignore_index=True)
    dp_only = fit_expert_time(both, SHAPE, GPUS["GB300"], attention_dp=True)
    pooled = fit_expert_time(both, SHAPE, GPUS["GB300"])
    assert dp_only.n_points == 15 and dp_only.slope_ms == pytest.approx(K3, rel=1e-9)
    assert pooled.n_points == 30 and pooled.slope_ms == pytest.approx(2 * K3, rel=1e-9)


def test_fit_falls_back_to_roofline_with_too_few_points() -> None:
    two = sweep_frame().iloc[:2]
    fit = fit_expert_time(two, SHAPE, GPUS["GB300"])
    roof = expert_time_roofline(SHAPE, GPUS["GB300"])
    assert fit.source == "roofline"
    assert (fit.slope_ms, fit.intercept_ms) == (roof.slope_ms, roof.intercept_ms)
    assert "2 usable" in fit.note and math.isnan(fit.r2)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_fit_does_not_depend_on_row_order_or_mutate_input(seed: int) -> None:
    df = sweep_frame(noise=0.05, seed=3)
    before = df.copy()
    shuffled = df.sample(frac=1.0, random_state=seed)
    a = fit_expert_time(df, SHAPE, GPUS["GB300"])
    b = fit_expert_time(shuffled, SHAPE, GPUS["GB300"])
    assert a.slope_ms == pytest.approx(b.slope_ms, rel=1e-9)
    assert a.intercept_ms == pytest.approx(b.intercept_ms, rel=1e-9, abs=1e-12)
    pd.testing.assert_frame_equal(df, before)
