"""A skewed-routing run beside a balanced run of the same workloads (our own values).

Cell kimi_k2 · GB300 · NVFP4 (384 experts, top_k 8), world size 16, attention DP (DEP).
Run "balanced" has dispatch label ``balanced``, run "skewed" ``recv_hotspot`` (a
receiver-hotspot routing plan); both ran with --use_low_precision_moe_combine. Scores
(ms), with every iteration spread 0.5 % of the score (so noise bands are 0.71 %):

=========================  ==========  ==========  ==========  ==========  ==============
configuration (DEP, EP 16)  256 tok bal  256 tok skew  4096 tok bal  4096 tok skew  phase
=========================  ==========  ==========  ==========  ==========  ==============
TRTLLM / NVLINK_ONE_SIDED   1.00        1.50        2.40        2.50        decode
CUTEDSL / NVLINK_ONE_SIDED  1.10        1.32        2.60        2.70        decode
MEGAMOE_CUTEDSL / NONE      1.20        1.26        2.00        2.10        decode
TRTLLM / ALLGATHER          1.30        --          --          --          decode
=========================  ==========  ==========  ==========  ==========  ==============

Known answers at 256 tokens, decode: balanced ranks 1-4 in table order; skewed ranks
MEGAMOE_CUTEDSL 1, CUTEDSL 2, TRTLLM/NVLINK_ONE_SIDED 3 (rank changes -2, 0, +2);
slowdowns +50 %, +20 %, +5 %; the winner changes; deploying the balanced pick under skew
costs 1.50 / 1.26 - 1 = 19.05 %; EPLB indicated (decode, EP 16 > 8, median slowdown 20 %
beyond the 0.71 % band). Prefill (CUDA graph off) at 16384 tokens: TRTLLM/NVLINK_ONE_SIDED
8.0 -> 8.4 ms, MEGAMOE_CUTEDSL 9.0 -> 9.2 ms (DWDP indicated, EPLB not). Attention TP
(TEP) at 256 tokens: TRTLLM / NONE 0.9 ms under balanced only (one pattern: no comparison).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import columns as C
from db.store import Store
from ingest.records import Sweep, UploadMeta
from tests import factories
from tests.factories import sweeps

MODEL, HARDWARE, QUANT, WORLD_SIZE = "kimi_k2", "GB300", "NVFP4", 16
CELL_KEY = f"{MODEL}|{HARDWARE}|{QUANT}"
SKEWED = "recv_hotspot"
# (backend, comm, parallel mode, num_tokens, cuda_graph, balanced ms, skewed ms or None)
ROWS: tuple[tuple[str, str, str, int, bool, float, float | None], ...] = (
    ("TRTLLM", "NVLINK_ONE_SIDED", "DEP", 256, True, 1.00, 1.50),
    ("CUTEDSL", "NVLINK_ONE_SIDED", "DEP", 256, True, 1.10, 1.32),
    ("MEGAMOE_CUTEDSL", "NONE", "DEP", 256, True, 1.20, 1.26),
    ("TRTLLM", "ALLGATHER", "DEP", 256, True, 1.30, None),
    ("TRTLLM", "NVLINK_ONE_SIDED", "DEP", 4096, True, 2.40, 2.50),
    ("CUTEDSL", "NVLINK_ONE_SIDED", "DEP", 4096, True, 2.60, 2.70),
    ("MEGAMOE_CUTEDSL", "NONE", "DEP", 4096, True, 2.00, 2.10),
    ("TRTLLM", "NVLINK_ONE_SIDED", "DEP", 16384, False, 8.00, 8.40),
    ("MEGAMOE_CUTEDSL", "NONE", "DEP", 16384, False, 9.00, 9.20),
    ("TRTLLM", "NONE", "TEP", 256, True, 0.90, None),
)
# the query of the headline workload (API / service parameters)
WORKLOAD: dict[str, Any] = {
    "model": MODEL,
    "hardware": HARDWARE,
    "quant": QUANT,
    "world_size": WORLD_SIZE,
    "num_tokens": 256,
    "phase": "decode",
    "attention": "dp",
}


def _candidates(dispatch: str, skewed: bool) -> pd.DataFrame:
    rows = []
    for backend, comm, mode, tokens, graph, bal, skew in ROWS:
        score = skew if skewed else bal
        if score is None:
            continue
        rows.append(
            {
                C.CANDIDATE_INDEX: len(rows),
                C.MODEL: MODEL,
                C.NUM_EXPERTS: 384,
                C.TOP_K: 8,
                C.WORLD_SIZE: WORLD_SIZE,
                C.BACKEND: backend,
                C.COMM: comm,
                C.PARALLEL_MODE: mode,
                C.NUM_TOKENS: tokens,
                C.CUDA_GRAPH: graph,
                C.SCORE_MS: score,
                C.DISPATCH: dispatch,
            }
        )
    return factories.make_candidates(rows)[list(C.CANDIDATE_COLUMNS)]


def skew_sweeps() -> tuple[Sweep, Sweep]:
    """(balanced run, skewed run) of the same workloads."""
    out = []
    for dispatch, skewed in (("balanced", False), (SKEWED, True)):
        run = sweeps.make_run(
            model=MODEL,
            num_experts=384,
            top_k=8,
            hardware=HARDWARE,
            world_size=WORLD_SIZE,
            trtllm_version="v1.3.0rc26",
            run_date="2026-09-14" if skewed else "2026-09-13",
            synthetic=False,
        )
        out.append(Sweep(key="", run=run, candidates=_candidates(dispatch, skewed)))
    return out[0], out[1]


def seed_skew(store: Store) -> dict[str, int]:
    """Store both runs; returns their run ids as {"balanced": id, "skewed": id}."""
    ids = {}
    for name, sweep in zip(("balanced", "skewed"), skew_sweeps(), strict=True):
        res = store.ingest(
            [sweep],
            f"routing-skew-{name}".encode(),
            UploadMeta(hardware=HARDWARE, filename=f"kimi_k2_ws16_{name}.json"),
        )
        ids[name] = res.runs[0].run_id
    return ids
