"""Tests for ingest.demo.generate: the synthetic bench_moe report generator."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import struct

import pytest

from ingest.demo import generate as demo

TOP_KEYS = ["benchmark", "environment", "model", "search", "base_config", "results", "rankings"]
ROW_KEYS = [
    "workload",
    "requested_config",
    "actual_config",
    "status",
    "skip_reason",
    "status_per_rank",
    "instrumentation",
    "latency_ms",
    "phase_times_ms",
    "overlap",
    "bottleneck",
    "kernel_breakdown",
    "raw_data",
    "routing_control",
]
CONFIG_KEYS = [
    "backend",
    "parallel_mode",
    "moe_ep_size",
    "moe_tp_size",
    "enable_attention_dp",
    "comm_method",
    "cuda_graph",
    "use_low_precision_moe_combine",
]
ACTUAL_KEYS = [
    "backend",
    "comm_method",
    "comm_fallback_reason",
    "scheduler_kind",
    "moe_ep_size",
    "moe_tp_size",
    "enable_attention_dp",
    "num_chunks",
]
ENTRY_KEYS = [
    "backend",
    "requested_backend",
    "comm_method",
    "cuda_graph",
    "use_low_precision_moe_combine",
    "score_ms",
    "raw_score_ms",
    "outlier_count",
    "status",
    "skip_reason",
    "autotune_status",
]
MODEL_KEYS = [
    "name",
    "num_experts",
    "top_k",
    "hidden_size",
    "intermediate_size",
    "quant_algo",
    "routing_method",
    "n_group",
    "topk_group",
    "n_shared_experts",
    "shared_expert_mode",
    "swiglu_alpha",
    "swiglu_beta",
    "swiglu_limit",
    "activation_type",
    "situ_beta",
    "situ_linear_beta",
    "routing_method_class",
]
ENV_KEYS = [
    "world_size",
    "world_size_per_node",
    "hostname",
    "username",
    "device_name",
    "sm",
    "cuda_version",
    "driver_version",
    "torch_version",
    "trtllm_commit",
    "platform",
    "nvlink_topology",
    "memory_type",
    "clock_locked",
    "cuda_graph_default",
]
STAT_KEYS = ["mean", "median", "stdev", "min", "max", "p90"]
DEFAULT_LATENCY = {
    "score": None,
    "score_type": "slowest_rank_trimmed_mean",
    "raw_score": None,
    "raw_score_type": "slowest_rank_mean",
    "iter_max_stats": {},
    "iter_max_outliers": {},
    "per_rank": {},
}
DEFAULT_RAW = {
    "forward_times_ms": {"per_rank": {}},
    "kernel_times_ms": {"moe_forward_kernels": [], "other_kernels": []},
}
PRUNED_INSTR = [
    "level",
    "cuda_graph",
    "cupti_available",
    "nsys_capture",
    "phase_timing_available",
    "kernel_breakdown_available",
]


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def demo_set():
    return demo.demo_reports()


@pytest.fixture(scope="module")
def small():
    """A small GB300 report covering all row kinds cheaply."""
    return demo.generate_report(
        "deepseek_v4_pro",
        "GB300",
        "NVFP4",
        8,
        [1, 16, 256, 4096, 32768],
        seed=3,
        time_budget_tail=3,
    )


@pytest.fixture(scope="module")
def b300_cross():
    return demo.generate_report(
        "deepseek_v4_pro", "B300", "NVFP4", 16, [2**j for j in range(0, 16)], seed=5
    )


def _rows(reports):
    for rep in reports:
        yield from rep["results"]


# ---------------------------------------------------------------- independent references


def _seq_mean(xs):
    s = 0.0
    for x in xs:
        s += x
    return s / len(xs)


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def _stats(xs):
    n = len(xs)
    mean = _seq_mean(xs)
    var = 0.0
    for x in xs:
        var += (x - mean) * (x - mean)
    s = sorted(xs)
    return {
        "mean": mean,
        "median": _median(xs),
        "stdev": math.sqrt(var / n),
        "min": s[0],
        "max": s[-1],
        "p90": s[round(0.9 * (n - 1))],
    }


def _score_ref(per_rank):
    """Schema section 2.5, written independently of ingest.demo.generate."""
    ranks = list(per_rank.values())
    n = min(len(r) for r in ranks)
    iter_max = [max(r[i] for r in ranks) for i in range(n)]
    raw = _seq_mean(iter_max)
    if n < 8:
        return {
            "score": _median(iter_max),
            "type": "slowest_rank_median",
            "raw": raw,
            "outliers": [],
            "iter_max": iter_max,
        }
    center = _median(iter_max)
    mad = _median([abs(x - center) for x in iter_max])
    outl = []
    for i, x in enumerate(iter_max):
        if mad == 0:
            if abs(x - center) > 0.05 * center:
                outl.append(i)
        elif abs(0.6745 * (x - center) / mad) > 3.5:
            outl.append(i)
    kept = [x for i, x in enumerate(iter_max) if i not in outl] or iter_max
    return {
        "score": _seq_mean(kept),
        "type": "slowest_rank_trimmed_mean",
        "raw": raw,
        "outliers": outl,
        "iter_max": iter_max,
        "center": center,
        "mad": mad,
    }


def _rankings_ref(results):
    groups = {}
    for r in results:
        key = (int(r["workload"]["num_tokens"]), r["requested_config"]["parallel_mode"])
        lat = r["latency_ms"]
        e = {
            "backend": r["actual_config"]["backend"] or r["requested_config"]["backend"],
            "requested_backend": r["requested_config"]["backend"],
            "comm_method": r["actual_config"]["comm_method"],
            "cuda_graph": r["requested_config"]["cuda_graph"],
            "use_low_precision_moe_combine": r["requested_config"]["use_low_precision_moe_combine"],
            "score_ms": lat["score"],
            "raw_score_ms": lat["raw_score"],
            "outlier_count": lat["iter_max_outliers"].get("count"),
            "status": r["status"],
            "skip_reason": r["skip_reason"],
            "autotune_status": r["instrumentation"].get("autotune_status"),
        }
        groups.setdefault(key, []).append(e)
    out = []
    for key in sorted(groups):
        ranking = sorted(groups[key], key=lambda e: (e["score_ms"] is None, e["score_ms"] or 0))
        best = next(
            (
                e
                for e in ranking
                if e["score_ms"] is not None
                and e["status"] == "success"
                and not (e["autotune_status"] or "").startswith("failed")
            ),
            None,
        )
        out.append(
            {"num_tokens": key[0], "parallel_mode": key[1], "best": best, "ranking": ranking}
        )
    return out


def _score(rep, allow_failed=False, **match):
    """The stored score of the single row matching requested_config/num_tokens."""
    hits = []
    for r in rep["results"]:
        rc = r["requested_config"]
        if r["workload"]["num_tokens"] != match["nt"]:
            continue
        if all(rc[k] == v for k, v in match.items() if k != "nt"):
            hits.append(r)
    assert len(hits) == 1, (match, len(hits))
    if hits[0]["status"] != "success" and allow_failed:
        return None
    assert hits[0]["status"] == "success", hits[0]["skip_reason"]
    return hits[0]["latency_ms"]["score"]


# ---------------------------------------------------------------- determinism / bytes


def test_same_seed_same_bytes():
    a = demo.generate_report("kimi_k2", "B300", "NVFP4", 16, [1, 64, 4096], seed=11)
    b = demo.generate_report("kimi_k2", "B300", "NVFP4", 16, [1, 64, 4096], seed=11)
    c = demo.generate_report("kimi_k2", "B300", "NVFP4", 16, [1, 64, 4096], seed=12)
    assert demo.dump_report(a) == demo.dump_report(b)
    assert demo.dump_report(a) != demo.dump_report(c)


def test_demo_reports_deterministic(demo_set):
    again = demo.demo_reports()
    assert len(again) == len(demo_set)
    for (r1, m1), (r2, m2) in zip(demo_set[:4], again[:4], strict=True):
        assert m1 == m2
        assert demo.dump_report(r1) == demo.dump_report(r2)


def test_candidate_noise_independent_of_report_contents():
    a = demo.generate_report("glm_5", "GB300", "NVFP4", 8, [64, 512], seed=7)
    b = demo.generate_report("glm_5", "GB300", "NVFP4", 8, [512], seed=7, parallel_modes=["DEP"])
    pick = [
        r
        for r in a["results"]
        if r["workload"]["num_tokens"] == 512 and r["requested_config"]["parallel_mode"] == "DEP"
    ]
    assert [r["raw_data"] for r in pick] == [r["raw_data"] for r in b["results"]]


def test_dump_matches_json_module(small):
    out = demo.dump_report(small)
    assert out == json.dumps(small, indent=2, allow_nan=True).encode()
    assert demo.dump_report(small, compact=True) == json.dumps(small, allow_nan=True).encode()
    assert b'"swiglu_limit": Infinity' in out
    back = json.loads(out)
    assert back["model"]["swiglu_limit"] == math.inf
    assert list(back) == TOP_KEYS


def test_dump_float_and_string_edge_cases():
    rng = random.Random(1)
    floats = [
        1e-5,
        1.5e-7,
        -2.5e-9,
        9.999e-05,
        0.0001,
        1e16,
        1e22,
        5e-324,
        0.0,
        -0.0,
        1.0,
        123456789012345.6,
        1e-10,
        3.0e-100,
        0.1,
        2.0**-20,
    ]
    for _ in range(3000):
        v = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if math.isfinite(v):
            floats.append(v)
    floats += [10 ** rng.uniform(-9, 3) for _ in range(3000)]
    rows = [{"v": f, "arr": [f, -f], "s": 'e-5 0.00001 "x": 1e-05'} for f in floats]
    rows.append(
        {
            "ctl": "".join(chr(i) for i in range(32)) + '\\/"',
            "big": 2**63 + 5,
            "neg": -(2**63),
            "t": True,
            "n": None,
            "e": {},
            "l": [],
        }
    )
    doc = {"benchmark": "bench_moe", "results": rows, "model": {"swiglu_limit": math.inf}}
    assert demo.dump_report(doc) == json.dumps(doc, indent=2, allow_nan=True).encode()
    # shapes orjson cannot reproduce go through json: non-finite floats, non-ASCII, tuples,
    # non-str keys, huge ints
    for odd in (math.nan, -math.inf, "caf\u00e9", "\x7f", (1, 2), {1: "a"}, 2**70):
        doc2 = {"results": [{"x": 1.5}] * 60 + [{"odd": odd}]}
        assert demo.dump_report(doc2) == json.dumps(doc2, indent=2, allow_nan=True).encode()


# ---------------------------------------------------------------- schema conformance


def _check_report_shape(rep):
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
    _check_report_shape(small)


def test_schema_demo(demo_set):
    for rep, _ in demo_set:
        _check_report_shape(rep)


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
    for row in _rows([small] + [r for r, _ in demo_set[:8]]):
        if row["status"] != "success":
            continue
        per_rank = row["raw_data"]["forward_times_ms"]["per_rank"]
        assert all(len(v) == 12 for v in per_rank.values())
        ref = _score_ref(per_rank)
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
        assert lat["iter_max_stats"] == _stats(ref["iter_max"])
        for name, samples in per_rank.items():
            assert lat["per_rank"][name] == _stats(samples)
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
        assert lat["score"] == _score_ref(per_rank)["score"]
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
        assert rep["rankings"] == _rankings_ref(rep["results"])
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
    reasons = [r["skip_reason"] for r in _rows([rep for rep, _ in demo_set]) if r["skip_reason"]]
    prefixes = {s.split(":")[0] for s in reasons}
    assert "timed phase error" in prefixes
    assert "build error" in prefixes
    assert "watchdog_timeout" in prefixes
    assert "time_budget_exceeded" in reasons
    assert any(s.startswith("timed phase error: OutOfMemoryError:") for s in reasons)
    assert any(s.startswith("comm_method=") and "requires" in s for s in reasons)
    assert any("does not support" in s for s in reasons)
    statuses = [r["status"] for r in _rows([rep for rep, _ in demo_set])]
    n = len(statuses)
    assert statuses.count("success") > 0.6 * n
    assert 0 < statuses.count("failed") < 0.1 * n


def test_oom_only_at_large_token_counts(demo_set):
    for row in _rows([rep for rep, _ in demo_set]):
        if (row["skip_reason"] or "").startswith("timed phase error: OutOfMemoryError"):
            assert row["workload"]["num_tokens"] >= 4096
            assert row["instrumentation"]["autotune_status"] == "success"
            assert row["actual_config"]["backend"] == row["requested_config"]["backend"]


# ---------------------------------------------------------------- capability matrix


def test_capability_matrix(demo_set):
    for rep, meta in demo_set:
        quant = rep["model"]["quant_algo"]
        arch = "hopper" if rep["environment"]["sm"] == 90 else "blackwell"
        for row in rep["results"]:
            rc, ac = row["requested_config"], row["actual_config"]
            if meta.hardware == "H200":
                assert rc["backend"] not in (
                    "TRTLLM",
                    "CUTEDSL",
                    "MEGAMOE_CUTEDSL",
                    "MEGAMOE_DEEPGEMM",
                    "DEEPGEMM",
                )
            if row["status"] == "success":
                assert quant in demo.BACKEND_QUANTS[rc["backend"]][arch]
            if rc["backend"].startswith("MEGAMOE"):
                assert rc["comm_method"] == "NONE"
                if ac["comm_method"] is not None:
                    assert ac["comm_method"] == "NONE"
                    assert ac["scheduler_kind"] == "FUSED_COMM"
            if rc["parallel_mode"].startswith("T"):
                assert rc["comm_method"] == (
                    "NONE" if rc["backend"].startswith("MEGAMOE") else "AUTO"
                )
                if ac["comm_method"] is not None:
                    assert ac["comm_method"] == "NONE"
            for k in ("moe_ep_size", "moe_tp_size", "enable_attention_dp"):
                assert rc[k] is None
            if ac["moe_ep_size"] is not None:
                ep, tp, adp = demo.parallel_layout(
                    rc["parallel_mode"], rep["environment"]["world_size"]
                )
                assert (ac["moe_ep_size"], ac["moe_tp_size"], ac["enable_attention_dp"]) == (
                    ep,
                    tp,
                    adp,
                )


def test_environment_per_gpu(demo_set):
    seen = {}
    for rep, meta in demo_set:
        env = rep["environment"]
        seen[meta.hardware] = (env["device_name"], env["sm"])
        assert env["world_size_per_node"] <= env["world_size"]
    assert seen["GB300"] == ("NVIDIA GB300", 103)
    assert seen["B300"][1] == 103 and "B300" in seen["B300"][0]
    assert seen["H200"] == ("NVIDIA H200", 90)


def test_per_rank_tokens_split():
    rep = demo.generate_report(
        "deepseek_v4_pro",
        "GB300",
        "NVFP4",
        4,
        [2, 256],
        seed=0,
        cuda_graph=[True],
        backends=["TRTLLM"],
    )
    prt = {
        (r["workload"]["num_tokens"], r["requested_config"]["parallel_mode"]): r["workload"][
            "per_rank_num_tokens"
        ]
        for r in rep["results"]
    }
    assert prt[(2, "DEP")] == [1, 1, 0, 0]
    assert prt[(256, "DEP")] == [64] * 4
    assert prt[(256, "TEP")] == [256] * 4


def test_unsupported_requests_become_pruned_rows():
    rep = demo.generate_report(
        "kimi_k2",
        "H200",
        "FP8_BLOCK_SCALES",
        8,
        [64],
        seed=0,
        backends=["CUTLASS", "TRTLLM"],
        cuda_graph=[True],
    )
    trt = [r for r in rep["results"] if r["requested_config"]["backend"] == "TRTLLM"]
    assert trt and all(r["status"] == "skipped" for r in trt)
    assert all("SM90" in r["skip_reason"] for r in trt)
    # pruned rows come before runnable ones within the workload
    first_cutlass = next(
        i
        for i, r in enumerate(rep["results"])
        if r["requested_config"]["backend"] == "CUTLASS" and r["status"] != "skipped"
    )
    assert all(r["status"] == "skipped" for r in rep["results"][:first_cutlass])


# ---------------------------------------------------------------- physical plausibility


def test_score_grows_with_tokens_at_large_counts(demo_set):
    series = {}
    for rep, meta in demo_set:
        for row in rep["results"]:
            if row["status"] != "success":
                continue
            rc = row["requested_config"]
            key = (
                meta.filename,
                rc["backend"],
                rc["parallel_mode"],
                rc["comm_method"],
                rc["cuda_graph"],
            )
            series.setdefault(key, []).append(
                (row["workload"]["num_tokens"], row["latency_ms"]["score"])
            )
    n_pairs = 0
    for key, pts in series.items():
        # graph off: host dispatch hides GPU work up to far larger token counts
        floor = 2048 if key[-1] else 16384
        pts = [p for p in sorted(pts) if p[0] >= floor]
        for (n1, s1), (n2, s2) in zip(pts, pts[1:], strict=False):
            assert s2 > s1, (n1, s1, n2, s2)
            n_pairs += 1
    assert n_pairs > 500


def test_graph_off_slower_at_small_tokens(demo_set):
    n = 0
    for rep, _ in demo_set:
        by_cfg = {}
        for row in rep["results"]:
            if row["status"] != "success" or row["workload"]["num_tokens"] > 64:
                continue
            rc = row["requested_config"]
            key = (
                row["workload"]["num_tokens"],
                rc["backend"],
                rc["parallel_mode"],
                rc["comm_method"],
            )
            by_cfg.setdefault(key, {})[rc["cuda_graph"]] = row["latency_ms"]["score"]
        for v in by_cfg.values():
            if len(v) == 2:
                assert v[False] > v[True]
                n += 1
    assert n > 200


def test_megamoe_crossover_gb300_nvfp4_dep():
    ws = 8
    nts = [8, 64, 256, 8192, 32768]
    rep = demo.generate_report(
        "deepseek_v4_pro", "GB300", "NVFP4", ws, nts, seed=4, parallel_modes=["DEP"]
    )
    top_k = rep["model"]["top_k"]
    for nt in nts:
        act = nt * top_k / ws
        trt = _score(
            rep,
            nt=nt,
            backend="TRTLLM",
            parallel_mode="DEP",
            comm_method="NVLINK_ONE_SIDED",
            cuda_graph=True,
        )
        mega = _score(rep, nt=nt, backend="MEGAMOE_CUTEDSL", parallel_mode="DEP", cuda_graph=True)
        if act <= 256:
            assert trt < mega, nt
        if act >= 4096:
            assert mega < trt, nt
    # graph off: the crossover moves far out (TRTLLM still ahead at ~6k tokens/rank)
    trt_off = _score(
        rep,
        nt=8192,
        backend="TRTLLM",
        parallel_mode="DEP",
        comm_method="NVLINK_ONE_SIDED",
        cuda_graph=False,
    )
    mega_off = _score(
        rep, nt=8192, backend="MEGAMOE_CUTEDSL", parallel_mode="DEP", cuda_graph=False
    )
    assert trt_off < mega_off


def test_trtllm_vs_cutedsl_by_world_size():
    for ws, trtllm_wins in ((8, True), (32, False)):
        rep = demo.generate_report(
            "deepseek_v4_pro",
            "GB300",
            "NVFP4",
            ws,
            [ws * 4],
            seed=9,
            parallel_modes=["DEP"],
            cuda_graph=[True],
            comm_methods=["NVLINK_ONE_SIDED"],
        )
        kw = dict(nt=ws * 4, parallel_mode="DEP", comm_method="NVLINK_ONE_SIDED")
        trt = _score(rep, backend="TRTLLM", **kw)
        cute = _score(rep, backend="CUTEDSL", **kw)
        assert (trt < cute) == trtllm_wins, (ws, trt, cute)


def test_cross_domain_comm_choice(b300_cross):
    rep = b300_cross
    hidden, top_k, ws = 7168, 6, 16
    n_small = n_large = 0
    for nt in sorted({r["workload"]["num_tokens"] for r in rep["results"]}):
        dispatch_kb = nt * top_k / ws * hidden * 0.5 / 1024
        kw = dict(nt=nt, backend="CUTEDSL", parallel_mode="DEP", cuda_graph=True)
        ll = _score(rep, comm_method="DEEPEPLOWLATENCY", allow_failed=True, **kw)
        ag = _score(rep, comm_method="ALLGATHER", allow_failed=True, **kw)
        if ll is None or ag is None:  # a rare synthetic watchdog/build failure
            continue
        if dispatch_kb <= 2048:
            assert ll < ag, nt
            n_small += 1
        elif dispatch_kb >= 16384:
            assert ag < ll, nt
            n_large += 1
    assert n_small >= 5 and n_large >= 1


def test_cross_domain_nvlink_only_paths_fail_to_build():
    rep = demo.generate_report(
        "kimi_k2",
        "B300",
        "NVFP4",
        16,
        [256],
        seed=0,
        comm_methods=["NVLINK_ONE_SIDED", "DEEPEP"],
        parallel_modes=["DEP"],
        cuda_graph=[True],
    )
    for row in rep["results"]:
        rc = row["requested_config"]
        if rc["comm_method"] == "NVLINK_ONE_SIDED" or rc["backend"].startswith("MEGAMOE"):
            assert row["status"] == "failed"
            assert row["skip_reason"].startswith("build error: ")
            assert row["actual_config"]["backend"] is None
            assert row["actual_config"]["moe_ep_size"] == 16
        else:
            assert row["status"] == "success"


# ---------------------------------------------------------------- demo set / big report


def test_demo_dataset_size_and_meta(demo_set):
    assert 20 <= len(demo_set) <= 40
    total = sum(len(r["results"]) for r, _ in demo_set)
    assert 15000 <= total <= 40000
    models = {r["model"]["name"] for r, _ in demo_set}
    assert len(models) >= 3 and models <= set(demo.MODELS)
    assert {r["environment"]["world_size"] for r, _ in demo_set} == {4, 8, 16, 32}
    names = set()
    for _rep, meta in demo_set:
        assert dataclasses.is_dataclass(meta)
        with pytest.raises(dataclasses.FrozenInstanceError):
            meta.hardware = "x"  # type: ignore[misc]
        assert meta.synthetic is True
        assert meta.notes == "synthetic demo data generated by moedash"
        assert meta.trtllm_version == "v1.3.0rc26-synthetic"
        assert meta.hardware in ("GB300", "B300", "H200")
        assert meta.run_date and len(meta.run_date) == 10
        assert meta.filename not in names
        names.add(meta.filename)
        assert meta.upload_kwargs()["synthetic"] is True


def test_demo_upload_kwargs_fit_upload_meta(demo_set):
    records = pytest.importorskip("ingest.records")
    meta = demo_set[0][1]
    um = records.UploadMeta(**meta.upload_kwargs())
    assert um.synthetic is True and um.hardware == meta.hardware


def test_big_report_small_n():
    rep = demo.big_report(5000, seed=1)
    n = len(rep["results"])
    assert abs(n - 5000) <= 0.05 * 5000
    assert rep["environment"]["world_size"] == 8
    assert rep["model"]["name"] == "deepseek_v4_pro"
    nts = [r["workload"]["num_tokens"] for r in rep["results"]]
    assert len(set(nts)) > 16  # beyond powers of two
    assert nts == sorted(nts)
    assert rep["rankings"] == _rankings_ref(rep["results"])
    assert demo.dump_report(rep) == json.dumps(rep, indent=2, allow_nan=True).encode()


def test_bad_arguments():
    with pytest.raises(ValueError):
        demo.generate_report("nope", "GB300", "NVFP4", 8, [1])
    with pytest.raises(ValueError):
        demo.generate_report("glm_5", "A100", "NVFP4", 8, [1])
