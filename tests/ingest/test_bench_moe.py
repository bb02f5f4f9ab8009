# ruff: noqa: E501 - the case tables read best one case per line
"""The bench_moe parser (ingest.bench_moe, bench_moe_rows) on our hand-written fixtures and
hostile input; the full example report is in test_bench_moe_example.py, the parallel path
in test_parallel_parse.py."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pandas as pd
import pytest

from analysis import columns as C
from ingest.bench_moe import dispatch_label, parse_bench_moe
from ingest.detect import parse_upload
from ingest.errors import InputError
from ingest.lenient_json import loads
from ingest.records import UploadMeta
from tests.factories import FIXTURES
from tests.factories.hostile import (
    ACCEPTED_ODD_CASES,
    HOSTILE_CASES,
    HOSTILE_META_CASES,
    encode,
    minimal_report,
)
from tests.ingest.contract import check_sweep_contract


@pytest.fixture(scope="module")
def mixed() -> tuple[dict[str, Any], pd.DataFrame]:
    raw = (FIXTURES / "bench_moe_ws8_mixed.json").read_bytes()
    (sweep,) = parse_bench_moe(raw, UploadMeta(trtllm_version="1.3.0rc26", run_date="2026-09-13"))
    return sweep.run, sweep.candidates


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


# --- dispatch labels, robustness ---------------------------------------------------------


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
