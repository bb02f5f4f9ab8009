# ruff: noqa: E501 - the case tables read best one case per line
"""Parser tests for bench_moe reports (ingest.bench_moe, failures, hardware, legacy, detect)."""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analysis import columns as C
from ingest.bench_moe import dispatch_label, parse_bench_moe, parse_parallel
from ingest.detect import parse_path, parse_upload
from ingest.errors import InputError, UnsupportedFormat
from ingest.failures import CATEGORIES, categorize
from ingest.hardware import infer_hardware, normalize_hardware_label
from ingest.lenient_json import loads
from ingest.records import RUN_EXTRA_KEYS, UploadMeta
from tests.factories import EXAMPLE
from tests.factories.hostile import (
    ACCEPTED_ODD_CASES,
    HOSTILE_CASES,
    HOSTILE_META_CASES,
    encode,
    minimal_report,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("MOEDASH_SHARED", REPO.parent / "shared"))


def check_sweep_contract(run: dict[str, Any], frame: pd.DataFrame) -> None:
    """Every run key present; exactly the candidate columns, in order, with sane dtypes."""
    expected_run = (set(C.RUN_COLUMNS) - {C.RUN_ID}) | set(RUN_EXTRA_KEYS)
    assert set(run) == expected_run
    assert tuple(frame.columns) == C.CANDIDATE_COLUMNS
    for name in frame.columns:
        dtype = frame[name].dtype
        if name in C.INT_COLUMNS:
            assert str(dtype) == "Int64", name
        elif name in C.FLOAT_COLUMNS:
            assert dtype == "float64", name
        elif name in C.BOOL_COLUMNS:
            assert str(dtype) == "boolean", name
        else:
            assert pd.api.types.is_string_dtype(dtype), name


@pytest.fixture(scope="module")
def example() -> tuple[dict[str, Any], pd.DataFrame]:
    if not EXAMPLE.exists():
        pytest.skip(f"shared example not found at {EXAMPLE} (set MOEDASH_SHARED)")
    (sweep,) = parse_bench_moe(EXAMPLE.read_bytes(), UploadMeta())
    assert sweep.key == ""
    return sweep.run, sweep.candidates


@pytest.fixture(scope="module")
def mixed() -> tuple[dict[str, Any], pd.DataFrame]:
    raw = (FIXTURES / "bench_moe_ws8_mixed.json").read_bytes()
    (sweep,) = parse_bench_moe(raw, UploadMeta(trtllm_version="1.3.0rc26", run_date="2026-09-13"))
    return sweep.run, sweep.candidates


# --- the shared example (real format) --------------------------------------------------


def test_example_contract_and_row_count(example: tuple[dict[str, Any], pd.DataFrame]) -> None:
    run, frame = example
    check_sweep_contract(run, frame)
    assert len(frame) == 12
    assert list(frame[C.CANDIDATE_INDEX]) == list(range(12))
    assert run[C.SOURCE_FORMAT] == "bench_moe"


def test_example_run_fields(example: tuple[dict[str, Any], pd.DataFrame]) -> None:
    run, _ = example
    assert run[C.MODEL] == "deepseek_v4_pro"
    assert (run[C.NUM_EXPERTS], run[C.TOP_K], run[C.HIDDEN_SIZE], run[C.INTERMEDIATE_SIZE]) == (
        384, 6, 7168, 3072,
    )  # fmt: skip
    assert run[C.QUANT] == "NVFP4"
    assert run[C.HARDWARE] == "B200"
    assert run[C.WORLD_SIZE] == 4
    assert run[C.TRTLLM_COMMIT] == "0abc123def"
    assert run["sm"] == 100 and run["cuda_version"] == "13.0" and run["driver_version"] is None
    assert run["routing_method"] == "RENORMALIZE"
    assert run["dispatch"] == "balanced"
    model = loads(run["model_json"])
    assert model["swiglu_limit"] == math.inf
    assert '"swiglu_limit":Infinity' in run["model_json"]
    assert loads(run["rankings_json"])[0]["best"]["score_ms"] == pytest.approx(0.21538957142857143)
    assert loads(run["search_json"])["mode"] == "backend,parallel"
    assert loads(run["warnings_json"]) == []
    assert run["extra_json"] is None


def test_example_row_values(example: tuple[dict[str, Any], pd.DataFrame]) -> None:
    _, frame = example
    row0 = frame.iloc[0]
    assert row0[C.OUTLIER_COUNT] == 1
    assert row0[C.SCORE_MS] < row0[C.RAW_SCORE_MS]
    assert row0[C.SCORE_MS] == pytest.approx(0.21538957142857143)
    assert row0[C.N_ITERS] == 8
    assert row0[C.ITER_P90_MS] == pytest.approx(0.216749)
    assert row0[C.PER_RANK_NUM_TOKENS] == "[64,64,64,64]"
    assert row0[C.ROUTING_STATUS] == "exact"
    assert row0[C.OFF_DIAGONAL_RATIO] == 0.75
    assert row0[C.ACTIVE_EXPERTS] == 384
    assert row0[C.NUM_CHUNKS] == 1
    assert row0[C.LOW_PRECISION_COMBINE]
    per_rank = loads(row0[C.PER_RANK_JSON])
    assert per_rank["status_per_rank"]["rank3"] == "success"
    assert per_rank["per_rank"]["rank2"]["max"] == 0.34559

    row9 = frame.iloc[9]
    assert row9[C.STATUS] == "failed"
    assert row9[C.FAILURE_CATEGORY] == "timed_phase_error"
    assert row9[C.SKIP_REASON].startswith("timed phase error: OutOfMemoryError")
    assert pd.isna(row9[C.SCORE_MS]) and pd.isna(row9[C.N_ITERS])
    assert row9[C.NUM_TOKENS] == 8192 and row9[C.PARALLEL_MODE] == "TEP"
    assert frame[C.FAILURE_CATEGORY].notna().sum() == 1


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
    assert (tep[C.COMM] == "NONE").all()
    assert not tep[C.ATTENTION_DP].any() and (tep[C.ATTN] == "T").all()
    assert list(frame[C.BACKEND][:6]) == [
        "TRTLLM",
        "TRTLLM",
        "CUTEDSL",
        "CUTEDSL",
        "CUTLASS",
        "CUTLASS",
    ]


def test_example_meta_commit_agreement() -> None:
    raw = EXAMPLE.read_bytes() if EXAMPLE.exists() else pytest.skip("no shared example")
    (sweep,) = parse_bench_moe(raw, UploadMeta(trtllm_commit="0abc123def4567"))
    assert sweep.run[C.TRTLLM_COMMIT] == "0abc123def4567"  # the longer spelling wins
    with pytest.raises(InputError) as info:
        parse_bench_moe(raw, UploadMeta(trtllm_commit="deadbeef"))
    assert info.value.field == "trtllm_commit"


# --- hand-written fixture: every row kind ----------------------------------------------


def test_mixed_contract(mixed: tuple[dict[str, Any], pd.DataFrame]) -> None:
    run, frame = mixed
    check_sweep_contract(run, frame)
    assert len(frame) == 14
    assert run[C.HARDWARE] == "B300"
    assert run[C.TRTLLM_VERSION] == "1.3.0rc26" and run[C.RUN_DATE] == "2026-09-13"
    assert run[C.TRTLLM_COMMIT] is None
    assert run[C.QUANT] == "NVFP4"


def test_mixed_failure_categories(mixed: tuple[dict[str, Any], pd.DataFrame]) -> None:
    _, frame = mixed
    got = dict(zip(frame[C.CANDIDATE_INDEX], frame[C.FAILURE_CATEGORY], strict=True))
    assert pd.isna(got[0]) and pd.isna(got[1])
    assert got[2] == "autotune_failed"
    assert got[3] == "pruned_unsupported"
    assert got[4] == "backend_fallback"
    assert got[5] == "watchdog_timeout"
    assert got[6] == "cuda_context_poisoned_upstream"
    assert got[7] == "cuda_context_poisoned_after_success"
    assert got[8] == "budget_truncation"
    assert got[9] == "routing_error"
    assert got[11] == "pruned_unsupported"
    assert frame.loc[7, C.SCORE_MS] == 0.25  # demoted row keeps its latency


def test_mixed_parallel_resolution(mixed: tuple[dict[str, Any], pd.DataFrame]) -> None:
    _, frame = mixed
    layout = {
        i: (frame.loc[i, C.PARALLEL_MODE], frame.loc[i, C.MOE_EP_SIZE], frame.loc[i, C.MOE_TP_SIZE],
            frame.loc[i, C.ATTENTION_DP], frame.loc[i, C.ATTN])
        for i in range(len(frame))
    }  # fmt: skip
    assert layout[0] == ("DTP2EP4", 4, 2, True, "D")
    assert layout[1] == ("TTP4EP2", 2, 4, False, "T")  # lower-case input normalised
    assert layout[3] == ("TEP", 8, 1, False, "T")  # pruned row: derived from the mode
    assert layout[6] == ("DTP", 1, 8, True, "D")
    assert layout[10] == ("CUSTOM", 2, 4, False, "?")  # requested sizes, DP default false
    mode, ep, tp, dp, attn = layout[11]
    assert mode == "DTP3" and pd.isna(ep) and pd.isna(tp) and attn == "?"


def test_mixed_comm_and_dispatch(mixed: tuple[dict[str, Any], pd.DataFrame]) -> None:
    run, frame = mixed
    assert frame.loc[0, C.COMM] == "ALLGATHER"
    assert frame.loc[2, C.COMM] == "NVLINK_TWO_SIDED"
    assert frame.loc[2, C.COMM_ACTUAL] == "MNNVLLatency"
    assert frame.loc[3, C.COMM] == "DEEPEP" and pd.isna(frame.loc[3, C.COMM_ACTUAL])
    assert frame.loc[12, C.COMM] == "NCCL_EP"
    assert frame.loc[13, C.COMM] == "WEIRDCOMM"
    assert frame.loc[12, C.DISPATCH] == "recv_hotspot"
    assert frame.loc[0, C.DISPATCH] == "balanced"
    assert run["dispatch"] is None  # two different labels in one run
    assert set(frame[C.COMM].dropna()) - {"WEIRDCOMM"} <= set(C.COMM_CANONICAL)


def test_mixed_unknown_keys_kept_and_warned(mixed: tuple[dict[str, Any], pd.DataFrame]) -> None:
    run, frame = mixed
    extra = loads(frame.loc[12, C.EXTRA_JSON])
    assert extra["nsys_report"] == "/tmp/x.nsys-rep"
    assert extra["requested_config.eplb_slots"] == 0
    assert extra["kernel_breakdown"]["moe_forward_kernels"][0]["name"] == 'k<"a">'
    assert pd.isna(frame.loc[0, C.EXTRA_JSON])
    assert loads(run["extra_json"]) == {"launcher": "mpirun -np 8"}
    warnings = " | ".join(loads(run["warnings_json"]))
    assert "launcher" in warnings and "nsys_report" in warnings and "eplb_slots" in warnings
    assert "WeirdComm" in warnings
    assert "per_rank_num_tokens" in warnings  # row 13 has 2 entries for 8 ranks
    assert "DTP3" in warnings
    model = loads(run["model_json"])
    assert model["swiglu_limit"] == math.inf and model["swiglu_beta"] == -math.inf
    assert math.isnan(model["future_field"])


def test_mixed_latency_fields(mixed: tuple[dict[str, Any], pd.DataFrame]) -> None:
    _, frame = mixed
    assert frame.loc[12, C.SCORE_TYPE] == "slowest_rank_median"
    assert frame.loc[0, C.N_ITERS] == 6
    assert frame.loc[12, C.ROUTING_STATUS] == "projected"
    assert frame.loc[12, C.OFF_DIAGONAL_RATIO] == 0.5
    assert frame.loc[12, C.ACTIVE_EXPERTS] == 200
    assert frame.loc[2, C.AUTOTUNE_STATUS].startswith("failed")
    assert frame[C.SOURCE_RANK].isna().all()


def test_meta_dispatch_overrides() -> None:
    (sweep,) = parse_bench_moe(encode(minimal_report()), UploadMeta(dispatch="trace_a"))
    assert set(sweep.candidates[C.DISPATCH]) == {"trace_a"}
    assert sweep.run["dispatch"] == "trace_a"


def test_missing_optional_keys_are_null() -> None:
    doc = minimal_report()
    for key in ("search", "base_config", "rankings"):
        del doc[key]
    row = doc["results"][0]
    for key in ("actual_config", "instrumentation", "raw_data", "routing_control", "bottleneck"):
        del row[key]
    (sweep,) = parse_bench_moe(encode(doc), UploadMeta())
    frame = sweep.candidates
    assert sweep.run["search_json"] is None and sweep.run["rankings_json"] is None
    assert frame.loc[0, C.MOE_EP_SIZE] == 4  # derived: DEP at world size 4
    assert pd.isna(frame.loc[0, C.COMM_ACTUAL]) and frame.loc[0, C.COMM] == "AUTO"
    assert pd.isna(frame.loc[0, C.N_ITERS]) and pd.isna(frame.loc[0, C.AUTOTUNE_STATUS])
    assert sweep.run[C.QUANT] == "BF16"  # quant_algo null means unquantised


def test_hardware_from_meta_when_device_unknown() -> None:
    doc = minimal_report()
    doc["environment"]["device_name"] = "NVIDIA Graphics Device"
    with pytest.raises(InputError) as info:
        parse_bench_moe(encode(doc), UploadMeta())
    assert info.value.field == "hardware" and "NVIDIA Graphics Device" in info.value.problem
    (sweep,) = parse_bench_moe(encode(doc), UploadMeta(hardware="gb300 nvl72"))
    assert sweep.run[C.HARDWARE] == "GB300"


# --- hostile input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        pytest.param(body, status, field, id=case_id)
        for case_id, body, status, field in HOSTILE_CASES
    ],
)
def test_hostile_upload_refused(body: bytes, status: int, field: str) -> None:
    with pytest.raises(InputError) as info:
        parse_upload(body, UploadMeta())
    assert info.value.status == status, info.value
    assert field in info.value.field, info.value
    assert info.value.problem  # a message a person can act on
    assert len(str(info.value)) < 2_000  # never echoes a huge body back


def test_hostile_messages_are_specific() -> None:
    cases = {case_id: (body, field) for case_id, body, _, field in HOSTILE_CASES}
    messages = {}
    for case_id in ("score_string", "status_unknown", "results_empty", "schema_v2_legacy",
                    "truncated_json", "top_level_array", "num_tokens_zero"):  # fmt: skip
        with pytest.raises(InputError) as info:
            parse_upload(cases[case_id][0], UploadMeta())
        messages[case_id] = str(info.value)
    assert messages["score_string"] == "results[0].latency_ms.score: expected a number, got string"
    assert "success, skipped, failed" in messages["status_unknown"]
    assert messages["results_empty"] == "results: no candidates"
    assert (
        "pre-merge bench_moe.py report (schema_version 2, latency in µs)"
        in messages["schema_v2_legacy"]
    )
    assert "re-run" in messages["schema_v2_legacy"].lower()
    assert messages["truncated_json"].startswith("invalid JSON")
    assert "array" in messages["top_level_array"]
    assert "positive" in messages["num_tokens_zero"]


@pytest.mark.parametrize(
    ("body", "check"), [pytest.param(b, c, id=i) for i, b, c in ACCEPTED_ODD_CASES]
)
def test_odd_but_valid_upload_accepted(body: bytes, check: Any) -> None:
    (sweep,) = parse_upload(body, UploadMeta())
    check(sweep.run, sweep.candidates)


@pytest.mark.parametrize(
    ("kwargs", "status", "field"),
    [pytest.param(k, s, f, id=i) for i, k, s, f in HOSTILE_META_CASES],
)
def test_hostile_meta_refused(kwargs: dict[str, Any], status: int, field: str) -> None:
    with pytest.raises(InputError) as info:
        parse_upload(encode(minimal_report()), UploadMeta(**kwargs))
    assert info.value.status == status
    assert info.value.field == field


def test_notes_with_html_and_sql_kept_verbatim() -> None:
    notes = "<b>bold</b>\n'; DROP TABLE runs; --\ttabbed"
    (sweep,) = parse_upload(encode(minimal_report()), UploadMeta(notes=notes))
    assert sweep.run["notes"] == notes


# --- older formats --------------------------------------------------------------------------


def test_schema_v2_refused_with_guidance() -> None:
    with pytest.raises(UnsupportedFormat) as info:
        parse_path(FIXTURES / "bench_moe_schema_v2.json", UploadMeta())
    assert info.value.status == 422
    assert "schema_version 2" in info.value.problem and "µs" in info.value.problem


def test_early_package_version_parses_with_nulls() -> None:
    (sweep,) = parse_path(FIXTURES / "bench_moe_early_package.json", UploadMeta())
    frame = sweep.candidates
    assert sweep.run[C.SOURCE_FORMAT] == "bench_moe_legacy"
    assert frame.loc[0, C.SCORE_MS] == 0.1
    assert frame[C.RAW_SCORE_MS].isna().all() and frame[C.N_ITERS].isna().all()
    check_sweep_contract(sweep.run, frame)


# --- failures, hardware, dispatch ------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason", "autotune", "expected"),
    [
        ("success", None, "success", None),
        ("success", None, "failed:RuntimeError: x", "autotune_failed"),
        ("failed", "build error: OutOfMemoryError: CUDA out of memory", None, "build_error"),
        ("failed", "timed phase error: RuntimeError: x", None, "timed_phase_error"),
        ("failed", "incomplete: process died before this candidate finished (crash) (x)", None, "incomplete"),
        ("failed", "watchdog_timeout: exceeded 60s; suspected NCCL/CUDA hang (x)", None, "watchdog_timeout"),
        ("failed", "cuda_context_poisoned_after_success: x", None, "cuda_context_poisoned_after_success"),
        ("skipped", "cuda_context_poisoned_upstream: prior candidate poisoned", None, "cuda_context_poisoned_upstream"),
        ("skipped", "routing plan error: ValueError: x", None, "routing_error"),
        ("skipped", "routing materialise error: x", None, "routing_error"),
        ("skipped", "native logits projection error: x", None, "routing_error"),
        ("skipped", "routing_realization rejected by projection_policy=reject: x", None, "routing_error"),
        ("skipped", "requested backend 'CUTEDSL' fell back to 'CUTLASS'", None, "backend_fallback"),
        ("skipped", "moe_ep_size * moe_tp_size = 6 must equal world_size=8", None, "pruned_unsupported"),
        ("skipped", "DENSEGEMM does not support EP (moe_ep_size=8)", None, "pruned_unsupported"),
        ("skipped", "comm_method=DEEPEP has no effect at world_size=1", None, "pruned_unsupported"),
        ("skipped", "invalid", None, "pruned_unsupported"),
        ("skipped", "time_budget_exceeded", None, "budget_truncation"),
        ("skipped", "truncated by --max_configs=100", None, "budget_truncation"),
        ("failed", "something new: x", None, "other"),
        ("failed", None, None, "other"),
    ],
)  # fmt: skip
def test_categorize(
    status: str, reason: str | None, autotune: str | None, expected: str | None
) -> None:
    assert categorize(status, reason, autotune) == expected
    assert expected is None or expected in CATEGORIES


@pytest.mark.parametrize(
    ("device", "sm", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", 90, "H100"),
        ("NVIDIA H200", 90, "H200"),
        ("NVIDIA B200", 100, "B200"),
        ("NVIDIA GB200", 100, "GB200"),
        ("NVIDIA GB300", 103, "GB300"),
        ("NVIDIA GB300 NVL72 something", None, "GB300"),
        ("NVIDIA B300 SXM6 AC", 103, "B300"),
        ("NVIDIA GH200 480GB", 90, "GH200"),
        ("NVIDIA H100 80GB HBM3", 100, None),  # name and SM disagree: ambiguous
        ("NVIDIA Graphics Device", 103, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_infer_hardware(device: str | None, sm: int | None, expected: str | None) -> None:
    assert infer_hardware(device, sm, 8) == expected


def test_normalize_hardware_label() -> None:
    assert normalize_hardware_label("gb300") == "GB300"
    assert normalize_hardware_label(" B300 HGX ") == "B300"
    assert normalize_hardware_label("h100 sxm") == "H100"
    assert normalize_hardware_label("mi355x") == "MI355X"
    for bad in ("", "x" * 65, "GB\x00300", "<GB300>", "a/b"):
        with pytest.raises(InputError):
            normalize_hardware_label(bad)


def test_dispatch_label() -> None:
    assert dispatch_label("balanced_alltoall", "balanced") == "balanced"
    assert dispatch_label("receiver_hotspot,hotness=0.75,rank=0", "balanced") == "recv_hotspot"
    assert (
        dispatch_label("balanced_alltoall", "balanced", has_per_rank_list=True) == "per_rank_skew"
    )
    assert dispatch_label("local_only", "balanced") == "local_only"
    assert dispatch_label("ring", "balanced") == "ring"
    assert dispatch_label("balanced_alltoall", "hotspot,hotness=0.5") == (
        "balanced_alltoall;expert=hotspot,hotness=0.5"
    )
    assert dispatch_label(None, None) is None


def test_parse_does_not_depend_on_row_order() -> None:
    doc = minimal_report()
    (a,) = parse_bench_moe(encode(doc), UploadMeta())
    doc["results"].reverse()
    (b,) = parse_bench_moe(encode(doc), UploadMeta())
    assert list(a.candidates[C.STATUS]) == list(reversed(list(b.candidates[C.STATUS])))


def _leaf_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            paths += _leaf_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:2]):
            paths += _leaf_paths(value, (*prefix, index))
    return paths


@pytest.mark.parametrize("junk", [[], {}, [[1]], {"a": {}}, "x", -1, 1.5, True, None, 2**80])
def test_any_value_anywhere_is_accepted_or_refused_cleanly(junk: Any) -> None:
    """Replacing any single value of a valid report never crashes the parser: it either
    parses or raises InputError (never TypeError/KeyError/AttributeError...)."""
    template = minimal_report()
    for path in _leaf_paths(template):
        doc = minimal_report()
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = junk
        with contextlib.suppress(InputError):
            parse_upload(encode(doc), UploadMeta())


def test_nonfinite_inside_results_survive_in_json_columns() -> None:
    doc = minimal_report()
    doc["results"][0]["latency_ms"]["per_rank"] = {"rank0": {"max": float("inf")}}
    doc["results"][0]["future"] = float("nan")
    (sweep,) = parse_bench_moe(encode(doc), UploadMeta())
    per_rank = sweep.candidates.loc[0, C.PER_RANK_JSON]
    assert '"max":Infinity' in per_rank and loads(per_rank)["per_rank"]["rank0"]["max"] == math.inf
    assert math.isnan(loads(sweep.candidates.loc[0, C.EXTRA_JSON])["future"])


# --- parallel (forked) parsing of big reports ------------------------------------------------


def _big_report(rows: int) -> dict[str, Any]:
    doc = minimal_report()
    template = doc["results"]
    doc["results"] = []
    for i in range(rows):
        row = json.loads(json.dumps(template[i % 2]))
        row["workload"]["num_tokens"] = i + 1
        doc["results"].append(row)
    return doc


@pytest.mark.parametrize("indent", [None, 2])
def test_forked_parse_equals_sequential(indent: int | None) -> None:
    doc = _big_report(301)
    doc["results"][250]["unknown_key"] = {"Infinity": "NaN"}
    doc["results"][7]["latency_ms"]["per_rank"] = {"rank0": {"max": float("inf")}}
    for i in (3, 291):  # per-value warnings must add up the same way in both paths
        doc["results"][i]["actual_config"]["comm_method"] = "NewComm"
        doc["results"][i + 2]["requested_config"]["parallel_mode"] = "QTP9"
    raw = json.dumps(doc, indent=indent).encode()
    meta = UploadMeta(hardware="H100")  # disagrees with the device: a run-level warning
    forked = parse_parallel(raw, meta, 3)
    assert forked is not None
    (sequential,) = parse_bench_moe(raw, meta, workers=1)
    (sweep,) = forked
    pd.testing.assert_frame_equal(sweep.candidates, sequential.candidates)
    assert sweep.run == sequential.run
    assert list(sweep.candidates[C.CANDIDATE_INDEX]) == list(range(301))
    assert '"max":Infinity' in sweep.candidates.loc[7, C.PER_RANK_JSON]


def test_forked_parse_reports_global_row_index() -> None:
    doc = _big_report(200)
    doc["results"][180]["latency_ms"]["score"] = "slow"
    with pytest.raises(InputError) as info:
        parse_parallel(json.dumps(doc).encode(), UploadMeta(), 2)
    assert info.value.field == "results[180].latency_ms.score"
    doc = _big_report(200)
    doc["results"][150]["latency_us"] = {"score": 1.0}
    with pytest.raises(UnsupportedFormat):
        parse_parallel(json.dumps(doc).encode(), UploadMeta(), 2)


def test_forked_parse_falls_back_when_unsure(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = json.dumps(_big_report(200)).encode()
    # broken JSON inside the second half: the sequential parser gives the message
    broken = raw.replace(b'"num_tokens": 150,', b'"num_tokens": 150,,')
    assert parse_parallel(broken, UploadMeta(), 2) is None
    monkeypatch.setattr("ingest.forked.PARALLEL_MIN_BYTES", 0)
    with pytest.raises(InputError, match="invalid JSON"):
        parse_bench_moe(broken, UploadMeta())
    # results not followed by rankings / unusual key order: no split, same answer
    doc = _big_report(50)
    reordered = {"results": doc.pop("results"), **doc}
    raw2 = json.dumps(reordered).encode()
    assert parse_parallel(raw2, UploadMeta(), 2) is None
    (sweep,) = parse_bench_moe(raw2, UploadMeta())
    assert len(sweep.candidates) == 50
    # a "results" string that looks like the array start but is not
    tricky = json.dumps({"notes": '"results": [', **_big_report(40)}).encode()
    (sweep,) = parse_bench_moe(tricky, UploadMeta())
    assert len(sweep.candidates) == 40
