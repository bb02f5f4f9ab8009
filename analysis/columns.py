"""The one place that names the columns of the candidate frame.

Every module that builds or reads a candidate DataFrame uses these constants, so a
rename happens here and nowhere else. A *candidate frame* has one row per bench_moe
candidate (workload x configuration) joined with the run-level facts of the run it came
from. ``db`` returns it, ``analysis`` consumes it, ``dashboard`` shows it.

Units: every ``*_ms`` column is milliseconds; token counts are tokens; ``dispatch_kb``
is KiB (1024 bytes); ``tokens_per_s_per_gpu`` is tokens per second per GPU.
"""

from __future__ import annotations

# --- run-level (one value per run, repeated on each candidate row) -----------------
RUN_ID = "run_id"
SOURCE_FORMAT = "source_format"  # bench_moe | bench_moe_legacy | nvidia_dashboard
MODEL = "model"  # bench_moe model name, e.g. "deepseek_v4_pro"
NUM_EXPERTS = "num_experts"
TOP_K = "top_k"
HIDDEN_SIZE = "hidden_size"
INTERMEDIATE_SIZE = "intermediate_size"
QUANT = "quant"  # model.quant_algo; "BF16" when the report says null (unquantized)
HARDWARE = "hardware"  # system label: GB200, GB300, B200, B300, H100, H200, ...
WORLD_SIZE = "world_size"
TRTLLM_VERSION = "trtllm_version"
TRTLLM_COMMIT = "trtllm_commit"
RUN_DATE = "run_date"  # ISO date string or None
SYNTHETIC = "synthetic"  # True for generated demo data

# --- candidate-level ---------------------------------------------------------------
CANDIDATE_INDEX = "candidate_index"  # 0-based index into the report's `results`
NUM_TOKENS = "num_tokens"  # bench_moe workload.num_tokens (DP: global total; TP: per rank)
PER_RANK_NUM_TOKENS = "per_rank_num_tokens"  # JSON text of the list, or None
PARALLEL_MODE = "parallel_mode"  # DEP, TEP, DTP, TTP, CUSTOM, DTP<k>EP<m>, TTP<k>EP<m>
ATTENTION_DP = "attention_dp"  # bool: attention data parallel (True) or TP (False)
ATTN = "attn"  # "D" / "T" / "?" (NVIDIA dashboard's attention family)
MOE_EP_SIZE = "moe_ep_size"
MOE_TP_SIZE = "moe_tp_size"
BACKEND = "backend"  # actual backend, falling back to the requested one
REQUESTED_BACKEND = "requested_backend"
COMM = "comm"  # canonical: NVLINK_ONE_SIDED, NVLINK_TWO_SIDED, DEEPEP, DEEPEPLOWLATENCY,
#               NCCL_EP, ALLGATHER, NONE, AUTO (AUTO = requested AUTO, actual unknown)
COMM_REQUESTED = "comm_requested"  # requested spelling, e.g. NVLINK_ONE_SIDED / AUTO
COMM_ACTUAL = "comm_actual"  # class-name spelling, e.g. NVLinkOneSided / NONE
CUDA_GRAPH = "cuda_graph"  # bool
LOW_PRECISION_COMBINE = "low_precision_combine"  # bool or None (unknown)
DISPATCH = "dispatch"  # routing/dispatch pattern label: balanced, recv_hotspot, ...
STATUS = "status"  # success | skipped | failed
FAILURE_CATEGORY = "failure_category"  # see ingest.failures; None on success
SKIP_REASON = "skip_reason"  # full text as the report gave it
SCORE_MS = "score_ms"  # bench_moe score: trimmed mean of per-iteration slowest rank
RAW_SCORE_MS = "raw_score_ms"  # untrimmed mean
SCORE_TYPE = "score_type"
ITER_MEAN_MS = "iter_mean_ms"
ITER_MEDIAN_MS = "iter_median_ms"
ITER_STDEV_MS = "iter_stdev_ms"
ITER_MIN_MS = "iter_min_ms"
ITER_MAX_MS = "iter_max_ms"
ITER_P90_MS = "iter_p90_ms"
OUTLIER_COUNT = "outlier_count"
N_ITERS = "n_iters"  # samples per rank, inferred from raw data; None when unknown
AUTOTUNE_STATUS = "autotune_status"
BOTTLENECK = "bottleneck"
SCHEDULER_KIND = "scheduler_kind"
NUM_CHUNKS = "num_chunks"
ROUTING_STATUS = "routing_status"  # routing_realization.status (exact, projected, ...)
OFF_DIAGONAL_RATIO = "off_diagonal_ratio"
ACTIVE_EXPERTS = "active_experts"
SOURCE_RANK = "source_rank"  # NVIDIA dashboard's rank 1..3; None for bench_moe files
PER_RANK_JSON = "per_rank_json"  # JSON text: latency_ms.per_rank + status_per_rank
EXTRA_JSON = "extra_json"  # JSON text: keys of the row this version does not know

# --- derived (added by analysis.derived.add_derived) -----------------------------------
ACTIVATED_TOKENS_PER_RANK = "activated_tokens_per_rank"
DISPATCH_KB = "dispatch_kb"
TOKENS_PER_S_PER_GPU = "tokens_per_s_per_gpu"
LOCAL_BATCH = "local_batch"
PHASE = "phase"  # "decode" (CUDA graph on) / "prefill" (CUDA graph off)

RUN_COLUMNS: tuple[str, ...] = (
    RUN_ID,
    SOURCE_FORMAT,
    MODEL,
    NUM_EXPERTS,
    TOP_K,
    HIDDEN_SIZE,
    INTERMEDIATE_SIZE,
    QUANT,
    HARDWARE,
    WORLD_SIZE,
    TRTLLM_VERSION,
    TRTLLM_COMMIT,
    RUN_DATE,
    SYNTHETIC,
)

# Columns a parser produces for each candidate (the `candidates` table minus run_id).
CANDIDATE_COLUMNS: tuple[str, ...] = (
    CANDIDATE_INDEX,
    NUM_TOKENS,
    PER_RANK_NUM_TOKENS,
    PARALLEL_MODE,
    ATTENTION_DP,
    ATTN,
    MOE_EP_SIZE,
    MOE_TP_SIZE,
    BACKEND,
    REQUESTED_BACKEND,
    COMM,
    COMM_REQUESTED,
    COMM_ACTUAL,
    CUDA_GRAPH,
    LOW_PRECISION_COMBINE,
    DISPATCH,
    STATUS,
    FAILURE_CATEGORY,
    SKIP_REASON,
    SCORE_MS,
    RAW_SCORE_MS,
    SCORE_TYPE,
    ITER_MEAN_MS,
    ITER_MEDIAN_MS,
    ITER_STDEV_MS,
    ITER_MIN_MS,
    ITER_MAX_MS,
    ITER_P90_MS,
    OUTLIER_COUNT,
    N_ITERS,
    AUTOTUNE_STATUS,
    BOTTLENECK,
    SCHEDULER_KIND,
    NUM_CHUNKS,
    ROUTING_STATUS,
    OFF_DIAGONAL_RATIO,
    ACTIVE_EXPERTS,
    SOURCE_RANK,
    PER_RANK_JSON,
    EXTRA_JSON,
)

# Column kinds, used by db/ to declare the table and by tests to build frames.
INT_COLUMNS = frozenset(
    {
        RUN_ID,
        NUM_EXPERTS,
        TOP_K,
        HIDDEN_SIZE,
        INTERMEDIATE_SIZE,
        WORLD_SIZE,
        CANDIDATE_INDEX,
        NUM_TOKENS,
        MOE_EP_SIZE,
        MOE_TP_SIZE,
        OUTLIER_COUNT,
        N_ITERS,
        NUM_CHUNKS,
        ACTIVE_EXPERTS,
        SOURCE_RANK,
    }
)
FLOAT_COLUMNS = frozenset(
    {
        SCORE_MS,
        RAW_SCORE_MS,
        ITER_MEAN_MS,
        ITER_MEDIAN_MS,
        ITER_STDEV_MS,
        ITER_MIN_MS,
        ITER_MAX_MS,
        ITER_P90_MS,
        OFF_DIAGONAL_RATIO,
    }
)
BOOL_COLUMNS = frozenset({ATTENTION_DP, CUDA_GRAPH, LOW_PRECISION_COMBINE, SYNTHETIC})
# Everything else is text.

# Canonical communication names (env-style, as TRTLLM_FORCE_COMM_METHOD spells them).
COMM_CANONICAL: tuple[str, ...] = (
    "NVLINK_ONE_SIDED",
    "NVLINK_TWO_SIDED",
    "DEEPEP",
    "DEEPEPLOWLATENCY",
    "NCCL_EP",
    "ALLGATHER",
    "NONE",
    "AUTO",
)

# Bytes per activation element for dispatch volume, by quantization (model.quant_algo).
BYTES_PER_ELEM: dict[str, float] = {
    "NVFP4": 0.5,
    "W4A16_NVFP4": 2.0,
    "W4A8_NVFP4_FP8": 1.0,
    "W4A8_MXFP4_MXFP8": 1.0,
    "W4A8_MXFP4_FP8": 1.0,
    "W4A16_MXFP4": 2.0,
    "W4A8_AWQ": 1.0,
    "W8A16": 2.0,
    "MXFP8": 1.0,
    "FP8": 1.0,
    "FP8_BLOCK_SCALES": 1.0,
    "BF16": 2.0,
    "FP16": 2.0,
}

# One workload: every column that fixes what was measured, short of the recipe being compared.
# Threshold checks, the agreement view and the pairwise threshold fits all group by it.
WORKLOAD_KEYS: tuple[str, ...] = (
    MODEL,
    HARDWARE,
    QUANT,
    WORLD_SIZE,
    NUM_TOKENS,
    DISPATCH,
    ATTENTION_DP,
    CUDA_GRAPH,
)
