"""A cell read in pieces (``StatsRepository.cell_pieces``), on DuckDB and PostgreSQL:
whole runs per piece, in order, every row of the whole read once, each piece typed as a
read of its own rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from db.stats import _pieces
from db.store import Store
from ingest.records import Sweep, UploadMeta
from tests.factories import sweeps

CELL = ("deepseek_v4_pro", "GB300", "NVFP4")
COLUMNS = (
    C.CANDIDATE_INDEX,
    C.NUM_TOKENS,
    C.MOE_EP_SIZE,
    C.OUTLIER_COUNT,
    C.BACKEND,
    C.DISPATCH,
    C.CUDA_GRAPH,
    C.LOW_PRECISION_COMBINE,
    C.STATUS,
    C.FAILURE_CATEGORY,
    C.SCORE_MS,
)


def _sweep(n: int, seed: int, **run: Any) -> Sweep:
    meta = {C.MODEL: CELL[0], C.HARDWARE: CELL[1], C.QUANT: CELL[2], **run}
    return sweeps.make_sweep(n, seed=seed, **meta)


def seed_mixed_cell(store: Store) -> list[int]:
    """Four runs of one cell that differ the way pieces can (plus a run of another
    cell), in run id order:

    1. 20 candidates; outlier counts, dispatch and the low-precision flag all missing;
    2. 25 candidates; a missing EP size and CUDA-graph flag (nullable only here),
       outlier counts, dispatch and the low-precision flag all given, a backend and a
       failure category no other run has, another TensorRT-LLM version;
    3. 15 candidates at world size 8, another run date, no commit;
    4. no candidate at all (its run facts still name categories)."""
    first = _sweep(20, 1)
    second = _sweep(25, 2, trtllm_version="v1.4.0", trtllm_commit="abc123")
    c = second.candidates
    c[C.MOE_EP_SIZE] = c[C.MOE_EP_SIZE].astype(object)
    c.loc[3, C.MOE_EP_SIZE] = None
    c[C.CUDA_GRAPH] = c[C.CUDA_GRAPH].astype(object)
    c.loc[5, C.CUDA_GRAPH] = None
    c[C.OUTLIER_COUNT] = np.arange(len(c)) % 3
    c[C.DISPATCH] = np.where(np.arange(len(c)) % 2 == 0, "balanced", "random")
    c[C.LOW_PRECISION_COMBINE] = True
    c.loc[7, C.BACKEND] = "NEW_BACKEND"
    c.loc[9, C.FAILURE_CATEGORY] = "autotune_failed"
    third = _sweep(15, 3, world_size=8, run_date="2026-05-01")
    empty = _sweep(0, 4, trtllm_version="v9.9.9")
    other = sweeps.make_sweep(10, seed=5, model="kimi_k2", hardware="B300")
    ids = []
    for i, sweep in enumerate((first, second, other, third, empty)):
        result = store.ingest([sweep], f"mixed-{i}".encode(), UploadMeta(hardware="GB300"))
        if sweep is not other:
            ids.append(result.runs[0].run_id)
    return ids


def _plain(frame: pd.DataFrame) -> list[list[Any]]:
    """The values of ``frame`` as Python objects (None for missing), dtype aside."""
    return [[None if pd.isna(v) else v for v in frame[col].astype(object)] for col in frame.columns]


def test_pieces_are_whole_runs_in_order_holding_the_whole_read(store: Store) -> None:
    runs = seed_mixed_cell(store)
    whole = store.stats.cell_frame(*CELL, columns=COLUMNS, categorical=True)
    pieces = store.stats.cell_pieces(
        *CELL, lambda f: f, columns=COLUMNS, categorical=True, piece_rows=15
    )
    # runs 1, 2 and 3 fill a piece each; the run without candidates is the last piece
    assert [sorted(set(p[C.RUN_ID])) for p in pieces] == [[r] for r in runs[:3]] + [[]]
    assert all(list(p.columns) == list(whole.columns) for p in pieces)
    joined = pd.concat([p.astype(object) for p in pieces], ignore_index=True)
    assert _plain(joined) == _plain(whole)
    # each piece is typed as a read of its own rows: nullable only where a value is
    # missing, a candidate text's categories its own; a run fact's are the cell's
    first, second = pieces[0], pieces[1]
    assert first[C.MOE_EP_SIZE].dtype == np.int64 and second[C.MOE_EP_SIZE].dtype == "Int64"
    assert whole[C.MOE_EP_SIZE].dtype == "Int64"
    assert list(first[C.BACKEND].cat.categories) == ["CUTEDSL", "CUTLASS", "TRTLLM"]
    assert "NEW_BACKEND" in set(second[C.BACKEND].cat.categories)
    versions = ["v1.3.0rc26", "v1.4.0", "v9.9.9"]
    assert list(first[C.TRTLLM_VERSION].cat.categories) == versions
    assert list(whole[C.TRTLLM_VERSION].cat.categories) == versions


def test_pieces_after_a_run_and_of_an_empty_cell(store: Store) -> None:
    runs = seed_mixed_cell(store)
    after = store.stats.cell_pieces(
        *CELL, len, columns=COLUMNS, after_run_id=runs[0], piece_rows=1000
    )
    assert after == [25 + 15]  # one piece: runs 2, 3 and the empty one
    assert store.stats.cell_pieces("nope", *CELL[1:], len, columns=COLUMNS) == []


def test_piece_bounds_never_split_a_run() -> None:
    ids = np.array([3, 5, 8, 9, 12])
    assert _pieces(ids, np.array([10, 0, 30, 5, 0]), 10) == [(3, 3), (5, 8), (9, 12)]
    assert _pieces(ids, np.array([1, 1, 1, 1, 1]), 100) == [(3, 12)]
    assert _pieces(ids[:0], np.zeros(0, np.int64), 10) == []
