"""Our own full bench_moe report (tests/fixtures/bench_moe_example.json) through the parser.

The fixture is written by tests/fixtures/make_bench_moe_example.py; a missing or stale
fixture fails here, it is never skipped.
"""

from __future__ import annotations

import importlib.util
import math
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

from analysis import columns as C
from ingest.bench_moe import parse_bench_moe
from ingest.errors import InputError
from ingest.lenient_json import loads
from ingest.records import UploadMeta
from tests.factories import EXAMPLE, FIXTURES
from tests.ingest.contract import check_sweep_contract


def _generator() -> ModuleType:
    path = FIXTURES / "make_bench_moe_example.py"
    spec = importlib.util.spec_from_file_location("make_bench_moe_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example() -> tuple[dict[str, Any], pd.DataFrame]:
    (sweep,) = parse_bench_moe(EXAMPLE.read_bytes(), UploadMeta())
    assert sweep.key == ""
    return sweep.run, sweep.candidates


def test_fixture_is_what_the_script_writes() -> None:
    assert EXAMPLE.read_bytes() == _generator().render()


def test_fixture_has_the_features_tests_rely_on() -> None:
    raw = EXAMPLE.read_bytes()
    assert b'"swiglu_limit": Infinity,' in raw  # bare token, as real reports have
    assert raw.count(b'"hostname": "moedash-fixture-b200-07"') == 1  # test_topology edits it
    doc = loads(raw)
    assert list(doc) == [
        "benchmark", "environment", "model", "search", "base_config", "results", "rankings",
    ]  # fmt: skip
    assert all(len(row) == 14 for row in doc["results"])
    groups = [(g["num_tokens"], g["parallel_mode"]) for g in doc["rankings"]]
    assert groups == [(128, "DEP"), (128, "TEP"), (4096, "DEP"), (4096, "TEP")]


def test_example_contract_and_row_count(example: tuple[dict[str, Any], pd.DataFrame]) -> None:
    run, frame = example
    check_sweep_contract(run, frame)
    assert len(frame) == 12
    assert list(frame[C.CANDIDATE_INDEX]) == list(range(12))
    assert run[C.SOURCE_FORMAT] == "bench_moe"


def test_example_run_fields(example: tuple[dict[str, Any], pd.DataFrame]) -> None:
    run, _ = example
    assert run[C.MODEL] == "kimi_k2"
    assert (run[C.NUM_EXPERTS], run[C.TOP_K], run[C.HIDDEN_SIZE], run[C.INTERMEDIATE_SIZE]) == (
        384, 8, 7168, 2048,
    )  # fmt: skip
    assert run[C.QUANT] == "NVFP4"
    assert run[C.HARDWARE] == "B200"  # inferred from "NVIDIA B200" at SM 100
    assert run[C.WORLD_SIZE] == 4
    assert run[C.TRTLLM_COMMIT] == "7c41e09a3f"
    assert run[C.TRTLLM_VERSION] is None and run[C.RUN_DATE] is None  # not in the file
    assert run["sm"] == 100 and run["cuda_version"] == "12.9"
    assert run["driver_version"] == "575.57.08" and run["torch_version"] == "2.8.0"
    assert run["routing_method"] == "DEEPSEEK_V3"
    assert run["dispatch"] == "balanced"
    model = loads(run["model_json"])
    assert model["swiglu_limit"] == math.inf and model["n_group"] == 1
    assert '"swiglu_limit":Infinity' in run["model_json"]
    assert loads(run["environment_json"])["hostname"] == "moedash-fixture-b200-07"
    best = loads(run["rankings_json"])[0]["best"]
    assert best["backend"] == "TRTLLM" and best["score_ms"] == pytest.approx(0.1302258)
    assert loads(run["search_json"])["backends"] == ["CUTLASS", "TRTLLM", "CUTEDSL"]
    assert loads(run["base_config_json"])["backend"] == "CUTLASS"
    assert loads(run["warnings_json"]) == []
    assert run["extra_json"] is None


def test_example_outlier_row(example: tuple[dict[str, Any], pd.DataFrame]) -> None:
    _, frame = example
    row0 = frame.iloc[0]
    assert row0[C.OUTLIER_COUNT] == 1
    assert row0[C.SCORE_MS] < row0[C.RAW_SCORE_MS]  # the trimmed mean drops the spike
    assert row0[C.SCORE_MS] == pytest.approx(0.15907888888888888)
    assert row0[C.RAW_SCORE_MS] == pytest.approx(0.1677075)
    assert row0[C.ITER_MAX_MS] == pytest.approx(0.245365)
    assert row0[C.ITER_P90_MS] == pytest.approx(0.159868)
    assert row0[C.N_ITERS] == 10
    assert row0[C.SCORE_TYPE] == "slowest_rank_trimmed_mean"
    assert row0[C.PER_RANK_NUM_TOKENS] == "[32,32,32,32]"
    assert row0[C.ROUTING_STATUS] == "exact"
    assert row0[C.OFF_DIAGONAL_RATIO] == 0.75
    assert row0[C.ACTIVE_EXPERTS] == 384
    assert row0[C.NUM_CHUNKS] == 1
    assert row0[C.LOW_PRECISION_COMBINE] and row0[C.CUDA_GRAPH]
    per_rank = loads(row0[C.PER_RANK_JSON])
    assert per_rank["status_per_rank"] == {f"rank{r}": "success" for r in range(4)}
    assert per_rank["per_rank"]["rank1"]["max"] == 0.245365  # the spike is on rank 1
    assert frame[C.OUTLIER_COUNT].dropna().tolist() == [1, 0, 0, 0, 0, 2, 0, 0, 0, 0]


def test_example_skipped_and_failed_rows(example: tuple[dict[str, Any], pd.DataFrame]) -> None:
    _, frame = example
    fallback, oom = frame.iloc[10], frame.iloc[11]
    assert fallback[C.STATUS] == "skipped"
    assert fallback[C.FAILURE_CATEGORY] == "backend_fallback"
    assert fallback[C.BACKEND] == "CUTLASS" and fallback[C.REQUESTED_BACKEND] == "CUTEDSL"
    assert oom[C.STATUS] == "failed"
    assert oom[C.FAILURE_CATEGORY] == "timed_phase_error"
    assert oom[C.SKIP_REASON].startswith("timed phase error: OutOfMemoryError")
    assert oom[C.NUM_TOKENS] == 4096 and oom[C.PARALLEL_MODE] == "TEP"
    for row in (fallback, oom):
        assert pd.isna(row[C.SCORE_MS]) and pd.isna(row[C.N_ITERS])
        assert pd.isna(row[C.ROUTING_STATUS])  # routing_control is null on such rows
    assert frame[C.FAILURE_CATEGORY].notna().sum() == 2
    assert (frame[C.STATUS] == "success").sum() == 10


def test_example_parallel_and_comm(example: tuple[dict[str, Any], pd.DataFrame]) -> None:
    _, frame = example
    dep = frame[frame[C.PARALLEL_MODE] == "DEP"]
    tep = frame[frame[C.PARALLEL_MODE] == "TEP"]
    assert len(dep) == 6 and len(tep) == 6
    assert (dep[C.MOE_EP_SIZE] == 4).all() and (dep[C.MOE_TP_SIZE] == 1).all()
    assert dep[C.ATTENTION_DP].all() and (dep[C.ATTN] == "D").all()
    assert (dep[C.COMM] == "NVLINK_ONE_SIDED").all()
    assert (dep[C.COMM_ACTUAL] == "NVLinkOneSided").all()
    assert (dep[C.COMM_REQUESTED] == "AUTO").all()
    assert (tep[C.COMM] == "NONE").all() and tep[C.NUM_CHUNKS].isna().all()
    assert not tep[C.ATTENTION_DP].any() and (tep[C.ATTN] == "T").all()
    assert (
        list(tep[C.PER_RANK_NUM_TOKENS])
        == ["[128,128,128,128]"] * 3 + ["[4096,4096,4096,4096]"] * 3
    )
    assert list(frame[C.REQUESTED_BACKEND][:6]) == [
        "CUTLASS", "CUTLASS", "TRTLLM", "TRTLLM", "CUTEDSL", "CUTEDSL",
    ]  # fmt: skip


def test_example_meta_commit_agreement() -> None:
    raw = EXAMPLE.read_bytes()
    (sweep,) = parse_bench_moe(raw, UploadMeta(trtllm_commit="7c41e09a3f52b8"))
    assert sweep.run[C.TRTLLM_COMMIT] == "7c41e09a3f52b8"  # the longer spelling wins
    with pytest.raises(InputError) as info:
        parse_bench_moe(raw, UploadMeta(trtllm_commit="deadbeef"))
    assert info.value.field == "trtllm_commit"


def test_example_meta_hardware_disagreeing_is_a_warning() -> None:
    (sweep,) = parse_bench_moe(EXAMPLE.read_bytes(), UploadMeta(hardware="GB200"))
    assert sweep.run[C.HARDWARE] == "GB200"
    (warning,) = loads(sweep.run["warnings_json"])
    assert "GB200" in warning and "B200" in warning
