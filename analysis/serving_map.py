"""Serving point -> two bench_moe workloads (prefill and decode).

Pure: inputs are the points frame (``crossval_columns.POINT_COLUMNS``, built by
``ingest.serving_configs.points_frame``) and the resolved recipe dicts keyed by
``config_file``; output is the workloads frame (``crossval_columns.WORKLOAD_COLUMNS``).

The rules follow ``shared/reference/serving_configs.md`` section (d); the token
conversion itself is ``analysis.concurrency`` (shared with the Recommend page and the
API's ``concurrency=`` / ``max_num_tokens=``):

decode (W_d workers, T_d GPUs each, attention DP A, recipe B_max, MTP K, graph sizes G)::

    dp         = T_d if A else 1
    b_rank     = min(B_max, ceil(conc / W_d / dp))       # requests per attention rank
    b_pad      = min{g in G : g >= b_rank}                # enable_padding; else b_rank
    t_rank     = b_pad * (1 + K)                          # MoE tokens per rank per step
    num_tokens = t_rank * dp                              # bench_moe: DP -> global total,
                                                          #            TP -> every rank's batch
    cuda_graph = graphs configured and b_rank <= max(G) (and b_rank in G without padding)

prefill (T_p, A_p, B_p = max_batch_size, N_p = max_num_tokens)::

    t_rank     = min(N_p, B_p * ISL)       # saturated forward  (num_tokens)
    t_1req     = min(ISL, N_p)             # one prompt          (num_tokens_1req)
    num_tokens = t_rank * T_p if A_p else t_rank;   cuda_graph = off

world_size = the worker's ``tensor_parallel_size`` (one worker = one MoE group).
Fields that cannot be derived are left None and explained in ``unmapped_reason``
("field: why; ..."); a workload is ``mappable`` only when every ledger key is known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.concurrency import decode_tokens, graph_batch_sizes, prefill_tokens

TRTLLM_FRAMEWORKS = frozenset({"dynamo-trt", "trt"})

# bench_moe preset -> (num_experts, top_k, hidden_size, intermediate_size); the guide's
# table and IX experimental/operatorx/testlists/moe.json agree on these.
MODEL_SHAPES: dict[str, tuple[int, int, int, int]] = {
    "deepseek_r1": (256, 8, 7168, 2048),
    "deepseek_v4_pro": (384, 6, 7168, 3072),
    "glm_5": (256, 8, 6144, 2048),
    "kimi_k2": (384, 8, 7168, 2048),
    "gpt_oss_120b": (128, 4, 2880, 2880),
}
# Shapes without a bench_moe preset (bench_moe would need --num_experts/... flags).
CUSTOM_SHAPES: dict[str, tuple[int, int, int, int]] = {
    "qwen3.5": (512, 10, 4096, 1024),
    "minimaxm2.5": (256, 8, 3072, 1536),
    "kimik3": (896, 16, 3584, 3072),
}

# The key a ledger joins on: a workload missing any of them cannot be compared.
LEDGER_KEY: tuple[str, ...] = (
    c.MODEL,
    c.QUANT,
    c.HARDWARE,
    c.WORLD_SIZE,
    c.NUM_TOKENS,
    c.CUDA_GRAPH,
    c.ATTENTION_DP,
    c.BACKEND,
    c.MOE_EP_SIZE,
    c.MOE_TP_SIZE,
)


def bench_model(model_prefix: str, hf_model: str) -> tuple[str | None, str | None, str | None]:
    """(bench_moe preset, unmapped reason, note) for a master ``model-prefix``."""
    p = model_prefix.lower()
    if p == "dsr1":
        return "deepseek_r1", None, None
    if p == "dsv4":
        if "flash" in hf_model.lower():
            return "deepseek_v4_flash", None, None
        return "deepseek_v4_pro", None, None
    if p in ("glm5", "glm5.1"):
        return "glm_5", None, None
    if p.startswith("glm5"):
        return "glm_5", None, f"{model_prefix}: shape assumed equal to GLM-5"
    if p == "kimik2.5":
        return "kimi_k2", None, None
    if p.startswith("kimik2"):
        return "kimi_k2", None, f"{model_prefix}: shape assumed equal to Kimi-K2"
    if p == "gptoss":
        return "gpt_oss_120b", None, None
    if p in CUSTOM_SHAPES:
        return None, f"no bench_moe preset for {model_prefix} (custom shape needed)", None
    return None, f"unknown model-prefix {model_prefix!r}", None


def bench_quant(
    model_prefix: str, precision: str, recipe_hint: str
) -> tuple[str | None, str | None]:
    """(bench_moe --quant, unmapped reason). ``recipe_hint``: config path + recipe model path."""
    prec = precision.lower()
    if prec == "fp4":
        # DeepSeek-V4-Pro "fp4" recipes are MXFP4 checkpoints (SS path `gb300_mxfp4`).
        if "mxfp4" in recipe_hint.lower() or model_prefix.lower() == "dsv4":
            return "W4A8_MXFP4_MXFP8", None
        if model_prefix.lower() == "gptoss":
            return None, "gpt-oss fp4 is MXFP4 weights; activation precision not in the matrix"
        return "NVFP4", None
    if prec == "fp8":
        return "FP8_BLOCK_SCALES", None
    if prec == "bf16":
        return "BF16", None
    return None, f"unknown precision {precision!r}"


def parallel_mode(attention_dp: bool, tp: int, ep: int) -> str:
    """bench_moe ``--parallel_mode`` of a worker with ``tp`` GPUs and MoE EP size ``ep``."""
    if ep == tp:
        return "DEP" if attention_dp else "TEP"
    if ep == 1:
        return "DTP" if attention_dp else "TTP"
    return f"{'DTP' if attention_dp else 'TTP'}{tp // ep}EP{ep}"


def default_graph_batch_sizes(max_batch_size: int, enable_padding: bool) -> list[int]:
    """TRT-LLM ``CudaGraphConfig._generate_cuda_graph_batch_sizes`` (1.x rule); see
    ``analysis.concurrency.graph_batch_sizes``, which this is.

    Used when a recipe gives ``cuda_graph_config.max_batch_size`` but no list. Newer
    TRT-LLM versions add sizes above 128 in steps of 64; the difference only matters for
    batches above 128, which is noted on the workload.
    """
    return graph_batch_sizes(max_batch_size, enable_padding)


def spec_tokens(spec: Mapping[str, Any] | None) -> int:
    """Draft tokens K of a TRT-LLM ``speculative_config`` (0 when absent)."""
    if not spec:
        return 0
    for key in ("num_nextn_predict_layers", "max_draft_len"):
        if spec.get(key) is not None:
            return int(spec[key])
    return 0


def _eplb_slots(moe_cfg: Mapping[str, Any]) -> int | None:
    """EPLB slots: ``load_balancer.num_slots``, or the number ending a placement-file path
    (``.../moe_load_balancer_gen_ep8_slots384.yaml`` -> 384; -1 if the name has none)."""
    lb = moe_cfg.get("load_balancer")
    if isinstance(lb, Mapping):
        return int(lb["num_slots"]) if lb.get("num_slots") is not None else -1
    if isinstance(lb, str):
        m = re.search(r"(\d+)\D*$", lb)
        return int(m.group(1)) if m else -1
    return None


def none_if_missing(v: Any) -> Any:
    """``v``, or None for a missing marker (None, NaN, NA, NaT)."""
    if v is None:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v


def map_point(point: Mapping[str, Any], recipe: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The prefill and decode workload rows of one serving point (a points-frame row)."""
    return [_map_phase(point, recipe, phase) for phase in ("prefill", "decode")]


def map_workloads(points: pd.DataFrame, recipes: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Workloads frame for every point (two rows each, prefill first). Inputs not mutated.

    Points of non-TensorRT-LLM frameworks appear with ``mappable`` False and the reason.
    """
    rows: list[dict[str, Any]] = []
    for rec in points.to_dict("records"):
        cf = none_if_missing(rec.get(cc.CONFIG_FILE))
        # A point the importer marked unresolved keeps no recipe even if the dict has it
        # (e.g. an IX-old file named by the current master).
        usable = cf is not None and none_if_missing(rec.get(cc.RECIPE_UNRESOLVED_REASON)) is None
        rows += map_point(rec, recipes.get(cf) if usable else None)
    return _typed(pd.DataFrame(rows, columns=list(cc.WORKLOAD_COLUMNS)))


_INT_COLS = (
    cc.ISL, cc.OSL, cc.CONC, c.NUM_EXPERTS, c.TOP_K, c.HIDDEN_SIZE, c.INTERMEDIATE_SIZE,
    c.WORLD_SIZE, cc.NUM_WORKERS, c.NUM_TOKENS, cc.NUM_TOKENS_1REQ, c.MOE_EP_SIZE,
    c.MOE_TP_SIZE, cc.EPLB_SLOTS, cc.SPEC_K, cc.MAX_BATCH_SIZE, cc.MAX_NUM_TOKENS,
    cc.BATCH_PER_RANK, cc.BATCH_PER_RANK_PADDED, cc.TOKENS_PER_RANK,
)  # fmt: skip
_BOOL_COLS = (c.CUDA_GRAPH, c.ATTENTION_DP, cc.COMM_FORCED, c.LOW_PRECISION_COMBINE, cc.MAPPABLE)


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Nullable integer/boolean dtypes, so a missing value stays missing and ints stay ints."""
    return df.astype({**dict.fromkeys(_INT_COLS, "Int64"), **dict.fromkeys(_BOOL_COLS, "boolean")})


def _map_phase(
    pt: Mapping[str, Any], recipe: Mapping[str, Any] | None, phase: str
) -> dict[str, Any]:
    why: dict[str, str] = {}
    notes: list[str] = []
    row: dict[str, Any] = dict.fromkeys(cc.WORKLOAD_COLUMNS)
    for col in (
        cc.POINT_ID, cc.SOURCE, cc.ENTRY, cc.FRAMEWORK, cc.SCENARIO, cc.MODEL_PREFIX,
        cc.PRECISION, cc.ISL, cc.OSL, cc.CONC, cc.SPEC_DECODING, cc.CONFIG_FILE,
        cc.RECIPE_PATH, c.HARDWARE,
    ):  # fmt: skip
        row[col] = none_if_missing(pt.get(col))
    row[cc.WORKLOAD_ID] = f"{pt[cc.POINT_ID]}:{phase}"
    row[cc.PHASE] = phase

    model, reason, note = bench_model(str(pt[cc.MODEL_PREFIX]), str(pt.get(cc.HF_MODEL) or ""))
    row[c.MODEL] = model
    if reason:
        why[c.MODEL] = reason
    if note:
        notes.append(note)
    shape = MODEL_SHAPES.get(model or "") or CUSTOM_SHAPES.get(str(pt[cc.MODEL_PREFIX]).lower())
    if shape:
        row[c.NUM_EXPERTS], row[c.TOP_K], row[c.HIDDEN_SIZE], row[c.INTERMEDIATE_SIZE] = shape

    if pt[cc.FRAMEWORK] not in TRTLLM_FRAMEWORKS:
        why["framework"] = (
            f"{pt[cc.FRAMEWORK]} is not TensorRT-LLM; bench_moe ranks TensorRT-LLM MoE configs"
        )
    role_cfg: Mapping[str, Any] = {}
    env: Mapping[str, Any] = {}
    if recipe is None:
        why["recipe"] = none_if_missing(pt.get(cc.RECIPE_UNRESOLVED_REASON)) or "no recipe"
    else:
        backend = recipe.get("backend") or {}
        tcfg = backend.get("trtllm_config") or {}
        if phase not in tcfg:
            if "aggregated" in tcfg:
                why["recipe"] = "aggregated serving recipe: no separate prefill/decode engine"
            else:
                why["recipe"] = f"recipe has no backend.trtllm_config.{phase}"
        else:
            role_cfg = tcfg[phase] or {}
            env = backend.get(f"{phase}_environment") or {}

    hint = f"{pt.get(cc.CONFIG_FILE) or ''} {((recipe or {}).get('model') or {}).get('path', '')}"
    quant, qreason = bench_quant(str(pt[cc.MODEL_PREFIX]), str(pt[cc.PRECISION]), hint)
    row[c.QUANT] = quant
    if qreason:
        why[c.QUANT] = qreason

    # Layout: the recipe is authoritative; the master's topology is the fallback.
    pre = "prefill_" if phase == "prefill" else "decode_"
    m_workers, m_tp = none_if_missing(pt.get(pre + "workers")), none_if_missing(pt.get(pre + "tp"))
    m_ep, m_adp = none_if_missing(pt.get(pre + "ep")), none_if_missing(pt.get(pre + "dp_attn"))
    tp = role_cfg.get("tensor_parallel_size", m_tp)
    ep = role_cfg.get("moe_expert_parallel_size", m_ep)
    adp = bool(role_cfg.get("enable_attention_dp", bool(m_adp) if m_adp is not None else False))
    if role_cfg and m_tp is not None and (int(tp) != int(m_tp) or int(ep) != int(m_ep)):
        notes.append(f"recipe tp/ep {tp}/{ep} differs from master {m_tp}/{m_ep}")
    workers = m_workers
    pp = none_if_missing(pt.get(pre + "pp")) or 1
    pcp = none_if_missing(pt.get(pre + "pcp")) or 1
    if int(pp) > 1 or int(pcp) > 1:
        notes.append(f"pp={pp} pcp={pcp}: world_size counts only the TP group")
    if tp is not None:
        tp = int(tp)
        ep = int(ep) if ep is not None else tp
        row[c.WORLD_SIZE] = tp
        row[c.MOE_EP_SIZE] = ep
        row[c.MOE_TP_SIZE] = int(role_cfg.get("moe_tensor_parallel_size", max(tp // ep, 1)))
        row[c.ATTENTION_DP] = adp
        row[c.ATTN] = "D" if adp else "T"
        row[c.PARALLEL_MODE] = parallel_mode(adp, tp, ep)
    else:
        why[c.WORLD_SIZE] = "no tp in master or recipe"
    row[cc.NUM_WORKERS] = None if workers is None else int(workers)

    moe_cfg = role_cfg.get("moe_config") or {}
    if moe_cfg.get("backend"):
        row[c.BACKEND] = str(moe_cfg["backend"]).upper()
    elif role_cfg:
        why[c.BACKEND] = "recipe moe_config.backend not set (TRT-LLM picks a default)"
    else:
        why.setdefault(c.BACKEND, "no recipe")
    lpc = moe_cfg.get("use_low_precision_moe_combine")
    row[c.LOW_PRECISION_COMBINE] = None if lpc is None else bool(lpc)
    row[cc.EPLB_SLOTS] = _eplb_slots(moe_cfg)
    if row[cc.EPLB_SLOTS] is not None:
        notes.append("EPLB in recipe: bench_moe models only the balanced routing pattern")
    forced = env.get("TRTLLM_FORCE_COMM_METHOD")
    row[c.COMM] = str(forced).upper() if forced else "AUTO"
    row[cc.COMM_FORCED] = bool(forced)
    k = spec_tokens(role_cfg.get("speculative_config"))
    row[cc.SPEC_K] = k
    b_max = none_if_missing(role_cfg.get("max_batch_size"))
    n_max = none_if_missing(role_cfg.get("max_num_tokens"))
    row[cc.MAX_BATCH_SIZE], row[cc.MAX_NUM_TOKENS] = b_max, n_max

    if role_cfg and tp is not None:
        if phase == "decode":
            _decode_tokens(row, pt, role_cfg, why, notes, k, adp, tp)
        else:
            _prefill_tokens(row, pt, role_cfg, why, adp, tp)
    else:
        why.setdefault(c.NUM_TOKENS, "no recipe engine config")
        why.setdefault(c.CUDA_GRAPH, "no recipe engine config")

    missing = [col for col in LEDGER_KEY if row[col] is None]
    for col in missing:
        why.setdefault(col, "unknown")
    row[cc.MAPPABLE] = not why
    row[cc.UNMAPPED_REASON] = "; ".join(f"{f}: {r}" for f, r in why.items()) or None
    row[cc.NOTES] = "; ".join(notes) or None
    return row


def _decode_tokens(
    row: dict[str, Any],
    pt: Mapping[str, Any],
    cfg: Mapping[str, Any],
    why: dict[str, str],
    notes: list[str],
    k: int,
    adp: bool,
    tp: int,
) -> None:
    # the conversion itself is analysis.concurrency.decode_tokens (shared with the
    # Recommend page and the API); here only the recipe is read
    b_max = none_if_missing(cfg.get("max_batch_size"))
    workers = int(none_if_missing(row[cc.NUM_WORKERS]) or 1)
    conc = int(pt[cc.CONC])
    graph = cfg.get("cuda_graph_config", "absent")
    sizes: Sequence[int] = ()
    padding = False
    generated = False
    if graph == "absent":
        why[c.CUDA_GRAPH] = "recipe has no cuda_graph_config (engine default is version-dependent)"
    elif isinstance(graph, Mapping):
        padding = bool(graph.get("enable_padding", False))
        if graph.get("batch_sizes"):
            sizes = sorted(int(s) for s in graph["batch_sizes"])
        else:
            mbs = int(graph.get("max_batch_size") or b_max or 128)
            sizes = default_graph_batch_sizes(mbs, padding)
            generated = True
    count = decode_tokens(
        conc,
        tp,
        adp,
        mtp=k,
        workers=workers,
        max_batch_size=None if b_max is None else int(b_max),
        graph_sizes=sizes,
        padding=padding,
    )
    if generated and (count.batch_per_rank or 0) > 128:
        notes.append("CUDA-graph sizes above 128 generated by the TRT-LLM 1.x rule")
    row[cc.BATCH_PER_RANK] = count.batch_per_rank
    row[cc.TOKENS_PER_RANK] = count.tokens_per_rank
    row[c.NUM_TOKENS] = count.num_tokens
    if graph != "absent":
        row[c.CUDA_GRAPH] = count.cuda_graph
        row[cc.BATCH_PER_RANK_PADDED] = count.batch_per_rank_padded


def _prefill_tokens(
    row: dict[str, Any],
    pt: Mapping[str, Any],
    cfg: Mapping[str, Any],
    why: dict[str, str],
    adp: bool,
    tp: int,
) -> None:
    # TRT-LLM captures CUDA graphs for generation batches only; context forwards run eager.
    row[c.CUDA_GRAPH] = False
    isl = none_if_missing(pt.get(cc.ISL))
    b_p = none_if_missing(cfg.get("max_batch_size"))
    n_p = none_if_missing(cfg.get("max_num_tokens"))
    if isl is None:
        why[c.NUM_TOKENS] = "agentic-coding scenario has no fixed ISL"
        return
    isl = int(isl)
    full = prefill_tokens(
        tp,
        adp,
        max_num_tokens=None if n_p is None else int(n_p),
        isl=isl,
        max_batch_size=None if b_p is None else int(b_p),
    )
    # one prompt per forward: max_batch_size 1
    one = prefill_tokens(
        tp, adp, max_num_tokens=None if n_p is None else int(n_p), isl=isl, max_batch_size=1
    )
    row[cc.BATCH_PER_RANK] = None if b_p is None else int(b_p)
    row[cc.TOKENS_PER_RANK] = full.tokens_per_rank
    row[c.NUM_TOKENS] = full.num_tokens
    row[cc.NUM_TOKENS_1REQ] = one.num_tokens
