# ruff: noqa: E501 - one case per line reads best
"""Malformed and hostile uploads, reusable by parser tests and HTTP tests.

``HOSTILE_CASES``: (id, body bytes, expected HTTP status, expected substring of the
InputError ``field``) for bodies every parser entry point must refuse.
``ACCEPTED_ODD_CASES``: (id, body bytes, check) for bodies that look odd but are valid
and must be accepted verbatim (HTML/SQL text is data, not an attack on the parser).
``HOSTILE_META_CASES``: (id, UploadMeta kwargs, status, field) for bad upload metadata.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any


def minimal_report() -> dict[str, Any]:
    """A small valid bench_moe report (2 rows, world size 4, NVIDIA B200)."""
    row = {
        "workload": {
            "num_tokens": 128,
            "per_rank_num_tokens": [32, 32, 32, 32],
            "routing_control": {
                "routing_mode": "native",
                "projection_policy": "project",
                "comm_pattern": "balanced_alltoall",
                "expert_pattern": "balanced",
                "routing_pattern_file": None,
                "per_rank_num_tokens": None,
                "routing_dump_matrix": False,
                "seed": 0,
            },
        },
        "requested_config": {
            "backend": "TRTLLM",
            "parallel_mode": "DEP",
            "moe_ep_size": None,
            "moe_tp_size": None,
            "enable_attention_dp": None,
            "comm_method": "AUTO",
            "cuda_graph": True,
            "use_low_precision_moe_combine": False,
        },
        "actual_config": {
            "backend": "TRTLLM",
            "comm_method": "NVLinkOneSided",
            "comm_fallback_reason": None,
            "scheduler_kind": "EXTERNAL_COMM",
            "moe_ep_size": 4,
            "moe_tp_size": 1,
            "enable_attention_dp": True,
            "num_chunks": 1,
        },
        "status": "success",
        "skip_reason": None,
        "status_per_rank": {f"rank{r}": "success" for r in range(4)},
        "instrumentation": {"level": "summary", "autotune_status": "success"},
        "latency_ms": {
            "score": 0.1,
            "score_type": "slowest_rank_median",
            "raw_score": 0.11,
            "raw_score_type": "slowest_rank_mean",
            "iter_max_stats": {
                "mean": 0.11, "median": 0.1, "stdev": 0.01, "min": 0.09, "max": 0.13, "p90": 0.12
            },
            "iter_max_outliers": {"method": "disabled_insufficient_samples", "count": 0},
            "per_rank": {},
        },
        "phase_times_ms": {"agg": {}, "per_rank": {}},
        "overlap": {"overlap_ms": None, "overlap_ratio": None},
        "bottleneck": None,
        "kernel_breakdown": {"moe_forward_kernels": [], "other_kernels": []},
        "raw_data": {
            "forward_times_ms": {"per_rank": {f"rank{r}": [0.1, 0.1, 0.1] for r in range(4)}},
            "kernel_times_ms": {"moe_forward_kernels": [], "other_kernels": []},
        },
        "routing_control": None,
    }  # fmt: skip
    second = copy.deepcopy(row)
    second["requested_config"]["parallel_mode"] = "TEP"
    second["status"] = "skipped"
    second["skip_reason"] = "time_budget_exceeded"
    second["actual_config"] = {k: None for k in row["actual_config"]}
    second["latency_ms"]["score"] = None
    return {
        "benchmark": "bench_moe",
        "environment": {
            "world_size": 4,
            "device_name": "NVIDIA B200",
            "sm": 100,
            "trtllm_commit": "0abc123",
        },  # fmt: skip
        "model": {
            "name": "tiny",
            "num_experts": 8,
            "top_k": 2,
            "hidden_size": 64,
            "intermediate_size": 32,
            "quant_algo": None,
            "routing_method": "RENORMALIZE",
            "swiglu_limit": float("inf"),
        },  # fmt: skip
        "search": {"mode": "none"},
        "base_config": dict(row["requested_config"]),
        "results": [row, second],
        "rankings": [],
    }


def encode(doc: Any) -> bytes:
    """JSON bytes the way bench_moe writes them (bare Infinity allowed)."""
    return json.dumps(doc, indent=2).encode()


def _mutated(change: Callable[[dict[str, Any]], Any]) -> bytes:
    doc = minimal_report()
    change(doc)
    return encode(doc)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        node: Any = doc
        keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split("/")]
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return change


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        node: Any = doc
        keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split("/")]
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return change


_VALID = encode(minimal_report())

HOSTILE_CASES: list[tuple[str, bytes, int, str]] = [
    ("truncated_json", _VALID[: len(_VALID) // 2], 422, ""),
    ("empty_body", b"", 400, ""),
    ("whitespace_only", b"   \n\t ", 400, ""),
    ("top_level_array", b"[1, 2, 3]", 422, ""),
    ("top_level_string", b'"bench_moe"', 415, ""),
    ("not_json_text", b"hello, this is not a report\n", 415, ""),
    ("binary_blob", bytes(range(256)) * 4, 415, ""),
    ("xlsx_zip_magic", b"PK\x03\x04" + b"\x00" * 200, 415, ""),
    ("gzip_magic", b"\x1f\x8b\x08\x00" + b"\x00" * 100, 415, ""),
    ("non_utf8_bytes", _VALID.replace(b'"tiny"', b'"ti\xffny"'), 422, ""),
    ("utf16_bom", "\ufeff".encode("utf-16-le") + _VALID.decode().encode("utf-16-le"), 415, ""),
    ("deeply_nested_junk", b'{"benchmark": "bench_moe", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 422, ""),
    ("json_object_unknown", b'{"hello": "world"}', 422, ""),
    ("wrong_benchmark", _mutated(_set("benchmark", "bench_gemm")), 422, "benchmark"),
    ("benchmark_number", _mutated(_set("benchmark", 7)), 422, "benchmark"),
    ("missing_environment", _mutated(_delete("environment")), 422, "environment"),
    ("missing_model", _mutated(_delete("model")), 422, "model"),
    ("missing_results", _mutated(_delete("results")), 422, "results"),
    ("results_not_list", _mutated(_set("results", {"0": {}})), 422, "results"),
    ("results_empty", _mutated(_set("results", [])), 422, "results"),
    ("row_not_object", _mutated(_set("results/1", "row")), 422, "results[1]"),
    ("world_size_missing", _mutated(_delete("environment/world_size")), 422, "environment.world_size"),
    ("world_size_zero", _mutated(_set("environment/world_size", 0)), 422, "environment.world_size"),
    ("world_size_string", _mutated(_set("environment/world_size", "4")), 422, "environment.world_size"),
    ("score_string", _mutated(_set("results/0/latency_ms/score", "0.1")), 422, "results[0].latency_ms.score"),
    ("score_negative_success", _mutated(_set("results/0/latency_ms/score", -1.0)), 422, "results[0].latency_ms.score"),
    ("score_infinite_success", _mutated(_set("results/0/latency_ms/score", float("inf"))), 422, "results[0].latency_ms.score"),
    ("score_nan_success", _mutated(_set("results/0/latency_ms/score", float("nan"))), 422, "results[0].latency_ms.score"),
    ("status_unknown", _mutated(_set("results/0/status", "oom")), 422, "results[0].status"),
    ("status_number", _mutated(_set("results/1/status", 1)), 422, "results[1].status"),
    ("num_tokens_zero", _mutated(_set("results/0/workload/num_tokens", 0)), 422, "results[0].workload.num_tokens"),
    ("num_tokens_float", _mutated(_set("results/0/workload/num_tokens", 12.5)), 422, "results[0].workload.num_tokens"),
    ("num_tokens_huge", _mutated(_set("results/0/workload/num_tokens", 10**30)), 422, "results[0].workload.num_tokens"),
    ("num_tokens_bool", _mutated(_set("results/0/workload/num_tokens", True)), 422, "results[0].workload.num_tokens"),
    ("workload_missing", _mutated(_delete("results/0/workload")), 422, "results[0].workload"),
    ("parallel_mode_unknown_success", _mutated(_set("results/0/requested_config/parallel_mode", "XTP2EP2")), 422, "results[0].requested_config.parallel_mode"),
    ("parallel_mode_list", _mutated(_set("results/0/requested_config/parallel_mode", ["DEP"])), 422, "results[0].requested_config.parallel_mode"),
    ("cuda_graph_string", _mutated(_set("results/0/requested_config/cuda_graph", "true")), 422, "results[0].requested_config.cuda_graph"),
    ("ep_size_huge", _mutated(_set("results/0/actual_config/moe_ep_size", 2**70)), 422, "results[0].actual_config.moe_ep_size"),
    ("latency_block_string", _mutated(_set("results/0/latency_ms", "fast")), 422, "results[0].latency_ms"),
    ("iter_stats_string", _mutated(_set("results/0/latency_ms/iter_max_stats/p90", "x")), 422, "results[0].latency_ms.iter_max_stats.p90"),
    ("per_rank_tokens_strings", _mutated(_set("results/0/workload/per_rank_num_tokens", ["a"])), 422, "results[0].workload.per_rank_num_tokens"),
    ("raw_samples_not_list", _mutated(_set("results/0/raw_data/forward_times_ms/per_rank/rank0", 3)), 422, "results[0].raw_data.forward_times_ms.per_rank.rank0"),
    ("backend_control_chars", _mutated(_set("results/0/requested_config/backend", "TRT\x1b[31mLLM")), 422, "results[0].requested_config.backend"),
    ("model_name_too_long", _mutated(_set("model/name", "m" * 10_000)), 422, "model.name"),
    ("model_experts_string", _mutated(_set("model/num_experts", "384")), 422, "model.num_experts"),
    ("schema_v2_legacy", _mutated(_set("schema_version", 2)), 422, ""),
    ("legacy_latency_us", _mutated(_set("results/0/latency_us", {"score": 100.0})), 422, ""),
    ("lone_surrogate", _VALID.replace(b'"tiny"', b'"\\ud800"'), 422, ""),
    ("trailing_garbage", _VALID + b"\n<script>alert(1)</script>", 422, ""),
    ("csv_wrong_header", b"world_size,num_tokens,dispatch,cuda_graph\n4,1,balanced,on\n", 422, "rank"),
]  # fmt: skip


def _check_html_preserved(run: dict[str, Any], candidates: Any) -> None:
    assert run["model"] == "<script>alert('x')</script>"


def _check_sql_preserved(run: dict[str, Any], candidates: Any) -> None:
    assert candidates["skip_reason"].iloc[1] == "time_budget_exceeded'; DROP TABLE runs; --"


def _check_infinity_in_string(run: dict[str, Any], candidates: Any) -> None:
    assert candidates["skip_reason"].iloc[1] == 'time_budget_exceeded: "x": Infinity, NaN'


def _check_bom(run: dict[str, Any], candidates: Any) -> None:
    assert len(candidates) == 2


ACCEPTED_ODD_CASES: list[tuple[str, bytes, Callable[[dict[str, Any], Any], None]]] = [
    ("html_in_model_name", _mutated(_set("model/name", "<script>alert('x')</script>")), _check_html_preserved),
    ("sql_in_skip_reason", _mutated(_set("results/1/skip_reason", "time_budget_exceeded'; DROP TABLE runs; --")), _check_sql_preserved),
    ("infinity_inside_string", _mutated(_set("results/1/skip_reason", 'time_budget_exceeded: "x": Infinity, NaN')), _check_infinity_in_string),
    ("utf8_bom", b"\xef\xbb\xbf" + _VALID, _check_bom),
]  # fmt: skip

HOSTILE_META_CASES: list[tuple[str, dict[str, Any], int, str]] = [
    ("notes_control_chars", {"notes": "ok\x00\x1b[2J"}, 422, "notes"),
    ("notes_too_long", {"notes": "x" * 20_000}, 422, "notes"),
    ("hardware_control_chars", {"hardware": "GB300\r\nX-Injected: 1"}, 422, "hardware"),
    ("hardware_too_long", {"hardware": "G" * 65}, 422, "hardware"),
    ("hardware_garbage", {"hardware": "<b>GB300</b>"}, 422, "hardware"),
    ("run_date_not_iso", {"run_date": "13/09/2026"}, 422, "run_date"),
    ("run_date_impossible", {"run_date": "2026-02-30"}, 422, "run_date"),
    ("ci_url_javascript", {"ci_url": "javascript:alert(1)"}, 422, "ci_url"),
    ("commit_conflict", {"trtllm_commit": "ffffffff"}, 422, "trtllm_commit"),
    ("dispatch_garbage", {"dispatch": "<img src=x>"}, 422, "dispatch"),
]

# Upload metadata as the API takes it (query parameters or form fields) and the CLI takes
# it (``--field-name value``): field name → text. Both front ends validate through
# ingest.metadata.UploadMetadata, so every case must get the same answer from both.
# BAD: (id, values, the field the refusal names).
BAD_UPLOAD_META: list[tuple[str, dict[str, str], str]] = [
    ("dispatch_colon", {"dispatch": "EP:8"}, "dispatch"),
    ("dispatch_65_chars", {"dispatch": "d" * 65}, "dispatch"),
    ("dispatch_html", {"dispatch": "<img src=x>"}, "dispatch"),
    ("notes_5000_chars", {"notes": "n" * 5000}, "notes"),
    ("notes_bell", {"notes": "bell\x07"}, "notes"),
    ("notes_escape_sequence", {"notes": "ok\x1b[2J"}, "notes"),
    ("notes_carriage_return", {"notes": "one\r\ntwo"}, "notes"),
    ("ci_url_2040_chars", {"ci_url": "https://ci.example/" + "x" * 2021}, "ci_url"),
    ("ci_url_javascript", {"ci_url": "javascript:alert(1)"}, "ci_url"),
    ("ci_url_with_space", {"ci_url": "https://ci.example/a b"}, "ci_url"),
    ("run_date_not_iso", {"run_date": "13/09/2026"}, "run_date"),
    ("run_date_impossible", {"run_date": "2026-02-30"}, "run_date"),
    ("hardware_injection", {"hardware": "GB300\n; DROP TABLE runs"}, "hardware"),
    ("hardware_33_chars", {"hardware": "G" * 33}, "hardware"),
    ("hardware_html", {"hardware": "<b>GB300</b>"}, "hardware"),
    ("trtllm_version_html", {"trtllm_version": "<script>"}, "trtllm_version"),
    ("trtllm_version_65_chars", {"trtllm_version": "v" * 65}, "trtllm_version"),
    ("trtllm_commit_not_hex", {"trtllm_commit": "not-a-sha!"}, "trtllm_commit"),
    ("trtllm_commit_3_digits", {"trtllm_commit": "abc"}, "trtllm_commit"),
]

# 4,000 characters (the limit) of HTML, SQL, newlines and tabs: data, kept verbatim
_LONG_NOTES = ("<b>x</b>\n'; DROP TABLE runs; --\t" * 200)[:3999] + "."

# GOOD: (id, values, what the stored run then says). No field appears in two cases, so
# all of them can also be sent together in one upload.
GOOD_UPLOAD_META: list[tuple[str, dict[str, str], dict[str, str]]] = [
    ("hardware_lower_with_suffix", {"hardware": " b200 nvl72 "}, {"hardware": "B200"}),
    ("dispatch_label", {"dispatch": "trace_a.v2+x"}, {"dispatch": "trace_a.v2+x"}),
    ("notes_4000_chars_html_sql_tabs", {"notes": _LONG_NOTES}, {"notes": _LONG_NOTES}),
    (
        "ci_url_2000_chars",
        {"ci_url": "https://ci.example/" + "x" * 1981},
        {"ci_url": "https://ci.example/" + "x" * 1981},
    ),
    ("run_date_iso", {"run_date": "2026-02-28"}, {"run_date": "2026-02-28"}),
    (
        "trtllm_version_with_space_and_plus",
        {"trtllm_version": "v1.3.0rc26+local build"},
        {"trtllm_version": "v1.3.0rc26+local build"},
    ),
]
