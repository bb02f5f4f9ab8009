"""Builders of the fixed-shape blocks of a synthetic bench_moe report: default search
axes, ``model``, ``environment``, ``search``, routing-control and the default blocks of
skipped/failed rows (schema 2.4)."""

from __future__ import annotations

from typing import Any

from ingest.demo.rng import _key_hash
from ingest.demo.tables import (
    _BACKEND_ORDER,
    _COMM_ORDER,
    _HYBRIDS,
    _MODEL_KEYS,
    _NATIVE_WARNING,
    _ROUTING_CLASS,
    BACKEND_QUANTS,
    INF,
    MODELS,
    _Hw,
)


def _default_backends(hw: _Hw, quant: Any) -> list[str]:
    return [b for b in _BACKEND_ORDER if quant in BACKEND_QUANTS[b].get(hw.arch, ())]


def _default_modes(ws: int) -> list[str]:
    return ["DEP", "TEP", *_HYBRIDS.get(ws, ())]


def _default_comms(hw: _Hw, ws: int, mdl: dict[str, Any]) -> list[str]:
    mnnvl = hw.arch == "blackwell" and ws <= hw.nvl_domain
    out = [c for c in _COMM_ORDER if mnnvl or not c.startswith("NVLINK")]
    return out


def _model_block(model: str, quant: Any) -> dict[str, Any]:
    spec = MODELS[model]
    blk = {
        "name": model,
        "num_experts": spec["num_experts"],
        "top_k": spec["top_k"],
        "hidden_size": spec["hidden_size"],
        "intermediate_size": spec["intermediate_size"],
        "quant_algo": quant,
        "routing_method": spec["routing_method"],
        "n_group": spec.get("n_group"),
        "topk_group": spec.get("topk_group"),
        "n_shared_experts": 0,
        "shared_expert_mode": "fused",
        "swiglu_alpha": 1.0,
        "swiglu_beta": 0.0,
        "swiglu_limit": INF,
        "activation_type": "SWIGLU",
        "situ_beta": spec.get("situ_beta"),
        "situ_linear_beta": spec.get("situ_linear_beta"),
        "routing_method_class": _ROUTING_CLASS[spec["routing_method"]],
    }
    assert tuple(blk) == _MODEL_KEYS
    return blk


def _environment(hw: _Hw, ws: int, seed: int, graph_default: bool) -> dict[str, Any]:
    return {
        "world_size": ws,
        "world_size_per_node": min(ws, hw.gpus_per_node),
        "hostname": hw.hostname.format(n=1 + seed % 18),
        "username": "moedash-synthetic",
        "device_name": hw.device_name,
        "sm": hw.sm,
        "cuda_version": hw.cuda_version,
        "driver_version": hw.driver_version,
        "torch_version": "2.9.0a0+50eac811a6.nv25.10",
        "trtllm_commit": f"{_key_hash(f'commit|{seed}') & 0xFFFFFFFFFF:010x}",
        "platform": hw.platform,
        "nvlink_topology": "unknown",
        "memory_type": "unknown",
        "clock_locked": False,
        "cuda_graph_default": graph_default,
    }


def _per_rank_tokens(nt: int, ws: int, adp: bool) -> list[int]:
    if not adp:
        return [nt] * ws
    q, r = divmod(nt, ws)
    return [q + (1 if j < r else 0) for j in range(ws)]


def _requested_routing(prt: list[int] | None) -> dict[str, Any]:
    return {
        "routing_mode": "native",
        "projection_policy": "project",
        "comm_pattern": "balanced_alltoall",
        "expert_pattern": "balanced",
        "routing_pattern_file": None,
        "per_rank_num_tokens": prt,
        "routing_dump_matrix": False,
        "seed": 0,
    }


def _split(total: int, parts: int) -> list[int]:
    q, r = divmod(total, parts)
    return [q + (1 if j < r else 0) for j in range(parts)]


def _routing_block(
    prt: list[int], mdl: dict[str, Any], ep: int, tp: int, num_chunks: int | None
) -> dict[str, Any]:
    k, e = mdl["top_k"], mdl["num_experts"]
    total = sum(prt) * k // tp
    sums = _split(total, ep)
    hist_total = total
    req = _requested_routing(prt)
    del req["routing_dump_matrix"]
    return {
        "requested": req,
        "actual": {
            "routing_path": "logits_native",
            "routing_realization": {
                "status": "exact",
                "reason": "native logits projected onto the planned top-k",
                "max_abs_slot_error": 0,
                "max_relative_slot_error": 0.0,
            },
            "enable_perfect_router": False,
            "effective_src_axis": "dp_rank",
            "max_num_tokens_per_rank": max(prt),
            "num_chunks_observed": num_chunks,
            "use_dp_padding": False,
            "observation_source": "plan_simulation",
            "observed_dispatch_matrix_summary": {
                "row_sums": list(sums),
                "col_sums": list(sums),
                "off_diagonal_ratio": (ep - 1) / ep,
                "max_abs_slot_error": 0,
                "matrix_dump_path": None,
            },
            "observed_expert_histogram_summary": {
                "min": hist_total // e,
                "max": -(-hist_total // e),
                "active_experts": min(e, hist_total),
            },
            "selected_scales": {"distribution": "uniform", "dtype": "torch.bfloat16", "seed": 0},
            "warnings": [_NATIVE_WARNING],
        },
    }


def _default_latency() -> dict[str, Any]:
    return {
        "score": None,
        "score_type": "slowest_rank_trimmed_mean",
        "raw_score": None,
        "raw_score_type": "slowest_rank_mean",
        "iter_max_stats": {},
        "iter_max_outliers": {},
        "per_rank": {},
    }


def _null_actual() -> dict[str, Any]:
    return {
        "backend": None,
        "comm_method": None,
        "comm_fallback_reason": None,
        "scheduler_kind": None,
        "moe_ep_size": None,
        "moe_tp_size": None,
        "enable_attention_dp": None,
        "num_chunks": None,
    }


def _search_block(
    backends: list[str], modes: list[str], comms: list[str], cgs: list[bool]
) -> dict[str, Any]:
    axes = []
    if len(backends) > 1:
        axes.append("backend")
    if len(comms) > 1:
        axes.append("comm")
    if len(modes) > 1:
        axes.append("parallel")
    full = len(cgs) > 1
    mode = "full" if full else (",".join(axes) if axes else "none")
    return {
        "mode": mode,
        "backends": list(backends) if (full or "backend" in axes) else [],
        "parallel_modes": list(modes) if (full or "parallel" in axes) else [],
        "comm_methods": list(comms) if (full or "comm" in axes) else [],
        "cuda_graph_options": list(cgs) if full else [],
        "combine_precision_options": [],
    }
