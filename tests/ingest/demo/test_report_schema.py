"""Demo reports follow the bench_moe schema: key orders, default blocks, scores from
the raw samples, rankings, the failure and skip taxonomy."""

from __future__ import annotations

import math

from ingest.demo import generate as demo
from tests.ingest.demo.reference import (
    ACTUAL_KEYS,
    CONFIG_KEYS,
    DEFAULT_LATENCY,
    DEFAULT_RAW,
    ENTRY_KEYS,
    ENV_KEYS,
    MODEL_KEYS,
    PRUNED_INSTR,
    ROW_KEYS,
    STAT_KEYS,
    TOP_KEYS,
    all_rows,
    rankings_ref,
    score_ref,
    stats,
)


def check_report_shape(rep):
    assert list(rep) == TOP_KEYS
    assert rep["benchmark"] == "bench_moe"
    assert list(rep["environment"]) == ENV_KEYS
    assert list(rep["model"]) == MODEL_KEYS
    assert rep["model"]["swiglu_limit"] == math.inf
    assert list(rep["base_config"]) == CONFIG_KEYS
    assert list(rep["search"]) == [
        "mode",
        "backends",
        "parallel_modes",
        "comm_methods",
        "cuda_graph_options",
        "combine_precision_options",
    ]
    ws = rep["environment"]["world_size"]
    for row in rep["results"]:
        assert list(row) == ROW_KEYS
        assert list(row["requested_config"]) == CONFIG_KEYS
        assert list(row["actual_config"]) == ACTUAL_KEYS
        assert row["status"] in ("success", "skipped", "failed")
        assert list(row["status_per_rank"]) == [f"rank{i}" for i in range(ws)]
        assert len(row["workload"]["per_rank_num_tokens"]) == ws
        assert row["phase_times_ms"] == {"agg": {}, "per_rank": {}}
        assert row["overlap"] == {"overlap_ms": None, "overlap_ratio": None}
        assert row["kernel_breakdown"] == {"moe_forward_kernels": [], "other_kernels": []}
        if row["status"] == "success":
            assert row["skip_reason"] is None
            assert row["routing_control"] is not None
            assert list(row["routing_control"]) == ["requested", "actual"]
            lat = row["latency_ms"]
            assert list(lat) == [
                "score",
                "score_type",
                "raw_score",
                "raw_score_type",
                "iter_max_stats",
                "iter_max_outliers",
                "per_rank",
            ]
            assert list(lat["iter_max_stats"]) == STAT_KEYS
            assert row["actual_config"]["backend"] == row["requested_config"]["backend"]
            assert set(row["status_per_rank"].values()) == {"success"}
        else:
            assert isinstance(row["skip_reason"], str) and row["skip_reason"]
            assert row["latency_ms"] == DEFAULT_LATENCY
            assert row["raw_data"] == DEFAULT_RAW
            assert row["routing_control"] is None
        if row["status"] == "skipped":
            assert list(row["instrumentation"]) == PRUNED_INSTR
            assert row["actual_config"] == dict.fromkeys(ACTUAL_KEYS)
            assert set(row["status_per_rank"].values()) == {"skipped"}
        if row["skip_reason"] and row["skip_reason"].startswith("watchdog_timeout:"):
            assert set(row["status_per_rank"].values()) == {"timeout"}


def test_schema_small(small):
    check_report_shape(small)


def test_schema_demo(demo_set):
    for rep, _ in demo_set:
        check_report_shape(rep)


def test_pruned_rows_first_per_workload(demo_set):
    for rep, _ in demo_set:
        by_nt = {}
        for row in rep["results"]:
            by_nt.setdefault(row["workload"]["num_tokens"], []).append(row)
        nts = [r["workload"]["num_tokens"] for r in rep["results"]]
        assert nts == sorted(nts)  # workloads are contiguous blocks
        for rows in by_nt.values():
            pruned = [
                r["status"] == "skipped" and r["skip_reason"] != "time_budget_exceeded"
                for r in rows
            ]
            assert pruned == sorted(pruned, reverse=True)


def test_score_recomputed_from_raw_samples(demo_set, small):
    n_checked = n_outliers = 0
    for row in all_rows([small] + [r for r, _ in demo_set[:8]]):
        if row["status"] != "success":
            continue
        per_rank = row["raw_data"]["forward_times_ms"]["per_rank"]
        assert all(len(v) == 12 for v in per_rank.values())
        ref = score_ref(per_rank)
        lat = row["latency_ms"]
        assert lat["score"] == ref["score"]
        assert lat["raw_score"] == ref["raw"]
        assert lat["score_type"] == ref["type"]
        out = lat["iter_max_outliers"]
        assert out["method"] == "modified_z_score_mad" and out["threshold"] == 3.5
        assert out["center"] == ref["center"] and out["mad"] == ref["mad"]
        assert [it["index"] for it in out["items"]] == ref["outliers"]
        assert out["count"] == len(ref["outliers"])
        assert out["samples_total"] == 12
        assert lat["iter_max_stats"] == stats(ref["iter_max"])
        for name, samples in per_rank.items():
            assert lat["per_rank"][name] == stats(samples)
        for it in out["items"]:
            assert it["value"] == ref["iter_max"][it["index"]]
            assert it["modified_z_score"] == 0.6745 * (it["value"] - ref["center"]) / ref["mad"]
            assert it["direction"] == ("high" if it["value"] > ref["center"] else "low")
        n_checked += 1
        n_outliers += bool(ref["outliers"])
        if out["items"] and all(it["direction"] == "high" for it in out["items"]):
            assert lat["score"] < lat["raw_score"]
    assert n_checked > 1000
    assert 0.05 * n_checked < n_outliers < 0.5 * n_checked  # "occasional"


def test_compute_score_helper_agrees():
    rep = demo.generate_report("qwen3_8", "GB300", "NVFP4", 16, [128], seed=2)
    for row in rep["results"]:
        if row["status"] == "success":
            got = demo.compute_score(row["raw_data"]["forward_times_ms"]["per_rank"])
            assert got["score"] == row["latency_ms"]["score"]


def test_few_iters_uses_median():
    rep = demo.generate_report(
        "kimi_k2", "GB300", "NVFP4", 4, [32, 64], seed=1, iters=6, cuda_graph=[True]
    )
    ok = [r for r in rep["results"] if r["status"] == "success"]
    assert ok
    for row in ok:
        per_rank = row["raw_data"]["forward_times_ms"]["per_rank"]
        assert all(len(v) == 6 for v in per_rank.values())
        lat = row["latency_ms"]
        assert lat["score_type"] == "slowest_rank_median"
        assert lat["score"] == score_ref(per_rank)["score"]
        assert lat["iter_max_outliers"] == {
            "method": "disabled_insufficient_samples",
            "count": 0,
            "samples_used": 6,
            "samples_total": 6,
            "items": [],
        }


def test_without_raw_samples():
    rep = demo.generate_report(
        "glm_5", "H200", "FP8_BLOCK_SCALES", 8, [64], seed=1, with_raw_samples=False
    )
    for row in rep["results"]:
        assert row["raw_data"]["forward_times_ms"] == {"per_rank": {}}
    assert any(r["latency_ms"]["score"] is not None for r in rep["results"])


def test_rankings_follow_section_3(demo_set, small, b300_cross):
    reps = [small, b300_cross] + [r for r, _ in demo_set]
    saw_autotune_failed = False
    for rep in reps:
        assert rep["rankings"] == rankings_ref(rep["results"])
        keys = [(g["num_tokens"], g["parallel_mode"]) for g in rep["rankings"]]
        assert keys == sorted(keys)
        for g in rep["rankings"]:
            assert list(g) == ["num_tokens", "parallel_mode", "best", "ranking"]
            for e in g["ranking"]:
                assert list(e) == ENTRY_KEYS
            scores = [e["score_ms"] for e in g["ranking"]]
            nums = [s for s in scores if s is not None]
            assert scores == nums + [None] * (len(scores) - len(nums))
            assert nums == sorted(nums)
            if g["best"] is not None:
                assert g["best"]["status"] == "success"
                assert not (g["best"]["autotune_status"] or "").startswith("failed")
            for e in g["ranking"]:
                if (e["autotune_status"] or "").startswith("failed") and e["score_ms"]:
                    saw_autotune_failed = True
                    assert e is not g["best"] and e != g["best"]
    assert saw_autotune_failed


def test_failure_and_skip_taxonomy(demo_set):
    reasons = [r["skip_reason"] for r in all_rows([rep for rep, _ in demo_set]) if r["skip_reason"]]
    prefixes = {s.split(":")[0] for s in reasons}
    assert "timed phase error" in prefixes
    assert "build error" in prefixes
    assert "watchdog_timeout" in prefixes
    assert "time_budget_exceeded" in reasons
    assert any(s.startswith("timed phase error: OutOfMemoryError:") for s in reasons)
    assert any(s.startswith("comm_method=") and "requires" in s for s in reasons)
    assert any("does not support" in s for s in reasons)
    statuses = [r["status"] for r in all_rows([rep for rep, _ in demo_set])]
    n = len(statuses)
    assert statuses.count("success") > 0.6 * n
    assert 0 < statuses.count("failed") < 0.1 * n


def test_oom_only_at_large_token_counts(demo_set):
    for row in all_rows([rep for rep, _ in demo_set]):
        if (row["skip_reason"] or "").startswith("timed phase error: OutOfMemoryError"):
            assert row["workload"]["num_tokens"] >= 4096
            assert row["instrumentation"]["autotune_status"] == "success"
            assert row["actual_config"]["backend"] == row["requested_config"]["backend"]
