"""What the demo reports are checked against: bench_moe's key orders and independent
re-implementations of its score, statistics and rankings (schema doc §2.5, §3), written
without ingest.demo so the generator cannot agree with itself by construction."""

from __future__ import annotations

import math

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


def all_rows(reports):
    for rep in reports:
        yield from rep["results"]


# ---------------------------------------------------------------- independent references


def seq_mean(xs):
    s = 0.0
    for x in xs:
        s += x
    return s / len(xs)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def stats(xs):
    n = len(xs)
    mean = seq_mean(xs)
    var = 0.0
    for x in xs:
        var += (x - mean) * (x - mean)
    s = sorted(xs)
    return {
        "mean": mean,
        "median": median(xs),
        "stdev": math.sqrt(var / n),
        "min": s[0],
        "max": s[-1],
        "p90": s[round(0.9 * (n - 1))],
    }


def score_ref(per_rank):
    """Schema section 2.5, written independently of ingest.demo.generate."""
    ranks = list(per_rank.values())
    n = min(len(r) for r in ranks)
    iter_max = [max(r[i] for r in ranks) for i in range(n)]
    raw = seq_mean(iter_max)
    if n < 8:
        return {
            "score": median(iter_max),
            "type": "slowest_rank_median",
            "raw": raw,
            "outliers": [],
            "iter_max": iter_max,
        }
    center = median(iter_max)
    mad = median([abs(x - center) for x in iter_max])
    outl = []
    for i, x in enumerate(iter_max):
        if mad == 0:
            if abs(x - center) > 0.05 * center:
                outl.append(i)
        elif abs(0.6745 * (x - center) / mad) > 3.5:
            outl.append(i)
    kept = [x for i, x in enumerate(iter_max) if i not in outl] or iter_max
    return {
        "score": seq_mean(kept),
        "type": "slowest_rank_trimmed_mean",
        "raw": raw,
        "outliers": outl,
        "iter_max": iter_max,
        "center": center,
        "mad": mad,
    }


def rankings_ref(results):
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


def score_of(rep, allow_failed=False, **match):
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
