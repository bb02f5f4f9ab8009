"""Te fitted from stored sweeps the way the paper means Te (analysis.planner.te_fit)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.planner.catalog import GPUS, MODELS
from analysis.planner.fit_rule import implausible, implausible_attention
from analysis.planner.perf_model import expert_time_roofline
from analysis.planner.te_fit import MIN_R2, dispatch_combine_ms, fit_te

SHAPE = MODELS["deepseek_v4_pro"]  # E=384, K=6, h=7168, h'=3072
GPU = GPUS["GB300"]
K3, K4 = 0.0015, 0.02  # ms per token per expert-equivalent, ms
TOKENS = (256, 512, 2048, 8192, 16384)  # be 4 .. 256


def sweep_frame(
    noise: float = 0.0,
    seed: int = 0,
    layouts: tuple[tuple[int, int], ...] = ((8, 1), (16, 1)),
    backend: str = "TRTLLM",
    slower: float = 1.0,
    adp: bool = True,
) -> pd.DataFrame:
    """bench_moe-like rows: per-expert GEMM time exactly k3*be + k4 plus the dispatch and
    combine estimate the fit subtracts (attention DP)."""
    rng = np.random.default_rng(seed)
    rows = []
    for ep, tp in layouts:
        for tokens in TOKENS:
            be = tokens * SHAPE.top_k / SHAPE.num_experts
            gemm = SHAPE.num_experts / (ep * tp) * (K3 * be + K4)
            comm = dispatch_combine_ms(tokens, ep, SHAPE, GPU.intra_node_gb_s, 0.5) if adp else 0
            score = (gemm + comm) * slower * (1 + noise * rng.standard_normal())
            rows.append(
                {
                    C.NUM_EXPERTS: 384,
                    C.TOP_K: 6,
                    C.HIDDEN_SIZE: 7168,
                    C.INTERMEDIATE_SIZE: 3072,
                    C.QUANT: "NVFP4",
                    C.HARDWARE: "GB300",
                    C.NUM_TOKENS: tokens,
                    C.MOE_EP_SIZE: ep,
                    C.MOE_TP_SIZE: tp,
                    C.ATTENTION_DP: adp,
                    C.CUDA_GRAPH: True,
                    C.DISPATCH: "balanced",
                    C.BACKEND: backend,
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


def test_fit_recovers_the_gemm_time_without_dispatch_and_combine() -> None:
    te = fit_te(sweep_frame(), SHAPE, GPU)
    assert te.used and te.fit.source == "fit" and te.warning == ""
    assert te.fit.slope_ms == pytest.approx(K3, rel=1e-9)
    assert te.fit.intercept_ms == pytest.approx(K4, rel=1e-9)
    assert te.fit.r2 == pytest.approx(1.0)
    # one EP size per fit: 5 cells of EP 8 or EP 16, not the 10 pooled
    assert te.fit.n_points == 5 and te.group["ep_size"] in (8, 16)
    assert te.group == {**te.group, "quant": "NVFP4", "attention_dp": True, "backend": "TRTLLM"}
    assert (te.points["comm_ms"] > 0).all()
    assert te.fit.x_min == pytest.approx(256 * 6 / 384) and te.fit.x_max == pytest.approx(256)


def test_fit_keeps_tensorrt_llm_backends_and_the_measured_best_family() -> None:
    base = sweep_frame()
    vanilla = sweep_frame(backend="VANILLA", slower=0.3)  # a fast reference backend
    cutlass = sweep_frame(backend="CUTLASS", slower=1.5)  # slower TensorRT-LLM backend
    te = fit_te(pd.concat([cutlass, vanilla, base], ignore_index=True), SHAPE, GPU)
    assert te.group["backend"] == "TRTLLM"
    assert te.fit.slope_ms == pytest.approx(K3, rel=1e-9)
    forced = fit_te(pd.concat([cutlass, base]), SHAPE, GPU, backend="cutlass")
    assert forced.group["backend"] == "CUTLASS" and forced.fit.slope_ms > K3


def test_fit_keeps_the_fastest_row_per_cell() -> None:
    base = sweep_frame()
    slow_comm = base.assign(**{C.SCORE_MS: base[C.SCORE_MS] * 2})  # another comm method
    te = fit_te(pd.concat([slow_comm, base], ignore_index=True), SHAPE, GPU)
    assert te.fit.n_points == 5 and te.fit.slope_ms == pytest.approx(K3, rel=1e-9)


def test_fit_is_per_attention_mode_and_ep_size() -> None:
    dp = sweep_frame()
    tp = sweep_frame(adp=False, slower=3.0, layouts=((8, 1), (16, 1), (32, 1)))
    both = pd.concat([dp, tp], ignore_index=True)
    assert fit_te(both, SHAPE, GPU, attention_dp=True).fit.slope_ms == pytest.approx(K3)
    only16 = fit_te(both, SHAPE, GPU, attention_dp=True, ep_size=16)
    assert only16.group["ep_size"] == 16 and only16.fit.n_points == 5
    tp_fit = fit_te(both, SHAPE, GPU, attention_dp=False)
    assert tp_fit.points["comm_ms"].eq(0).all() and tp_fit.fit.slope_ms == pytest.approx(3 * K3)


def test_fit_ignores_rows_that_are_not_this_shape_gpu_decode_or_success() -> None:
    base = sweep_frame()
    junk = base.copy()
    junk[C.SCORE_MS] = 0.001
    variants = [
        junk.assign(**{C.HARDWARE: "B300"}),
        junk.assign(**{C.STATUS: "failed"}),
        junk.assign(**{C.CUDA_GRAPH: pd.array([False] * len(junk), dtype="boolean")}),
        junk.assign(**{C.DISPATCH: "recv_hotspot"}),
        junk.assign(**{C.TOP_K: pd.array([8] * len(junk), dtype="Int64")}),
    ]
    te = fit_te(pd.concat([base, *variants], ignore_index=True), SHAPE, GPU)
    assert te.fit.n_points == 5 and te.fit.slope_ms == pytest.approx(K3, rel=1e-9)


def test_fit_over_the_plans_batch_range_only() -> None:
    te = fit_te(sweep_frame(), SHAPE, GPU, be_max=40)
    assert te.fit.n_points == 3 and te.fit.x_max <= 40


def test_low_r2_fit_is_refused_unless_forced() -> None:
    noisy = sweep_frame(layouts=((16, 1),))
    # a zig-zag in tokens: time rises overall but is far from a line
    noisy[C.SCORE_MS] = noisy[C.SCORE_MS] * [1.0, 4.0, 1.0, 3.0, 1.2]
    te = fit_te(noisy, SHAPE, GPU)
    assert te.candidate is not None and te.candidate.r2 < MIN_R2
    assert te.candidate.slope_ms > 0 and te.candidate.intercept_ms > 0
    assert not te.used and te.fit.source == "roofline" and "R²" in te.warning
    forced = fit_te(noisy, SHAPE, GPU, force=True)
    assert forced.used and forced.fit is forced.candidate and forced.warning.startswith("forced")


def test_non_positive_intercept_is_refused() -> None:
    df = sweep_frame()
    be = df[C.NUM_TOKENS].astype(float) * 6 / 384
    # per expert-equivalent time K3*be - 0.05: a negative intercept
    df[C.SCORE_MS] = (
        384 / df[C.MOE_EP_SIZE].astype(float) * (K3 * be - 0.01)
        + df[C.SCORE_MS] * 0
        + [
            dispatch_combine_ms(n, ep, SHAPE, GPU.intra_node_gb_s, 0.5)
            for n, ep in zip(df[C.NUM_TOKENS], df[C.MOE_EP_SIZE], strict=True)
        ]
    )
    te = fit_te(df[df[C.NUM_TOKENS] >= 2048], SHAPE, GPU, force=True)
    assert not te.used and "intercept" in te.warning and te.fit.intercept_ms > 0


def test_fit_falls_back_to_roofline_with_too_few_points() -> None:
    te = fit_te(sweep_frame().iloc[:2], SHAPE, GPU)
    roof = expert_time_roofline(SHAPE, GPU)
    assert te.fit.source == "roofline" and not te.used
    assert (te.fit.slope_ms, te.fit.intercept_ms) == (roof.slope_ms, roof.intercept_ms)
    assert "2 usable" in te.fit.note and math.isnan(te.fit.r2)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_fit_does_not_depend_on_row_order_or_mutate_input(seed: int) -> None:
    df = sweep_frame(noise=0.05, seed=3)
    before = df.copy()
    a = fit_te(df, SHAPE, GPU, force=True, min_r2=0).fit
    b = fit_te(df.sample(frac=1.0, random_state=seed), SHAPE, GPU, force=True, min_r2=0).fit
    assert a.slope_ms == pytest.approx(b.slope_ms, rel=1e-9)
    assert a.intercept_ms == pytest.approx(b.intercept_ms, rel=1e-9, abs=1e-12)
    pd.testing.assert_frame_equal(df, before)


# ------------------------------------------------------------------ the data rule (issue 27)
def test_rule_reads_attention_dp_moe_tp_1_and_busy_experts_only() -> None:
    """Attention-TP rows (more token counts, 3x slower), MoE-TP-2 rows and points below
    4 tokens per expert are left out by default, however many there are."""
    dp = sweep_frame()
    tp_mode = sweep_frame(adp=False, slower=3.0, layouts=((8, 1), (16, 1), (32, 1)))
    sharded = sweep_frame(layouts=((8, 2),), slower=5.0)
    tiny = sweep_frame(layouts=((8, 1),)).assign(**{C.NUM_TOKENS: 64})  # be = 1
    tiny[C.SCORE_MS] = 1e-6
    te = fit_te(pd.concat([tp_mode, sharded, tiny, dp], ignore_index=True), SHAPE, GPU)
    assert te.used and te.fit.slope_ms == pytest.approx(K3, rel=1e-9)
    assert te.group["attention_dp"] is True and te.group["moe_tp_size"] == 1
    assert te.fit.x_min >= 4
    assert te.rule is not None and te.rule.attention_dp is True and te.rule.quant == "NVFP4"
    text = te.rule.describe()
    for part in ("decode", "attention DP", "MoE TP 1", "NVFP4", ">= 4", "2x beyond"):
        assert part in text


def test_rule_quant_defaults_to_the_models_expert_format() -> None:
    other = sweep_frame().assign(**{C.QUANT: "FP8"})
    te = fit_te(other, SHAPE, GPU)  # deepseek_v4_pro's experts are NVFP4 in the catalogue
    assert not te.used and "0 usable" in te.warning
    assert fit_te(other, SHAPE, GPU, quant="FP8").used


@pytest.mark.parametrize(
    ("k3", "k4", "why"),
    [
        (2e-6, K4, "TFLOPS per GPU"),  # 66 PFLOPS > 8 x 2.5 PFLOPS
        (K3, 1e-4, "GB/s"),  # one expert's 37 MB in 0.1 µs
    ],
)
def test_physically_impossible_fit_is_refused_even_when_forced(
    k3: float, k4: float, why: str
) -> None:
    df = sweep_frame()
    be = df[C.NUM_TOKENS].astype(float) * 6 / 384
    ep = df[C.MOE_EP_SIZE].astype(float)
    comm = [
        dispatch_combine_ms(n, int(e), SHAPE, GPU.intra_node_gb_s, 0.5)
        for n, e in zip(df[C.NUM_TOKENS], df[C.MOE_EP_SIZE], strict=True)
    ]
    df[C.SCORE_MS] = 384 / ep * (k3 * be + k4) + comm
    te = fit_te(df, SHAPE, GPU, force=True)
    assert te.candidate is not None and te.candidate.r2 == pytest.approx(1.0)
    assert not te.used and te.fit.source == "roofline" and why in te.warning


def test_implausible_names_the_bound() -> None:
    assert implausible(K3, K4, SHAPE, GPU) == []
    (flops,) = implausible(1e-300, K4, SHAPE, GPU)  # issue 27: Te ≈ 0 was accepted
    assert "20,000" in flops and "GB300 dense BF16" in flops
    (bw,) = implausible(K3, 1e-4, SHAPE, GPU)
    assert "8,000 GB/s" in bw
    assert len(implausible(0.0, -1.0, SHAPE, GPU)) == 2


def test_implausible_attention_needs_the_kv_and_weight_reads() -> None:
    """One GB300, s = 650: a sequence's MLA latent over 61 KV layers is ~0.77 MB per MoE
    layer (~0.09 µs at 8 TB/s); the attention weights ~0.29 GB per layer (~0.03 ms)."""
    assert implausible_attention(1e-3, 0.1, SHAPE, GPU, 1, 650) == []
    slope, icpt = implausible_attention(1e-6, 1e-4, SHAPE, GPU, 1, 650)
    assert "KV read" in slope and "attention weights" in icpt
    # four GPUs read four times faster: the same law becomes possible
    assert implausible_attention(3e-5, 0.01, SHAPE, GPU, 1, 650)
    assert implausible_attention(3e-5, 0.01, SHAPE, GPU, 4, 650) == []
