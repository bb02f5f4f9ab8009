"""Serving load -> num_tokens: the reference's worked examples and the shared rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis import crossval_columns as cc
from analysis.concurrency import decode_tokens, graph_batch_sizes, prefill_tokens
from analysis.serving_map import default_graph_batch_sizes, map_point


@pytest.mark.parametrize(
    ("conc", "workers", "dp", "mtp", "b_max", "b_rank", "b_pad", "num_tokens"),
    [
        # shared/reference/serving_configs.md, H200 8k1k table (TEP = attention TP)
        (1, 7, False, 3, 1, 1, 1, 4),
        (16, 3, False, 2, 32, 6, 8, 24),
        (32, 5, False, 3, 32, 7, 8, 32),
        (64, 1, True, 2, 32, 8, 8, 192),
        (256, 1, True, 2, 32, 32, 32, 768),
        (256, 3, True, 0, 256, 11, 16, 128),
        (512, 1, True, 0, 512, 64, 64, 512),
    ],
)
def test_decode_matches_the_reference_table(
    conc: int,
    workers: int,
    dp: bool,
    mtp: int,
    b_max: int,
    b_rank: int,
    b_pad: int,
    num_tokens: int,
) -> None:
    got = decode_tokens(conc, 8, dp, mtp=mtp, workers=workers, max_batch_size=b_max)
    assert (got.batch_per_rank, got.batch_per_rank_padded, got.num_tokens) == (
        b_rank,
        b_pad,
        num_tokens,
    )
    assert got.cuda_graph is True and got.phase == "decode"
    assert got.formula.endswith(f"= {num_tokens}")


def test_the_issues_question_256_requests_on_8_b300() -> None:
    """DeepSeek-V4-Pro NVFP4 on 8 x B300, decode, 256 concurrent requests, attention DP:
    32 requests per rank (a CUDA-graph size), no MTP -> 256 tokens; MTP 3 -> 1024."""
    assert decode_tokens(256, 8, True).num_tokens == 256
    mtp = decode_tokens(256, 8, True, mtp=3)
    assert (mtp.tokens_per_rank, mtp.num_tokens) == (128, 1024)
    assert "32 x (1 + 3 MTP) = 128" in mtp.formula  # 32 per rank x 4 tokens
    assert "ceil(256 / 8) = 32" in mtp.formula and "128 x 8" in mtp.formula


def test_padding_is_global_under_attention_dp_and_per_rank_under_tp() -> None:
    # 100 requests over 8 DP ranks -> 13 per rank -> graph size 16 on every rank
    dp = decode_tokens(100, 8, True)
    assert (dp.batch_per_rank, dp.batch_per_rank_padded, dp.num_tokens) == (13, 16, 128)
    tp = decode_tokens(100, 8, False)  # every rank holds the 100-request batch
    assert (tp.batch_per_rank, tp.batch_per_rank_padded, tp.num_tokens) == (100, 104, 104)


def test_a_batch_no_graph_fits_runs_eager_and_says_so() -> None:
    got = decode_tokens(300, 1, False)  # default graphs go to 128
    assert got.cuda_graph is False and got.batch_per_rank_padded == 300
    assert "fit no CUDA graph" in got.notes[0]
    capped = decode_tokens(300, 1, False, max_batch_size=256)
    assert capped.batch_per_rank == 256 and capped.cuda_graph is True
    assert "exceed max_batch_size 256" in capped.notes[0]
    off = decode_tokens(10, 1, False, graph_sizes=())
    assert off.cuda_graph is False and off.num_tokens == 10
    with pytest.raises(ValueError):
        decode_tokens(0, 8, True)


def test_prefill_is_max_num_tokens_times_dp() -> None:
    dp = prefill_tokens(8, True, max_num_tokens=8192)
    assert (dp.tokens_per_rank, dp.num_tokens, dp.cuda_graph) == (8192, 65536, False)
    assert prefill_tokens(8, False, max_num_tokens=8192).num_tokens == 8192
    # the saturated forward is the smaller of max_num_tokens and max_batch_size x ISL
    both = prefill_tokens(4, True, max_num_tokens=16640, isl=8192, max_batch_size=2)
    assert both.tokens_per_rank == 16384 and both.num_tokens == 65536
    assert "min(max_num_tokens 16640, max_batch_size 2 x ISL 8192)" in both.formula
    with pytest.raises(ValueError, match="max_num_tokens"):
        prefill_tokens(8, True)


@given(st.integers(1, 4096), st.booleans())
def test_graph_sizes_are_trtllms_rule(max_batch: int, padding: bool) -> None:
    sizes = graph_batch_sizes(max_batch, padding)
    assert sizes == sorted(set(sizes)) and sizes[-1] == max_batch
    assert sizes == default_graph_batch_sizes(max_batch, padding)


def test_the_serving_map_uses_the_same_conversion() -> None:
    """A decode recipe mapped by analysis.serving_map gives decode_tokens' answer."""
    point = {
        cc.POINT_ID: "p",
        cc.FRAMEWORK: "dynamo-trt",
        cc.MODEL_PREFIX: "dsr1",
        cc.PRECISION: "fp8",
        cc.CONC: 100,
        cc.ISL: 1024,
        cc.OSL: 1024,
        "decode_workers": 2,
        "decode_tp": 8,
        "decode_ep": 8,
        "decode_dp_attn": True,
        "hardware": "H200",
    }
    recipe = {
        "backend": {
            "trtllm_config": {
                "decode": {
                    "tensor_parallel_size": 8,
                    "moe_expert_parallel_size": 8,
                    "enable_attention_dp": True,
                    "max_batch_size": 64,
                    "cuda_graph_config": {"enable_padding": True, "max_batch_size": 64},
                    "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 1},
                    "moe_config": {"backend": "CUTLASS"},
                }
            }
        }
    }
    decode = map_point(point, recipe)[1]
    want = decode_tokens(100, 8, True, mtp=1, workers=2, max_batch_size=64)
    assert decode["num_tokens"] == want.num_tokens == 8 * 8 * 2  # ceil(100/2/8)=7 -> 8
    assert decode[cc.BATCH_PER_RANK_PADDED] == want.batch_per_rank_padded == 8
