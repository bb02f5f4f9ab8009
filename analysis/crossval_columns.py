"""Column names of the cross-validation frames (serving points, workloads, ledger, summary).

The candidate frame's names live in ``analysis.columns``; where a workload or ledger
column means the same thing as a candidate column (model, quant, hardware, world_size,
num_tokens, cuda_graph, attention_dp, backend, moe_ep_size, moe_tp_size, comm,
parallel_mode) it reuses that constant, so the ledger join is by name.
"""

from __future__ import annotations

from analysis import columns as c

# --- serving points (ingest.serving_configs.points_frame) ---------------------------
POINT_ID = "point_id"  # stable 16-hex hash of every parsed field of the point
SOURCE = "source"  # master file relative to the data dir
ENTRY = "entry"  # master entry name, e.g. dsr1-fp8-h200-dynamo-trt
HF_MODEL = "hf_model"  # master `model` (HF id or alias)
MODEL_PREFIX = "model_prefix"  # dsr1, dsv4, glm5, kimik2.5, qwen3.5, ...
PRECISION = "precision"  # fp4 | fp8 | ...
SERVING_HARDWARE = c.HARDWARE  # GB200, GB300, B200, B300, H100, H200
FRAMEWORK = "framework"  # dynamo-trt, trt, dynamo-sglang, ...
IMAGE = "image"
MULTINODE = "multinode"
DISAGG = "disagg"
SCENARIO = "scenario"  # fixed-seq-len | agentic-coding
ISL = "isl"  # tokens; None for agentic-coding
OSL = "osl"
CONC = "conc"  # requests in flight (sa-bench max_concurrency)
SPEC_DECODING = "spec_decoding"  # mtp | none
PREFILL_LAYOUT = (
    "prefill_workers",
    "prefill_tp",
    "prefill_ep",
    "prefill_dp_attn",
    "prefill_pp",
    "prefill_pcp",
)
DECODE_LAYOUT = (
    "decode_workers",
    "decode_tp",
    "decode_ep",
    "decode_dp_attn",
    "decode_pp",
    "decode_pcp",
)
CONFIG_FILE = "config_file"  # as the master writes it, selector included
RECIPE_ROOT = "recipe_root"  # IX | IX-old | SS | SS-main, None when unresolved
RECIPE_PATH = "recipe_path"  # "<root>:<path>" actually read
RECIPE_HASH = "recipe_hash"  # sha256 of (recipe text, selector)
RECIPE_UNRESOLVED_REASON = "recipe_unresolved_reason"

POINT_COLUMNS: tuple[str, ...] = (
    POINT_ID,
    SOURCE,
    ENTRY,
    HF_MODEL,
    MODEL_PREFIX,
    PRECISION,
    SERVING_HARDWARE,
    FRAMEWORK,
    IMAGE,
    MULTINODE,
    DISAGG,
    SCENARIO,
    ISL,
    OSL,
    CONC,
    SPEC_DECODING,
    *PREFILL_LAYOUT,
    *DECODE_LAYOUT,
    CONFIG_FILE,
    RECIPE_ROOT,
    RECIPE_PATH,
    RECIPE_HASH,
    RECIPE_UNRESOLVED_REASON,
)

# --- workloads (analysis.serving_map.map_workloads): one row per point x phase -------
WORKLOAD_ID = "workload_id"  # f"{point_id}:{phase}"
PHASE = c.PHASE  # prefill | decode
MAPPABLE = "mappable"  # bool: every field needed for the ledger key is known
UNMAPPED_REASON = "unmapped_reason"  # "field: why; field: why" or None
NOTES = "notes"  # caveats that do not block the mapping (EPLB, assumed quant, ...)
NUM_WORKERS = "num_workers"  # workers of this phase's pool
SPEC_K = "spec_k"  # MTP/Eagle draft tokens K (0 without speculation)
MAX_BATCH_SIZE = "max_batch_size"  # recipe max_batch_size (requests per attention rank)
MAX_NUM_TOKENS = "max_num_tokens"  # recipe max_num_tokens (tokens per forward per rank)
BATCH_PER_RANK = "batch_per_rank"  # decode: min(B_max, ceil(conc/W/dp)); prefill: prompts
BATCH_PER_RANK_PADDED = "batch_per_rank_padded"  # decode: padded up to a CUDA-graph size
TOKENS_PER_RANK = "tokens_per_rank"  # MoE input tokens per attention rank per forward
NUM_TOKENS_1REQ = "num_tokens_1req"  # prefill only: bench_moe num_tokens at one prompt
COMM_FORCED = "comm_forced"  # bool: TRTLLM_FORCE_COMM_METHOD set in the recipe env
EPLB_SLOTS = "eplb_slots"  # load_balancer.num_slots, None without EPLB

WORKLOAD_COLUMNS: tuple[str, ...] = (
    WORKLOAD_ID,
    POINT_ID,
    PHASE,
    SOURCE,
    ENTRY,
    FRAMEWORK,
    SCENARIO,
    MODEL_PREFIX,
    PRECISION,
    ISL,
    OSL,
    CONC,
    SPEC_DECODING,
    CONFIG_FILE,
    RECIPE_PATH,
    c.MODEL,
    c.NUM_EXPERTS,
    c.TOP_K,
    c.HIDDEN_SIZE,
    c.INTERMEDIATE_SIZE,
    c.QUANT,
    c.HARDWARE,
    c.WORLD_SIZE,
    NUM_WORKERS,
    c.NUM_TOKENS,
    NUM_TOKENS_1REQ,
    c.CUDA_GRAPH,
    c.ATTENTION_DP,
    c.ATTN,
    c.PARALLEL_MODE,
    c.BACKEND,
    c.MOE_EP_SIZE,
    c.MOE_TP_SIZE,
    c.COMM,
    COMM_FORCED,
    c.LOW_PRECISION_COMBINE,
    EPLB_SLOTS,
    SPEC_K,
    MAX_BATCH_SIZE,
    MAX_NUM_TOKENS,
    BATCH_PER_RANK,
    BATCH_PER_RANK_PADDED,
    TOKENS_PER_RANK,
    MAPPABLE,
    UNMAPPED_REASON,
    NOTES,
)

# --- ledger (analysis.crossval.ledger): one row per workload ------------------------
STATUS = "crossval_status"  # Match | Mismatch | no data | not mappable
REASON = "reason"  # why "no data" / "not mappable"
DIFFERS = "differs"  # "backend: CUTLASS->TRTLLM; moe_ep_size: 8->1" (deployed->best)
N_CANDIDATES = "n_candidates"  # successful candidates compared
MEASURED_NUM_TOKENS = "measured_num_tokens"  # num_tokens of the candidates used
NEAREST_TOKENS_USED = "nearest_tokens_used"  # bool: measured != mapped num_tokens
BEST_BACKEND = "best_backend"
BEST_MOE_EP_SIZE = "best_moe_ep_size"
BEST_MOE_TP_SIZE = "best_moe_tp_size"
BEST_COMM = "best_comm"
BEST_PARALLEL_MODE = "best_parallel_mode"
BEST_SCORE_MS = "best_score_ms"
DEPLOYED_SCORE_MS = "deployed_score_ms"  # best score among candidates equal to deployed
DEPLOYED_RANK = "deployed_rank"  # 1-based rank of that candidate, None if not measured
DEPLOYED_GAP_PCT = "deployed_gap_pct"  # (deployed - best) / best * 100
# backends of the candidates faster than the deployed config, fastest first, space-joined
# ("" when it is the fastest; None when not measured): what a candidate filter removes
FASTER_THAN_DEPLOYED = "faster_than_deployed"
# Best candidate within the deployed layout family (EP / TP / hybrid; rule same_layout).
LAYOUT_BEST_BACKEND = "layout_best_backend"
LAYOUT_BEST_MOE_EP_SIZE = "layout_best_moe_ep_size"
LAYOUT_BEST_MOE_TP_SIZE = "layout_best_moe_tp_size"
LAYOUT_BEST_COMM = "layout_best_comm"
LAYOUT_BEST_SCORE_MS = "layout_best_score_ms"
LAYOUT_DIFFERS = "layout_differs"  # deployed -> layout-family best, None when equal
# Set by analysis.crossval_rules.apply_rule:
RULE = "match_rule"  # exact | backend | within_noise | same_layout
CAUSE = "cause"  # why not a Match under exact: rule | tie within noise | different winner | no data
SWEEP_COMMAND = "sweep_command"  # no data: the bench_moe command that would fill the row

LEDGER_COLUMNS: tuple[str, ...] = (
    WORKLOAD_ID,
    POINT_ID,
    PHASE,
    ENTRY,
    SCENARIO,
    CONC,
    c.MODEL,
    c.QUANT,
    c.HARDWARE,
    c.WORLD_SIZE,
    c.NUM_TOKENS,
    c.CUDA_GRAPH,
    c.ATTENTION_DP,
    c.PARALLEL_MODE,
    c.BACKEND,
    c.MOE_EP_SIZE,
    c.MOE_TP_SIZE,
    c.COMM,
    COMM_FORCED,
    c.LOW_PRECISION_COMBINE,
    STATUS,
    DIFFERS,
    REASON,
    N_CANDIDATES,
    MEASURED_NUM_TOKENS,
    NEAREST_TOKENS_USED,
    BEST_BACKEND,
    BEST_MOE_EP_SIZE,
    BEST_MOE_TP_SIZE,
    BEST_COMM,
    BEST_PARALLEL_MODE,
    BEST_SCORE_MS,
    DEPLOYED_SCORE_MS,
    DEPLOYED_RANK,
    DEPLOYED_GAP_PCT,
    FASTER_THAN_DEPLOYED,
    LAYOUT_BEST_BACKEND,
    LAYOUT_BEST_MOE_EP_SIZE,
    LAYOUT_BEST_MOE_TP_SIZE,
    LAYOUT_BEST_COMM,
    LAYOUT_BEST_SCORE_MS,
    LAYOUT_DIFFERS,
)
# A ledger with a rule applied: LEDGER_COLUMNS plus these.
RULED_COLUMNS: tuple[str, ...] = (RULE, CAUSE, SWEEP_COMMAND)

MATCH = "Match"
MISMATCH = "Mismatch"
NO_DATA = "no data"
NOT_MAPPABLE = "not mappable"

# --- end-to-end outcomes --------------------------------------------------------------
IMPROVEMENT = "Improvement"
FLAT = "Flat"
REGRESSION = "Regression"
REGRESSION_AFTER_PR = "Regression after perfect routing"  # a subset of Regression
OUTCOME = "outcome"
TPS_DEPLOYED = "tps_per_user_deployed"
TPS_CANDIDATE = "tps_per_user_candidate"
TPS_CANDIDATE_PR = "tps_per_user_candidate_perfect_routing"
TPS_DEPLOYED_PR = "tps_per_user_deployed_perfect_routing"
CHANGE_PCT = "change_pct"
OUTCOME_COLUMNS: tuple[str, ...] = (
    WORKLOAD_ID,
    TPS_DEPLOYED,
    TPS_CANDIDATE,
    TPS_CANDIDATE_PR,
    TPS_DEPLOYED_PR,
    CHANGE_PCT,
    OUTCOME,
)

# --- summary (analysis.crossval.summary): the guide's table -------------------------
S_MODEL = "Model"  # display name, e.g. DeepSeek-R1
S_HARDWARE = "Hardware"
S_MATCH = "Match"  # "92/108 (85.19%, prefill 54/54, decode 38/54)"
S_MISMATCH = "Mismatch"  # "16/108"
S_IMPROVEMENT = "Improvement"  # "x/<mismatches>"
S_FLAT = "Flat"
S_REGRESSION = "Regression"
S_REGRESSION_AFTER_PR = "Regression after Perfect Routing"
N_COMPARED = "n_compared"  # Match + Mismatch
N_MATCH = "n_match"
MATCH_PCT = "match_pct"
N_PREFILL = "n_prefill"
N_PREFILL_MATCH = "n_prefill_match"
N_DECODE = "n_decode"
N_DECODE_MATCH = "n_decode_match"
N_MISMATCH = "n_mismatch"
N_IMPROVEMENT = "n_improvement"
N_FLAT = "n_flat"
N_REGRESSION = "n_regression"  # includes the after-perfect-routing ones
N_REGRESSION_AFTER_PR = "n_regression_after_perfect_routing"
N_NOT_EVALUATED = "n_not_evaluated"  # mismatches without an outcome record
N_NO_DATA = "n_no_data"  # mappable workloads without candidates
SUMMARY_COLUMNS: tuple[str, ...] = (
    S_MODEL,
    S_HARDWARE,
    S_MATCH,
    S_MISMATCH,
    S_IMPROVEMENT,
    S_FLAT,
    S_REGRESSION,
    S_REGRESSION_AFTER_PR,
    N_COMPARED,
    N_MATCH,
    MATCH_PCT,
    N_PREFILL,
    N_PREFILL_MATCH,
    N_DECODE,
    N_DECODE_MATCH,
    N_MISMATCH,
    N_IMPROVEMENT,
    N_FLAT,
    N_REGRESSION,
    N_REGRESSION_AFTER_PR,
    N_NOT_EVALUATED,
    N_NO_DATA,
)

# bench_moe model name -> the guide's display name
MODEL_DISPLAY: dict[str, str] = {
    "deepseek_r1": "DeepSeek-R1",
    "deepseek_v4_pro": "DeepSeek-V4-Pro",
    "deepseek_v4_flash": "DeepSeek-V4-Flash",
    "glm_5": "GLM-5",
    "kimi_k2": "Kimi-K2",
    "gpt_oss_120b": "gpt-oss-120b",
}
