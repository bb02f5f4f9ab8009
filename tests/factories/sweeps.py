"""Small Sweep builders for store/API tests (independent of any parser)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from analysis import columns as C
from ingest.records import RUN_EXTRA_KEYS, Sweep
from tests.factories import DEFAULTS


def make_run(**overrides: object) -> dict[str, object]:
    run: dict[str, object] = {name: None for name in C.RUN_COLUMNS if name != C.RUN_ID}
    run.update({name: None for name in RUN_EXTRA_KEYS})
    shape = (
        C.SOURCE_FORMAT,
        C.MODEL,
        C.NUM_EXPERTS,
        C.TOP_K,
        C.HIDDEN_SIZE,
        C.INTERMEDIATE_SIZE,
        C.QUANT,
        C.HARDWARE,
    )
    run.update({name: DEFAULTS[name] for name in shape})
    run.update(
        {
            C.WORLD_SIZE: 4,
            C.TRTLLM_VERSION: "v1.3.0rc26",
            C.SYNTHETIC: False,
            "model_json": json.dumps({"name": "deepseek_v4_pro", "swiglu_limit": "Infinity"}),
        }
    )
    run.update(overrides)
    return run


def make_candidates(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    status = np.where(np.arange(n) % 10 == 9, "failed", "success")
    score = rng.uniform(0.05, 5.0, n)
    data: dict[str, object] = {name: [None] * n for name in C.CANDIDATE_COLUMNS}
    data.update(
        {
            C.CANDIDATE_INDEX: np.arange(n),
            C.NUM_TOKENS: 2 ** (np.arange(n) % 12),
            C.PARALLEL_MODE: np.where(np.arange(n) % 2 == 0, "DEP", "TEP"),
            C.ATTENTION_DP: np.arange(n) % 2 == 0,
            C.ATTN: np.where(np.arange(n) % 2 == 0, "D", "T"),
            C.MOE_EP_SIZE: np.full(n, 4),
            C.MOE_TP_SIZE: np.ones(n, dtype=int),
            C.BACKEND: np.array(["TRTLLM", "CUTEDSL", "CUTLASS"])[np.arange(n) % 3],
            C.REQUESTED_BACKEND: np.array(["TRTLLM", "CUTEDSL", "CUTLASS"])[np.arange(n) % 3],
            C.COMM: np.where(np.arange(n) % 2 == 0, "NVLINK_ONE_SIDED", "NONE"),
            C.CUDA_GRAPH: np.arange(n) % 4 < 2,
            C.STATUS: status,
            C.SCORE_MS: np.where(status == "success", score, np.nan),
            C.FAILURE_CATEGORY: np.where(status == "failed", "timed_phase_error", None),
            C.SKIP_REASON: np.where(
                status == "failed", "timed phase error: OutOfMemoryError: <b>x</b>'; --", None
            ),
        }
    )
    return pd.DataFrame(data, columns=list(C.CANDIDATE_COLUMNS))


def make_sweep(n: int = 20, seed: int = 0, key: str = "", **run: object) -> Sweep:
    return Sweep(key=key, run=make_run(**run), candidates=make_candidates(n, seed))
