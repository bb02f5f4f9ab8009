"""Issue 27: the /planner page starts from the store (a catalogue model and GPU with
stored sweeps in the model's expert quant), and the exported deployment names the
serving stack that can run it with the per-role settings."""

from __future__ import annotations

import pandas as pd

from analysis import columns as C
from db.store import Store
from service.frames import DashData
from service.planner import run_plan
from service.planner_defaults import rank_defaults, store_default
from service.planner_request import PlanRequest
from tests.api.test_api_planner import ingest_linear


def _cov(rows: list[tuple[str, str, str, int, bool]]) -> pd.DataFrame:
    cols = [C.MODEL, C.HARDWARE, C.QUANT, "candidates", C.SYNTHETIC]
    return pd.DataFrame(rows, columns=cols)


def test_defaults_rank_by_candidates_in_the_models_quant() -> None:
    cov = _cov(
        [
            ("deepseek_v4_pro", "B300", "NVFP4", 570, False),
            ("deepseek_v4_pro", "GB300", "NVFP4", 570, False),  # tie: the newer GPU
            ("deepseek_v4_pro", "GB300", "W4A8_MXFP4_MXFP8", 900, False),  # not its quant
            ("kimi_k2", "GB300", "NVFP4", 156, False),
            ("toy_moe", "H200", "FP8", 9999, False),  # not in the catalogue
            ("mixtral_8x22b", "H20", "BF16", 9999, True),  # synthetic, real data exists
        ]
    )
    assert rank_defaults(cov) == [
        ("deepseek_v4_pro", "GB300"),
        ("deepseek_v4_pro", "B300"),
        ("kimi_k2", "GB300"),
    ]
    assert rank_defaults(cov.iloc[4:5]) == [] and rank_defaults(cov.iloc[0:0]) == []
    assert rank_defaults(cov.iloc[5:6]) == [("mixtral_8x22b", "H20")]  # only synthetic


def test_store_default_reads_the_store(store: Store) -> None:
    assert store_default(DashData(store)) is None  # empty: the paper's preset
    ingest_linear(store, hardware="L20")
    assert store_default(DashData(store)) == ("mixtral_8x22b", "L20")


def test_deployment_names_the_stack_and_the_settings_per_role() -> None:
    body = run_plan(PlanRequest(), None)  # Mixtral on H20, roofline
    best, serve = body["best"], body["deployment"]["serving"]
    stacks = serve["disaggregated"]["stacks"]
    assert [s["stack"].split()[0] for s in stacks] == ["SGLang", "vLLM"]
    att, ffn = stacks[0]["roles"]["attention"], stacks[0]["roles"]["ffn"]
    assert (att["tensor_parallel_size"], att["data_parallel_replicas"]) == (best["tpa"], best["na"])
    assert att["max_running_requests_per_replica"] == best["ba"] * best["m"]
    assert (ffn["tensor_parallel_size"], ffn["experts_per_node"]) == (
        best["tpe"],
        best["experts_per_node"],
    )
    assert (
        "--afd-role ffn" in ffn["flags"]
        and "TensorRT-LLM" in serve["disaggregated"]["not_supported_by"]
    )
    colo = serve["colocated"]
    assert colo["stack"].startswith("TensorRT-LLM") and colo["gpus"] == body["colocated"]["gpus"]
    assert colo["settings"]["moe_expert_parallel_size"] == colo["gpus"]
    gain = body["disaggregation_gain"]
    assert serve["recommended"] == ("colocated" if gain < 1 else "disaggregated")
    summary = body["deployment"]["summary"]
    assert "SGLang" in summary and "trtllm-serve" in summary and "recommended:" in summary
