"""Catalogue: prices derived from the paper's per-dollar figures, model facts, editability."""

from __future__ import annotations

import dataclasses

import pytest

from analysis.planner.catalog import (
    GPUS,
    MODELS,
    PAPER_GPUS,
    bandwidth_per_cost,
    capacity_per_cost,
    tflops_per_cost,
)


@pytest.mark.parametrize(
    ("name", "gb_s_per_cost", "tflops_per_cost_", "gb_per_cost"),
    [
        ("H20", 2214.1, 80.0, 51.9),
        ("L40S", 800.0, 335.2, None),
        ("A800", 902.2, 138.1, None),
        ("H800", None, 187.3, None),
    ],
)
def test_paper_gpu_prices_reproduce_quoted_per_cost_figures(
    name: str, gb_s_per_cost: float | None, tflops_per_cost_: float, gb_per_cost: float | None
) -> None:
    gpu = GPUS[name]
    assert tflops_per_cost(gpu) == pytest.approx(tflops_per_cost_, rel=2e-3)
    if gb_s_per_cost is not None:
        assert bandwidth_per_cost(gpu) == pytest.approx(gb_s_per_cost, rel=2e-3)
    if gb_per_cost is not None:
        assert capacity_per_cost(gpu) == pytest.approx(gb_per_cost, rel=2e-3)


def test_l20_is_the_price_unit_and_paper_prices_are_the_derived_ones() -> None:
    prices = {n: GPUS[n].price for n in PAPER_GPUS}
    assert prices == {"H20": 1.85, "L40S": 1.08, "A800": 2.26, "H800": 5.28, "L20": 1.00}


def test_paper_ranking_h20_for_attention_l40s_for_experts() -> None:
    paper = [GPUS[n] for n in PAPER_GPUS]
    assert max(paper, key=bandwidth_per_cost).name == "H20"
    assert max(paper, key=capacity_per_cost).name == "H20"
    assert max(paper, key=tflops_per_cost).name == "L40S"
    assert min(paper, key=tflops_per_cost).name == "H20"


def test_paper_energy_figures_of_h20_and_l40s() -> None:
    h20, l40s = GPUS["H20"], GPUS["L40S"]
    assert h20.bandwidth_gb_s / h20.power_w == pytest.approx(8.2, abs=0.05)
    assert l40s.bf16_tflops / l40s.power_w == pytest.approx(1.03, abs=0.005)


def test_non_paper_gpus_say_their_price_is_an_estimate() -> None:
    for name in ("H100", "H200", "B200", "B300", "GB300"):
        assert "ESTIMATE" in GPUS[name].source


@pytest.mark.parametrize(
    ("name", "total_params"),
    [("mixtral_8x22b", 141e9), ("dbrx", 132e9), ("scaled_moe", 317e9)],
)
def test_paper_models_add_up_to_the_quoted_parameter_counts(name: str, total_params: float) -> None:
    m = MODELS[name]
    params = (m.attention_param_bytes + m.num_experts * m.expert_param_bytes) / 2  # BF16
    assert params == pytest.approx(total_params, rel=0.01)


@pytest.mark.parametrize(
    ("name", "e", "k", "h", "hff", "layers"),
    [
        ("mixtral_8x22b", 8, 2, 6144, 16384, 56),
        ("dbrx", 16, 4, 6144, 10752, 40),
        ("scaled_moe", 32, 4, 8192, 8192, 48),
        ("deepseek_v4_pro", 384, 6, 7168, 3072, None),
        ("glm_5", 256, 8, 6144, 2048, None),
        ("kimi_k2", 384, 8, 7168, 2048, 60),
        ("kimi_k3", 896, 16, 3584, 3072, None),
        ("qwen3_8", 512, 10, 8192, 2048, None),
        ("deepseek_r1", 256, 8, 7168, 2048, 58),
    ],
)
def test_model_shapes(name: str, e: int, k: int, h: int, hff: int, layers: int | None) -> None:
    m = MODELS[name]
    assert (m.num_experts, m.top_k, m.hidden_size, m.intermediate_size) == (e, k, h, hff)
    if layers is not None:
        assert m.num_layers == layers


def test_kv_bytes_follow_the_paper_formula_and_mla_latent() -> None:
    assert MODELS["mixtral_8x22b"].kv_bytes_per_token_layer == 4 * 6144 / 6  # 8 KV heads x 128
    assert MODELS["deepseek_r1"].kv_bytes_per_token_layer == pytest.approx(576 * 2)
    assert MODELS["deepseek_r1"].kv_layers == 61


def test_estimated_models_say_so() -> None:
    for name in ("deepseek_v4_pro", "glm_5", "kimi_k3", "qwen3_8", "scaled_moe"):
        assert "ESTIMATE" in MODELS[name].source


def test_specs_are_editable_with_replace_and_otherwise_frozen() -> None:
    cheap = dataclasses.replace(GPUS["H20"], price=0.5)
    assert cheap.price == 0.5 and GPUS["H20"].price == 1.85
    with pytest.raises(dataclasses.FrozenInstanceError):
        GPUS["H20"].price = 0.5  # type: ignore[misc]
    longer = dataclasses.replace(MODELS["dbrx"], gqa_groups=3.0)
    assert longer.kv_bytes_per_token_layer == 2 * MODELS["dbrx"].kv_bytes_per_token_layer
