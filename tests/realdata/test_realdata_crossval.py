"""Real InferenceX / srt-slurm data (tier ``realdata``), read from MOEDASH_SHARED_DATA.

Counts are cross-checked against shared/reference/serving_configs.md section (e); the
worked examples are derived by hand from the YAML (derivations in comments).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.crossval import ledger
from analysis.serving_map import map_workloads
from ingest.serving_configs import (
    ImportResult,
    import_directory,
    points_frame,
    recipe_configs,
)
from ingest.serving_recipes import IX, IX_OLD, SS, SS_MAIN, RecipeRoots, candidate_locations
from tests.realdata import require, shared_data_dir

pytestmark = pytest.mark.realdata

DATA = shared_data_dir()
TRT = ("dynamo-trt", "trt")
CURRENT = "inferencex/configs/nvidia-master.yaml"


@pytest.fixture(scope="module")
def imported() -> ImportResult:
    require(DATA / "inferencex" / "configs" / "nvidia-master.yaml")
    return import_directory(DATA)


@pytest.fixture(scope="module")
def points(imported: ImportResult) -> pd.DataFrame:
    return points_frame(imported)


@pytest.fixture(scope="module")
def workloads(imported: ImportResult, points: pd.DataFrame) -> pd.DataFrame:
    return map_workloads(points, recipe_configs(imported))


def test_matrix_counts(points: pd.DataFrame) -> None:
    assert len(points) == 4325
    entries = points.groupby(cc.SOURCE)[cc.ENTRY].nunique()
    assert entries[CURRENT] == 152 and entries.sum() == 353  # 152 current + 201 deprecated
    md = points[points[cc.MULTINODE] & points[cc.DISAGG]]
    assert len(md) == 1733  # = the reference's 1,733 multinode-disagg points
    assert md[cc.RECIPE_ROOT].value_counts().to_dict() == {
        SS: 711, IX: 634, IX_OLD: 238, SS_MAIN: 68,
    }  # fmt: skip
    reasons = md[md[cc.RECIPE_ROOT].isna()][cc.RECIPE_UNRESOLVED_REASON]
    assert len(reasons) == 82
    assert reasons.str.startswith("file not found").sum() == 43  # MiniMax-M2.5 B300
    assert reasons.str.startswith("no CONFIG_FILE: legacy env").sum() == 36  # gpt-oss, tilert
    assert reasons.str.contains("deleted at InferenceX HEAD").sum() == 3  # DSv4 vLLM agentic


def test_recipe_resolution_counts(imported: ImportResult) -> None:
    assert (len(imported.recipes), len(imported.unresolved)) == (1123, 18)
    assert all("minimax-m2.5" in k for k in imported.unresolved)
    roots = pd.Series([r.root for r in imported.recipes.values()]).value_counts().to_dict()
    assert roots == {SS: 497, IX: 491, IX_OLD: 82, SS_MAIN: 53}
    # Precedence only matters where a path exists in more than one root: that happens
    # only for SS vs SS-main (the launcher's clone, SS, wins), never IX vs SS or IX-old.
    rr = RecipeRoots.under(DATA)
    multi = set()
    for key in imported.recipes:
        hits = tuple(r for r, p in candidate_locations(key) if rr.read(r, p) is not None)
        if len(hits) > 1:
            multi.add(hits)
    assert multi == {(SS, SS_MAIN)}


def test_every_trtllm_lane_is_parsed(points: pd.DataFrame, workloads: pd.DataFrame) -> None:
    trt = points[points[cc.FRAMEWORK].isin(TRT)]
    assert (len(trt), trt[cc.ENTRY].nunique()) == (937, 44)
    md = trt[trt[cc.MULTINODE] & trt[cc.DISAGG]]
    assert len(md) == 599  # E2 197 + E3 18 + E4 350 + gpt-oss legacy 34
    cur = md[md[cc.SOURCE] == CURRENT]
    assert cur.groupby(cc.SCENARIO).size().to_dict() == {"fixed-seq-len": 197, "agentic-coding": 18}
    assert len(md[md[cc.SOURCE] != CURRENT]) - 34 == 350
    tw = workloads[workloads[cc.FRAMEWORK].isin(TRT)]
    assert len(tw) == 2 * 937
    ok = tw[tw[cc.MAPPABLE].astype(bool)]
    assert ok.groupby(cc.PHASE).size().to_dict() == {"decode": 541, "prefill": 529}
    assert ok[ok[cc.PHASE] == "decode"][c.CUDA_GRAPH].all()  # decode graphs always on
    assert not ok[ok[cc.PHASE] == "prefill"][c.CUDA_GRAPH].any()
    # Every unmappable multinode-disagg TRT-LLM workload is one of the known reasons.
    bad = tw[~tw[cc.MAPPABLE].astype(bool) & tw[cc.POINT_ID].isin(md[cc.POINT_ID])]
    known = ("no bench_moe preset for qwen3.5", "legacy env settings", "no fixed ISL")
    assert bad[cc.UNMAPPED_REASON].map(lambda s: any(k in s for k in known)).all()


def test_decode_modes_match_the_reference_table(workloads: pd.DataFrame) -> None:
    # serving_configs.md E2 "decode mode (points)", current fixed-seq-len TRT-LLM lanes.
    w = workloads
    dec = w[
        (w[cc.SOURCE] == CURRENT) & w[cc.FRAMEWORK].isin(TRT) & (w[cc.PHASE] == "decode")
        & (w[cc.SCENARIO] == "fixed-seq-len") & w[cc.MAPPABLE].astype(bool)
    ]  # fmt: skip
    got = dec.groupby([cc.MODEL_PREFIX, c.HARDWARE, cc.PRECISION, c.PARALLEL_MODE]).size()
    expected = {
        ("dsr1", "B200", "fp4"): {"DEP": 8, "TEP": 13},
        ("dsr1", "B200", "fp8"): {"DEP": 7, "TTP": 8},
        ("dsr1", "B300", "fp4"): {"DEP": 6, "TEP": 7},
        ("dsr1", "B300", "fp8"): {"DEP": 1, "DTP": 6, "TTP": 6},
        ("dsr1", "GB200", "fp4"): {"DEP": 8, "TEP": 9},
        ("dsr1", "GB200", "fp8"): {"DEP": 9, "TEP": 5},
        ("dsr1", "GB300", "fp4"): {"DEP": 9, "TEP": 10},
        ("dsr1", "GB300", "fp8"): {"DEP": 8, "TEP": 5},
        ("dsr1", "H100", "fp8"): {"DEP": 3, "TEP": 7},
        ("dsr1", "H200", "fp8"): {"DEP": 8, "TEP": 10},
        ("dsv4", "GB300", "fp4"): {"DEP": 17, "TEP": 9},
    }
    flat = {(*k, m): n for k, modes in expected.items() for m, n in modes.items()}
    assert got.to_dict() == flat


def _one(w: pd.DataFrame, entry: str, config_suffix: str, conc: int, phase: str) -> dict[str, Any]:
    sel = w[
        (w[cc.ENTRY] == entry) & (w[cc.SOURCE] == CURRENT) & (w[cc.CONC] == conc)
        & (w[cc.PHASE] == phase) & w[cc.CONFIG_FILE].str.endswith(config_suffix)
    ]  # fmt: skip
    assert len(sel) == 1
    return sel.iloc[0].to_dict()


def test_worked_example_h200_c64_mtp(workloads: pd.DataFrame) -> None:
    # IX nvidia-master.yaml dsr1-fp8-h200-dynamo-trt, conc 64 ->
    # SS recipes/trtllm/h200/8k1k/mtp/c64_ctx1_gen1_dep8_batch32_eplb0_mtp2.yaml
    # decode: 1 worker, TP8/EP8, enable_attention_dp true, max_batch_size 32,
    #   batch_sizes [1,2,4,8,16,32], MTP num_nextn_predict_layers 2, moe CUTLASS.
    #   b_rank = min(32, ceil(64/1/8)) = 8 -> padded 8 -> 8*(1+2) = 24 tokens/rank
    #   DEP -> bench_moe num_tokens = 24*8 = 192 (reference table: "DEP, 8, 192").
    d = _one(workloads, "dsr1-fp8-h200-dynamo-trt", "c64_ctx1_gen1_dep8_batch32_eplb0_mtp2.yaml",
             64, "decode")  # fmt: skip
    assert (d[c.PARALLEL_MODE], d[c.WORLD_SIZE], d[c.NUM_TOKENS]) == ("DEP", 8, 192)
    assert (d[c.BACKEND], d[c.QUANT], d[c.CUDA_GRAPH], d[cc.SPEC_K]) == (
        "CUTLASS", "FP8_BLOCK_SCALES", True, 2,
    )  # fmt: skip
    # prefill: TP8/EP8, no attention DP, max_batch 2, max_num_tokens 16640:
    #   min(16640, 2*8192) = 16384; TEP -> 16384, CUDA graph off.
    p = _one(workloads, "dsr1-fp8-h200-dynamo-trt", "c64_ctx1_gen1_dep8_batch32_eplb0_mtp2.yaml",
             64, "prefill")  # fmt: skip
    assert (p[c.PARALLEL_MODE], p[c.NUM_TOKENS], p[c.CUDA_GRAPH]) == ("TEP", 16384, False)


def test_worked_example_gb200_wide_ep(workloads: pd.DataFrame) -> None:
    # dsr1-fp4-gb200-dynamo-trt conc 1229 -> SS .../gb200-fp4/8k1k/mtp/
    #   ctx7_gen1_dep16_batch64_eplb256_mtp1.yaml
    # decode: TP16/EP16, ADP, max_batch 64, batch_sizes 1,2,4,8,16,24,...,64, MTP1, CUTEDSL,
    #   load_balancer num_slots 256.
    #   b_rank = min(64, ceil(1229/1/16)=77) = 64 -> 64*(1+1) = 128/rank -> 128*16 = 2048.
    d = _one(workloads, "dsr1-fp4-gb200-dynamo-trt", "ctx7_gen1_dep16_batch64_eplb256_mtp1.yaml",
             1229, "decode")  # fmt: skip
    assert (d[c.PARALLEL_MODE], d[c.WORLD_SIZE], d[c.NUM_TOKENS]) == ("DEP", 16, 2048)
    assert (d[c.BACKEND], d[c.QUANT], d[cc.EPLB_SLOTS], d[c.COMM]) == (
        "CUTEDSL", "NVFP4", 256, "AUTO",
    )  # fmt: skip
    # prefill: 7 workers TP4/EP4 ADP, max_batch 2, max_num_tokens 16640, TRTLLM:
    #   min(16640, 2*8192) = 16384/rank -> DEP4 -> 65536.
    p = _one(workloads, "dsr1-fp4-gb200-dynamo-trt", "ctx7_gen1_dep16_batch64_eplb256_mtp1.yaml",
             1229, "prefill")  # fmt: skip
    assert (p[c.PARALLEL_MODE], p[c.NUM_TOKENS], p[c.BACKEND]) == ("DEP", 65536, "TRTLLM")


def test_worked_example_dsv4_megamoe(workloads: pd.DataFrame) -> None:
    # dsv4-fp4-gb300-dynamo-trt-mtp conc 1229 -> SS recipes/DeepSeek-V4-Pro/disagg/
    #   trtllm_dynamo/gb300_mxfp4/ISL8K_OSL1K/MTP/ctx7dep4_gen1dep8_batch128_eplb384_mtp3.yaml
    # decode: TP8/EP8 ADP, max_batch 128, batch_sizes 1,2,4,8..128 (step 8), max_draft_len 3,
    #   MEGAMOE_DEEPGEMM, load_balancer ".../moe_load_balancer_gen_ep8_slots384.yaml".
    #   b_rank = min(128, ceil(1229/8)=154) = 128 -> 128*4 = 512/rank (= max_num_tokens)
    #   -> DEP8 -> 4096.  Quant: "gb300_mxfp4" -> W4A8_MXFP4_MXFP8.
    e, f = "dsv4-fp4-gb300-dynamo-trt-mtp", "ctx7dep4_gen1dep8_batch128_eplb384_mtp3.yaml"
    d = _one(workloads, e, f, 1229, "decode")
    assert (d[c.MODEL], d[c.QUANT]) == ("deepseek_v4_pro", "W4A8_MXFP4_MXFP8")
    assert (d[c.PARALLEL_MODE], d[c.WORLD_SIZE], d[cc.TOKENS_PER_RANK], d[c.NUM_TOKENS]) == (
        "DEP", 8, 512, 4096,
    )  # fmt: skip
    assert (d[c.BACKEND], d[cc.EPLB_SLOTS]) == ("MEGAMOE_DEEPGEMM", 384)
    # prefill: TP4/EP4 ADP, max_batch 2, max_num_tokens 8192 -> min(8192, 16384)*4 = 32768
    p = _one(workloads, e, f, 1229, "prefill")
    assert (p[c.NUM_TOKENS], p[c.BACKEND]) == (32768, "TRTLLM")


def test_gb300_fp8_uses_the_branch_not_main(workloads: pd.DataFrame) -> None:
    # SS-main adds TRTLLM_FORCE_COMM_METHOD=NVLINK_TWO_SIDED to gb300-fp8/8k1k; the GB300
    # launcher clones SS, which does not force it.
    w = workloads
    sel = w[(w[cc.ENTRY] == "dsr1-fp8-gb300-dynamo-trt") & (w[cc.SOURCE] == CURRENT)
            & (w[cc.PHASE] == "decode")]  # fmt: skip
    assert len(sel) == 13
    assert set(sel[c.COMM]) == {"AUTO"} and not sel[cc.COMM_FORCED].any()
    assert sel[cc.RECIPE_PATH].str.startswith("SS:").all()


def test_ledger_runs_on_real_workloads(workloads: pd.DataFrame) -> None:
    # Candidates equal to the deployed config at the mapped shape must give Match for
    # every mappable TRT-LLM workload; with no candidates every one is "no data".
    ok = workloads[workloads[cc.FRAMEWORK].isin(TRT) & workloads[cc.MAPPABLE].astype(bool)]
    keep = [
        c.MODEL, c.QUANT, c.HARDWARE, c.WORLD_SIZE, c.NUM_TOKENS, c.CUDA_GRAPH,
        c.ATTENTION_DP, c.PARALLEL_MODE, c.BACKEND, c.MOE_EP_SIZE, c.MOE_TP_SIZE, c.COMM,
    ]  # fmt: skip
    cands = ok[keep].drop_duplicates().assign(**{c.STATUS: "success", c.SCORE_MS: 1.0})
    lg = ledger(ok, cands)
    assert (lg[cc.STATUS] == "Match").all()
    assert (ledger(ok, cands.iloc[0:0])[cc.STATUS] == "no data").all()
