"""Test data builders, all in one place: candidate frames (here), sweeps, dashboard data,
hostile inputs (``hostile``) and served app processes (``servers``).

``make_candidates`` builds a frame with exactly ``RUN_COLUMNS + CANDIDATE_COLUMNS`` (in
that order), typed like the store returns them: INT_COLUMNS nullable ``Int64``,
FLOAT_COLUMNS ``float64``, BOOL_COLUMNS nullable ``boolean``, text ``object``.
Each row starts from :data:`DEFAULTS` (a successful DEP TRTLLM candidate of
deepseek_v4_pro NVFP4 on GB300, world size 8), then the keyword defaults, then the row's
own values. Sizes and attention flags left unset are filled from ``parallel_mode`` so a
row like ``{"parallel_mode": "TTP2EP4"}`` stays consistent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis.derived import parse_parallel_mode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Our own bench_moe report in the real format (values invented for the tests).
EXAMPLE = FIXTURES / "bench_moe_example.json"

ALL_COLUMNS: tuple[str, ...] = C.RUN_COLUMNS + C.CANDIDATE_COLUMNS

DEFAULTS: dict[str, Any] = {
    C.RUN_ID: 1,
    C.SOURCE_FORMAT: "bench_moe",
    C.MODEL: "deepseek_v4_pro",
    C.NUM_EXPERTS: 384,
    C.TOP_K: 6,
    C.HIDDEN_SIZE: 7168,
    C.INTERMEDIATE_SIZE: 3072,
    C.QUANT: "NVFP4",
    C.HARDWARE: "GB300",
    C.WORLD_SIZE: 8,
    C.TRTLLM_VERSION: "1.3.0rc26",
    C.TRTLLM_COMMIT: "21dc97fbc8",
    C.RUN_DATE: "2026-09-13",
    C.SYNTHETIC: True,
    C.NUM_TOKENS: 256,
    C.PARALLEL_MODE: "DEP",
    C.BACKEND: "TRTLLM",
    C.COMM: "NVLINK_ONE_SIDED",
    C.CUDA_GRAPH: True,
    C.LOW_PRECISION_COMBINE: True,
    C.DISPATCH: "balanced",
    C.STATUS: "success",
    C.SCORE_MS: 1.0,
    C.SCORE_TYPE: "slowest_rank_trimmed_mean",
    C.OUTLIER_COUNT: 0,
    C.N_ITERS: 12,
    C.AUTOTUNE_STATUS: "success",
}


def candidate_row(**values: Any) -> dict[str, Any]:
    """One complete row dict: DEFAULTS, overridden by ``values``, derived fields filled."""
    unknown = set(values) - set(ALL_COLUMNS)
    if unknown:
        raise KeyError(f"not candidate columns: {sorted(unknown)}")
    row: dict[str, Any] = {c: None for c in ALL_COLUMNS}
    row.update(DEFAULTS)
    row.update(values)
    parsed = parse_parallel_mode(row[C.PARALLEL_MODE], int(row[C.WORLD_SIZE]))
    if parsed is not None:
        dp, ep, tp = parsed
        for col, val in ((C.ATTENTION_DP, dp), (C.MOE_EP_SIZE, ep), (C.MOE_TP_SIZE, tp)):
            if col not in values:
                row[col] = val
    if C.ATTN not in values:
        dp = row[C.ATTENTION_DP]
        row[C.ATTN] = "?" if dp is None else ("D" if dp else "T")
    for src, dst in ((C.BACKEND, C.REQUESTED_BACKEND), (C.COMM, C.COMM_REQUESTED)):
        if dst not in values:
            row[dst] = row[src]
    if row[C.STATUS] == "success" and row[C.SCORE_MS] is not None:
        score = float(row[C.SCORE_MS])
        for col, factor in (
            (C.RAW_SCORE_MS, 1.0),
            (C.ITER_MEAN_MS, 1.0),
            (C.ITER_MEDIAN_MS, 1.0),
            (C.ITER_MIN_MS, 0.98),
            (C.ITER_MAX_MS, 1.02),
            (C.ITER_P90_MS, 1.01),
            (C.ITER_STDEV_MS, 0.005),
        ):
            if col not in values:
                row[col] = score * factor
    if row[C.STATUS] != "success" and C.SCORE_MS not in values:
        row[C.SCORE_MS] = None
    return row


def make_candidates(rows: Sequence[Mapping[str, Any]] = (), **defaults: Any) -> pd.DataFrame:
    """Frame of candidates: one per mapping in ``rows`` (keyword ``defaults`` apply to
    all rows, row values win). An empty ``rows`` gives one default row when
    ``defaults`` are given, else an empty frame with every column."""
    if not rows:
        rows = [{}] if defaults else []
    data = [candidate_row(**{**defaults, **dict(r)}) for r in rows]
    frame = pd.DataFrame(data, columns=list(ALL_COLUMNS))
    return coerce_types(frame)


def coerce_types(frame: pd.DataFrame) -> pd.DataFrame:
    """Apply the store's column dtypes (see module docstring) to a candidate frame."""
    out = {}
    for col in frame.columns:
        s = frame[col]
        if col in C.INT_COLUMNS:
            out[col] = pd.to_numeric(s, errors="coerce").astype("Int64")
        elif col in C.FLOAT_COLUMNS:
            out[col] = pd.to_numeric(s, errors="coerce").astype("float64")
        elif col in C.BOOL_COLUMNS:
            out[col] = s.astype("boolean")
        else:
            out[col] = s.astype(object).where(s.notna(), None)
    return pd.DataFrame(out, index=frame.index)
