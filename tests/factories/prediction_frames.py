"""Cell frames for the predictions: power-law configurations with known answers, and
one cell of the synthetic demo generator parsed like an upload (our own data)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis import columns as C
from db.store import Store
from ingest.bench_moe import parse_bench_moe
from ingest.demo.generate import dump_report, generate_report
from ingest.records import UploadMeta
from service.frames import prepare_frame
from tests import factories

TOKENS = tuple(2**i for i in range(11))  # 1 .. 1024
# backend: (a, b) of score_ms = a * num_tokens ** b; CUTLASS wins below 32 tokens,
# TRTLLM above (0.1 * t**0.3 == 0.02 * t**0.765 at t = 32)
CURVES: dict[str, tuple[float, float]] = {
    "TRTLLM": (0.1, 0.3),
    "CUTLASS": (0.02, 0.3 + np.log(5) / np.log(32)),
    "CUTEDSL": (0.2, 0.4),
}


def power_law_frame(
    tokens: Sequence[int] = TOKENS, noise: float = 0.0, seed: int = 0, world_size: int = 8
) -> pd.DataFrame:
    """One run: each backend of :data:`CURVES` at every token count, multiplied by a
    log-normal noise of spread ``noise``."""
    rng = np.random.default_rng(seed)
    rows = [
        {
            C.BACKEND: b,
            C.NUM_TOKENS: t,
            C.WORLD_SIZE: world_size,
            C.PARALLEL_MODE: "DEP",
            C.SCORE_MS: a * t**e * float(np.exp(rng.normal(0.0, noise))),
            C.CANDIDATE_INDEX: i,
        }
        for i, (t, (b, (a, e))) in enumerate((t, kv) for t in tokens for kv in CURVES.items())
    ]
    return prepare_frame(factories.make_candidates(rows))


def demo_cell(world_sizes: Sequence[int] = (4, 8)) -> pd.DataFrame:
    """deepseek_v4_pro · GB300 · NVFP4 of the synthetic demo generator, token counts
    1 .. 32768, one run per world size."""
    parts = []
    for run_id, ws in enumerate(world_sizes, 1):
        report = generate_report(
            "deepseek_v4_pro", "GB300", "NVFP4", ws, tuple(2**j for j in range(16))
        )
        for sweep in parse_bench_moe(dump_report(report), UploadMeta(hardware="GB300")):
            frame = sweep.candidates.copy()
            for key, value in sweep.run.items():
                if key in C.RUN_COLUMNS:
                    frame[key] = value
            frame[C.RUN_ID] = run_id
            parts.append(frame)
    return prepare_frame(pd.concat(parts, ignore_index=True))


def seed_demo_cell(store: Store, world_sizes: Sequence[int] = (8,)) -> None:
    """Store the demo cell of :func:`demo_cell` (one upload per world size)."""
    for ws in world_sizes:
        report = generate_report(
            "deepseek_v4_pro", "GB300", "NVFP4", ws, tuple(2**j for j in range(16))
        )
        raw = dump_report(report)
        meta = UploadMeta(hardware="GB300", filename=f"demo-ws{ws}.json")
        store.ingest(parse_bench_moe(raw, meta), raw, meta)


def top3_frame(rows: Sequence[tuple[str, int, float]], attention_dp: bool = True) -> pd.DataFrame:
    """A prepared cell frame of the given (backend, num_tokens, score_ms) rows at world size
    8, DEP (attention DP) or TEP: what a top-3-only source keeps of a sweep."""
    return prepare_frame(
        factories.make_candidates(
            [
                {
                    "backend": b,
                    "num_tokens": t,
                    "score_ms": s,
                    "world_size": 8,
                    "parallel_mode": "DEP" if attention_dp else "TEP",
                    "attention_dp": attention_dp,
                    "candidate_index": i,
                }  # fmt: skip
                for i, (b, t, s) in enumerate(rows)
            ]
        )
    )
