"""analysis.serving_map on the mini data dir, every number derived by hand below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.serving_map import (
    bench_model,
    bench_quant,
    default_graph_batch_sizes,
    map_point,
    map_workloads,
    parallel_mode,
    spec_tokens,
)
from ingest.serving_configs import import_directory, points_frame, recipe_configs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "serving"


@pytest.fixture(scope="module")
def workloads() -> pd.DataFrame:
    r = import_directory(FIXTURE)
    return map_workloads(points_frame(r), recipe_configs(r))


def _row(w: pd.DataFrame, entry: str, conc: int, phase: str) -> dict[str, Any]:
    sel = w[(w[cc.ENTRY] == entry) & (w[cc.CONC] == conc) & (w[cc.PHASE] == phase)]
    assert len(sel) == 1
    return sel.iloc[0].to_dict()


def test_shape_of_frame(workloads: pd.DataFrame) -> None:
    assert tuple(workloads.columns) == cc.WORKLOAD_COLUMNS
    assert len(workloads) == 32  # 16 points x (prefill, decode)
    assert workloads[cc.WORKLOAD_ID].is_unique
    # mappable: h200 2 + gb200 3 + kimi 4 + deprecated b300 1 = 10 points -> 20 rows
    assert int(workloads[cc.MAPPABLE].sum()) == 20


# H200 TEP8 MTP3, 6 decode workers, B_max 32, graphs [1,2,4,8,16,32] with padding.
@pytest.mark.parametrize(
    ("conc", "b_rank", "b_pad", "num_tokens"),
    [
        (8, 2, 2, 8),  # ceil(8/6/1)=2 -> 2 -> 2*(1+3)=8; TEP: no dp multiplier
        (64, 11, 16, 64),  # ceil(64/6)=11 -> padded to 16 -> 16*4=64
    ],
)
def test_h200_tep_mtp_decode(
    workloads: pd.DataFrame, conc: int, b_rank: int, b_pad: int, num_tokens: int
) -> None:
    r = _row(workloads, "dsr1-fp8-h200-dynamo-trt", conc, "decode")
    assert (r[cc.BATCH_PER_RANK], r[cc.BATCH_PER_RANK_PADDED]) == (b_rank, b_pad)
    assert r[c.NUM_TOKENS] == num_tokens
    assert (r[c.MODEL], r[c.QUANT], r[c.HARDWARE]) == ("deepseek_r1", "FP8_BLOCK_SCALES", "H200")
    assert (r[c.WORLD_SIZE], r[c.PARALLEL_MODE], r[c.ATTN]) == (8, "TEP", "T")
    assert (r[c.MOE_EP_SIZE], r[c.MOE_TP_SIZE], r[c.BACKEND]) == (8, 1, "CUTLASS")
    assert r[c.CUDA_GRAPH] is True and r[cc.SPEC_K] == 3
    assert (r[c.COMM], r[cc.COMM_FORCED]) == ("AUTO", False)
    assert (r[c.NUM_EXPERTS], r[c.TOP_K], r[c.HIDDEN_SIZE], r[c.INTERMEDIATE_SIZE]) == (
        256, 8, 7168, 2048,
    )  # fmt: skip


def test_h200_prefill(workloads: pd.DataFrame) -> None:
    r = _row(workloads, "dsr1-fp8-h200-dynamo-trt", 8, "prefill")
    # min(N_p=16640, B_p*ISL = 2*8192 = 16384) = 16384, TEP -> 16384; 1 prompt: 8192
    assert (r[c.NUM_TOKENS], r[cc.NUM_TOKENS_1REQ]) == (16384, 8192)
    assert r[c.CUDA_GRAPH] is False and r[c.PARALLEL_MODE] == "TEP"


# GB200 DEP16 (IX overlay): B_max 64, cuda_graph_config {max_batch_size: 64, padding} ->
# generated sizes [1,2,4,8,16,24,32,40,48,56,64]; K=0; dp=16; 1 decode worker.
@pytest.mark.parametrize(
    ("conc", "b_rank", "b_pad", "num_tokens"),
    [
        (300, 19, 24, 384),  # ceil(300/16)=19 -> 24 -> 24*16
        (600, 38, 40, 640),  # ceil(37.5)=38 -> 40 -> 40*16
        (1200, 64, 64, 1024),  # ceil(75)=75, capped at B_max 64 -> 64*16
    ],
)
def test_gb200_dep_decode(
    workloads: pd.DataFrame, conc: int, b_rank: int, b_pad: int, num_tokens: int
) -> None:
    r = _row(workloads, "dsr1-fp4-gb200-dynamo-trt", conc, "decode")
    assert (r[cc.BATCH_PER_RANK], r[cc.BATCH_PER_RANK_PADDED]) == (b_rank, b_pad)
    assert r[c.NUM_TOKENS] == num_tokens and r[cc.TOKENS_PER_RANK] == b_pad
    assert (r[c.QUANT], r[c.PARALLEL_MODE], r[c.WORLD_SIZE]) == ("NVFP4", "DEP", 16)
    assert r[c.BACKEND] == "CUTEDSL"  # the IX overlay, not the SS copy (TRTLLM)
    assert (r[c.COMM], r[cc.COMM_FORCED]) == ("NVLINK_TWO_SIDED", True)
    assert r[c.LOW_PRECISION_COMBINE] is True and r[cc.EPLB_SLOTS] == 288
    assert "EPLB" in r[cc.NOTES]


def test_gb200_prefill_dep(workloads: pd.DataFrame) -> None:
    r = _row(workloads, "dsr1-fp4-gb200-dynamo-trt", 300, "prefill")
    # min(8448, 1*8192) = 8192 per rank; DEP4 -> global 8192*4 = 32768
    assert (r[c.NUM_TOKENS], r[c.PARALLEL_MODE], r[c.WORLD_SIZE]) == (32768, "DEP", 4)
    assert (r[c.COMM], r[cc.COMM_FORCED]) == ("AUTO", False)  # forced only in decode env


def test_kimi_override_variants(workloads: pd.DataFrame) -> None:
    e = "kimik2.5-fp4-gb300-dynamo-trt"
    low = _row(workloads, e, 16, "decode")
    # override_lowlat: TEP8 (attention DP deleted), graphs [1,2,4], B_max 32 from base;
    # 2 workers: ceil(16/2/1)=8 > max graph 4 -> no CUDA graph, 8 tokens.
    assert (low[c.MODEL], low[c.PARALLEL_MODE], low[c.WORLD_SIZE]) == ("kimi_k2", "TEP", 8)
    assert (low[c.NUM_TOKENS], low[c.CUDA_GRAPH], low[c.BACKEND]) == (8, False, "TRTLLM")
    z0 = _row(workloads, e, 20, "decode")
    # zip[0]: DEP4, B_max 8, graphs [1,2,4,8]; ceil(20/2/4)=3 -> 4 -> 4*4 = 16
    assert (z0[cc.BATCH_PER_RANK], z0[cc.BATCH_PER_RANK_PADDED], z0[c.NUM_TOKENS]) == (3, 4, 16)
    z1 = _row(workloads, e, 200, "decode")
    # zip[1]: B_max 16, graphs up to 16; 4 workers: ceil(200/4/4)=13 -> 16 -> 16*4 = 64
    assert (z1[cc.BATCH_PER_RANK], z1[cc.BATCH_PER_RANK_PADDED], z1[c.NUM_TOKENS]) == (13, 16, 64)
    pre = _row(workloads, e, 16, "prefill")
    # base prefill DEP4: min(4096, 4*1024) = 4096 *4 = 16384; one prompt 1024*4 = 4096
    assert (pre[c.NUM_TOKENS], pre[cc.NUM_TOKENS_1REQ]) == (16384, 4096)
    b200 = _row(workloads, e, 4, "decode")  # recipe found through the kimi-b200 rename
    assert (b200[c.NUM_TOKENS], b200[c.PARALLEL_MODE]) == (4, "TEP")


def test_no_padding_graph_miss(workloads: pd.DataFrame) -> None:
    r = _row(workloads, "dsr1-fp8-b300-dynamo-trt", 128, "decode")
    # DTP8, enable_padding false, graphs [1,2,4,8]: b=min(16, 128/8)=16 not captured ->
    # eager; num_tokens 16*8 = 128.
    assert (r[c.PARALLEL_MODE], r[c.MOE_TP_SIZE], r[c.MOE_EP_SIZE]) == ("DTP", 8, 1)
    assert (r[c.CUDA_GRAPH], r[c.NUM_TOKENS]) == (False, 128)


def test_unmappable_rows_say_why(workloads: pd.DataFrame) -> None:
    sg = _row(workloads, "dsr1-fp8-b300-dynamo-sglang", 32, "decode")
    assert sg[cc.MAPPABLE] is False
    assert sg[cc.UNMAPPED_REASON].startswith("framework: dynamo-sglang is not TensorRT-LLM")
    single = _row(workloads, "dsr1-fp8-h200-trt", 4, "decode")
    assert "recipe: single-node lane" in single[cc.UNMAPPED_REASON]
    assert pd.isna(single[c.NUM_TOKENS])
    # what is known is still filled in
    assert (single[c.MODEL], single[c.WORLD_SIZE], single[c.PARALLEL_MODE]) == (
        "deepseek_r1", 8, "TEP",
    )  # fmt: skip
    missing = _row(workloads, "dsr1-fp4-gb200-dynamo-trt", 4, "decode")
    assert "file not found in any source" in missing[cc.UNMAPPED_REASON]


def test_inputs_not_mutated() -> None:
    r = import_directory(FIXTURE)
    pf = points_frame(r)
    before = pf.copy()
    recipes = recipe_configs(r)
    map_workloads(pf, recipes)
    pd.testing.assert_frame_equal(pf, before)


def test_map_point_agentic_prefill_has_no_isl() -> None:
    point = {
        cc.POINT_ID: "p", cc.FRAMEWORK: "dynamo-trt", cc.MODEL_PREFIX: "dsv4",
        cc.HF_MODEL: "deepseek-ai/DeepSeek-V4-Pro", cc.PRECISION: "fp4", c.HARDWARE: "GB300",
        cc.ISL: None, cc.CONC: 8, "prefill_workers": 1, "prefill_tp": 4, "prefill_ep": 4,
        "prefill_dp_attn": True, "decode_workers": 1, "decode_tp": 4, "decode_ep": 4,
        "decode_dp_attn": True,
    }  # fmt: skip
    recipe = {
        "backend": {
            "trtllm_config": {
                "prefill": {"tensor_parallel_size": 4, "max_num_tokens": 8192,
                            "moe_config": {"backend": "TRTLLM"}},
                "decode": {"tensor_parallel_size": 4, "moe_expert_parallel_size": 4,
                           "enable_attention_dp": True, "max_batch_size": 4,
                           "cuda_graph_config": {"enable_padding": True, "batch_sizes": [1, 2, 4]},
                           "moe_config": {"backend": "MEGAMOE_DEEPGEMM",
                                          "load_balancer": "/x/eplb_gen_ep4_slots384.yaml"},
                           "speculative_config": {"decoding_type": "MTP", "max_draft_len": 3}},
            }
        }
    }  # fmt: skip
    pre, dec = map_point(point, recipe)
    assert pre[cc.MAPPABLE] is False and "no fixed ISL" in pre[cc.UNMAPPED_REASON]
    # decode: ceil(8/1/4) = 2 -> 2 -> 2*(1+3) = 8 per rank -> DEP4 global 32
    assert dec[cc.MAPPABLE] is True and dec[c.NUM_TOKENS] == 32
    assert (dec[c.MODEL], dec[c.QUANT]) == ("deepseek_v4_pro", "W4A8_MXFP4_MXFP8")
    assert dec[cc.EPLB_SLOTS] == 384


def test_helpers() -> None:
    assert default_graph_batch_sizes(64, True) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert default_graph_batch_sizes(512, True)[-3:] == [128, 256, 512]
    assert default_graph_batch_sizes(300, True)[-2:] == [256, 300]
    assert default_graph_batch_sizes(4, False) == [1, 2, 3, 4]
    assert parallel_mode(True, 8, 8) == "DEP" and parallel_mode(False, 8, 1) == "TTP"
    assert parallel_mode(True, 8, 1) == "DTP" and parallel_mode(False, 8, 4) == "TTP2EP4"
    assert spec_tokens({"decoding_type": "MTP", "num_nextn_predict_layers": 2}) == 2
    assert spec_tokens({"decoding_type": "MTP", "max_draft_len": 3}) == 3
    assert spec_tokens(None) == 0
    assert bench_model("glm5.1", "")[0] == "glm_5"
    assert bench_model("kimik2.6", "")[2] is not None  # assumed shape is noted
    assert bench_model("qwen3.5", "")[0] is None
    assert bench_quant("dsr1", "fp4", "") == ("NVFP4", None)
    assert bench_quant("dsv4", "fp4", "") == ("W4A8_MXFP4_MXFP8", None)
    assert bench_quant("glm5", "fp8", "") == ("FP8_BLOCK_SCALES", None)
