"""Round trip of the srt-slurm recipes: recipe -> our serving mapping -> our export -> the
recipe's own values, field by field.

Input: the workloads frame of ``analysis.serving_map.map_workloads`` (one row per
serving point and phase; the serving inputs our mapping read from the recipe) and the
resolved recipe dicts keyed by ``config_file``. Each distinct (recipe, phase) is checked
once: the worker our export writes from the mapped serving inputs
(:func:`mapped_shape`) against the recipe's ``backend.trtllm_config.<phase>`` and
``<phase>_environment`` on :data:`COMPARED`. A recipe the mapping cannot turn into
serving inputs (not TensorRT-LLM, aggregated, unresolved, no tp or MoE backend) is
listed with the mapping's reason instead.

Fields compare by effect, not spelling: the CUDA-graph limit is the largest graph
batch that can run (at most ``max_batch_size``: a bigger graph is never replayed), and
``use_low_precision_moe_combine`` / TRTLLM_FORCE_COMM_METHOD count as unset on the fused
MEGAMOE backends, which have no separate combine or comm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.capabilities import FUSED_COMM_BACKENDS
from analysis.export_launch import WorkerShape, decode_shape, env, options, prefill_shape
from analysis.export_options import validate_options
from analysis.serving_map import none_if_missing

COMPARED: tuple[str, ...] = (
    "tensor_parallel_size",
    "moe_expert_parallel_size",
    "enable_attention_dp",
    "max_batch_size",
    "max_num_tokens",
    "cuda_graph",
    "cuda_graph_config.max_batch_size",
    "cuda_graph_config.enable_padding",
    "speculative_config.num_nextn_predict_layers",
    "moe_config.backend",
    "moe_config.use_low_precision_moe_combine",
    "env.TRTLLM_FORCE_COMM_METHOD",
)
STATUS_AGREES = "agrees"
STATUS_DIFFERS = "differs"
STATUS_NOT_MAPPED = "not mapped"
ROUNDTRIP_COLUMNS: tuple[str, ...] = (
    cc.CONFIG_FILE,
    cc.PHASE,
    c.HARDWARE,
    "status",
    "differences",
    "reason",
)


def mapped_shape(row: Mapping[str, Any]) -> WorkerShape | str:
    """The worker our export writes for one workload row, or why the row gives no
    serving inputs (the mapping's reason)."""
    ws, backend = none_if_missing(row.get(c.WORLD_SIZE)), none_if_missing(row.get(c.BACKEND))
    b_max, n_max = (
        none_if_missing(row.get(cc.MAX_BATCH_SIZE)),
        none_if_missing(row.get(cc.MAX_NUM_TOKENS)),
    )
    needed = {
        "tensor_parallel_size": ws,
        "moe_config.backend": backend,
        "max_batch_size": b_max,
    }
    if row[cc.PHASE] == "prefill":
        needed["max_num_tokens"] = n_max
    missing = [k for k, v in needed.items() if v is None]
    if missing:
        why = none_if_missing(row.get(cc.UNMAPPED_REASON))
        return f"recipe does not set {', '.join(missing)}" + (f" ({why})" if why else "")
    comm = str(row[c.COMM]) if bool(none_if_missing(row.get(cc.COMM_FORCED))) else None
    lpc = none_if_missing(row.get(c.LOW_PRECISION_COMBINE))
    common: dict[str, Any] = dict(
        world_size=int(ws),
        attention_dp=bool(row[c.ATTENTION_DP]),
        moe_ep_size=int(row[c.MOE_EP_SIZE]),
        backend=str(backend),
        mtp=int(none_if_missing(row.get(cc.SPEC_K)) or 0),
        max_batch_size=int(b_max),
        max_num_tokens=None if n_max is None else int(n_max),
        low_precision_combine=None if lpc is None else bool(lpc),
        comm=comm,
    )
    if row[cc.PHASE] == "decode":
        padded = none_if_missing(row.get(cc.BATCH_PER_RANK_PADDED))
        return decode_shape(requests_per_rank=int(padded or b_max), **common)
    return prefill_shape(**common)  # max_num_tokens is known for prefill (checked above)


def _flat(doc: Mapping[str, Any], environment: Mapping[str, Any]) -> dict[str, Any]:
    graph = doc.get("cuda_graph_config")
    spec = doc.get("speculative_config") or {}
    moe = doc.get("moe_config") or {}
    graph_max = None
    if isinstance(graph, Mapping):
        sizes = graph.get("batch_sizes") or []
        graph_max = max(int(s) for s in sizes) if sizes else int(graph.get("max_batch_size") or 128)
    forced = environment.get("TRTLLM_FORCE_COMM_METHOD")
    tp = int(doc["tensor_parallel_size"])
    b_max = _int(doc.get("max_batch_size"))
    if graph_max is not None and b_max is not None:
        # a graph larger than max_batch_size is never replayed: the usable limit is the min
        graph_max = min(graph_max, b_max)
    backend = str(moe.get("backend", "")).upper() or None
    # the fused MEGAMOE backends have no separate combine or comm (the guide): the
    # flag and the variable change nothing there, so they compare as unset
    fused = backend in FUSED_COMM_BACKENDS
    return {
        "tensor_parallel_size": tp,
        "moe_expert_parallel_size": int(doc.get("moe_expert_parallel_size") or tp),
        "enable_attention_dp": bool(doc.get("enable_attention_dp", False)),
        "max_batch_size": b_max,
        "max_num_tokens": _int(doc.get("max_num_tokens")),
        "cuda_graph": isinstance(graph, Mapping),
        "cuda_graph_config.max_batch_size": graph_max,
        "cuda_graph_config.enable_padding": (
            bool(graph.get("enable_padding", False)) if isinstance(graph, Mapping) else None
        ),
        "speculative_config.num_nextn_predict_layers": int(
            spec.get("num_nextn_predict_layers") or spec.get("max_draft_len") or 0
        ),
        "moe_config.backend": backend,
        "moe_config.use_low_precision_moe_combine": (
            bool(moe.get("use_low_precision_moe_combine", False)) and not fused
        ),
        "env.TRTLLM_FORCE_COMM_METHOD": str(forced).upper() if forced and not fused else None,
    }


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def recipe_values(recipe: Mapping[str, Any], phase: str) -> dict[str, Any] | None:
    """The :data:`COMPARED` fields of one recipe phase (None when the recipe has no
    ``backend.trtllm_config.<phase>``)."""
    backend = recipe.get("backend") or {}
    cfg = (backend.get("trtllm_config") or {}).get(phase)
    if not isinstance(cfg, Mapping) or "tensor_parallel_size" not in cfg:
        return None
    return _flat(cfg, backend.get(f"{phase}_environment") or {})


def export_values(shape: WorkerShape) -> dict[str, Any]:
    """The :data:`COMPARED` fields of the document our export writes."""
    return _flat(options(shape), env(shape))


def round_trip(workloads: pd.DataFrame, recipes: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per distinct (config_file, phase) of TensorRT-LLM workloads with a recipe
    (``ROUNDTRIP_COLUMNS``): ``agrees`` when every compared field is equal, ``differs``
    with ``differences`` ("field: ours X, recipe Y; ...") and ``reason``, or ``not
    mapped`` with the mapping's reason. Sorted by config_file then phase."""
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for row in workloads.to_dict("records"):
        cf = none_if_missing(row.get(cc.CONFIG_FILE))
        if cf is None or cf not in recipes or row.get(cc.FRAMEWORK) not in ("dynamo-trt", "trt"):
            continue
        key = (str(cf), str(row[cc.PHASE]))
        if key in seen:
            continue
        seen.add(key)
        out = {cc.CONFIG_FILE: key[0], cc.PHASE: key[1], c.HARDWARE: row.get(c.HARDWARE)}
        theirs = recipe_values(recipes[key[0]], key[1])
        shape = mapped_shape(row)
        if theirs is None or isinstance(shape, str):
            reason = (
                "recipe has no separate engine config for this phase" if theirs is None else shape
            )
            rows.append({**out, "status": STATUS_NOT_MAPPED, "differences": None, "reason": reason})
            continue
        ours = export_values(shape)
        problems = validate_options(options(shape))
        # a decode recipe without max_num_tokens leaves it to TensorRT-LLM's default:
        # nothing to compare (ours is max_batch_size x (1 + K))
        fields = [f for f in COMPARED if not (f == "max_num_tokens" and theirs[f] is None)]
        diffs = [f"{f}: ours {ours[f]}, recipe {theirs[f]}" for f in fields if ours[f] != theirs[f]]
        diffs += [f"options model: {p}" for p in problems]
        rows.append(
            {
                **out,
                "status": STATUS_DIFFERS if diffs else STATUS_AGREES,
                "differences": "; ".join(diffs) or None,
                "reason": explain(ours, theirs) if diffs else None,
            }
        )
    df = pd.DataFrame(rows, columns=list(ROUNDTRIP_COLUMNS))
    return df.sort_values([cc.CONFIG_FILE, cc.PHASE], kind="stable").reset_index(drop=True)


def explain(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> str:
    """Why a recipe differs from our export, in the recipe's terms."""
    why: list[str] = []
    g_ours, g_theirs = (
        ours["cuda_graph_config.max_batch_size"],
        theirs["cuda_graph_config.max_batch_size"],
    )
    if ours["cuda_graph"] != theirs["cuda_graph"]:
        why.append(
            "the recipe sets a cuda_graph_config on a prefill worker (TensorRT-LLM captures "
            "generation batches only; the export writes null)"
            if theirs["cuda_graph"]
            else "the recipe runs decode without CUDA graphs"
        )
    elif g_ours != g_theirs:
        why.append(
            f"the recipe captures CUDA graphs up to {g_theirs} requests, below its "
            f"max_batch_size {theirs['max_batch_size']} (larger batches run eager); "
            "the export captures up to max_batch_size and no serving input sets a lower limit"
        )
    return "; ".join(why) or "see differences"
