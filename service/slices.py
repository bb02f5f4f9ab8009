"""The slices the History and Compare pages offer (model, hardware, quant, world size,
phase) with their number of TensorRT-LLM versions and runs, from the runs table and the
phases each run holds (``Store.cells.phase_slices``: grouped in the database), never
from a candidate frame."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C
from service.frames import DashData

KEYS: tuple[str, ...] = (C.MODEL, C.HARDWARE, C.QUANT, C.WORLD_SIZE, C.PHASE)
N_VERSIONS, N_RUNS = "n_versions", "n_runs"


def stored_slices(data: DashData) -> pd.DataFrame:
    """One row per stored slice (:data:`KEYS`) with ``n_versions`` (distinct non-missing
    TensorRT-LLM versions) and ``n_runs``; most versions first, then most runs, then
    the slice's values. Runs without a world size and candidates without a CUDA-graph
    flag belong to no slice."""
    cols = [*KEYS, N_VERSIONS, N_RUNS]
    runs = data.store.cells.phase_slices()
    runs = runs[runs[C.WORLD_SIZE].notna()]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    runs = runs.assign(**{C.PHASE: np.where(runs[C.CUDA_GRAPH].astype(bool), "decode", "prefill")})
    grouped = runs.groupby(list(KEYS), sort=True, dropna=True)
    table = grouped.agg(
        **{N_VERSIONS: (C.TRTLLM_VERSION, "nunique"), N_RUNS: (C.RUN_ID, "nunique")}
    ).reset_index()
    for col in (C.MODEL, C.HARDWARE, C.QUANT, C.PHASE):
        table[col] = table[col].astype(str)
    table[C.WORLD_SIZE] = table[C.WORLD_SIZE].astype(np.int64)
    table = table.sort_values(
        [N_VERSIONS, N_RUNS, *KEYS],
        ascending=[False, False, True, True, True, True, True],
        kind="mergesort",
    )
    return table[cols].reset_index(drop=True)
