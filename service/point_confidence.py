"""The confidence panel of one measured candidate (a clicked Pareto point): is its
configuration the pick of its workload, and how far can that pick be trusted.

The workload's answer is the Best page's and the API's (``service.best.cell_best`` in
NVIDIA's dashboard grouping, repeats pooled to their median, the candidate's own routing
pattern), so the point, the Best row and ``GET /api/v1/best`` say the same words
(``analysis.confidence``: deploy / tie: either / measure first, and its one-line note).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis import confidence as CF
from analysis.derived import rankable_mask
from service.best import cell_best
from service.frames import Cell, DashData

# the dashboard grouping's workload keys (analysis.best.DASHBOARD_KEYS minus the cell)
_WORKLOAD = (C.WORLD_SIZE, C.NUM_TOKENS, C.DISPATCH, C.CUDA_GRAPH, C.ATTN)
_CONFIG = (C.BACKEND, C.COMM, C.PARALLEL_MODE)


@dataclass(frozen=True)
class PointConfidence:
    """``is_pick``: the candidate's configuration is its workload's winner;
    ``slower_pct``: how much slower its score is than the pick's (0 for the pick);
    ``pick``: the winner as backend · comm · mode; ``verdict`` and ``note``: the pick's
    confidence (the Best row's words); ``row``: that Best row."""

    is_pick: bool
    slower_pct: float
    pick: str
    verdict: str
    note: str
    row: dict[str, Any]


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        if pd.isna(a) and pd.isna(b):
            return True
    except (TypeError, ValueError):
        pass
    return bool(a == b)


def point_confidence(data: DashData, cell: Cell, row: pd.Series) -> PointConfidence | None:
    """The panel of candidate ``row`` (a cell-frame row); None when it takes no part in
    a ranking (it did not succeed) or its workload has no Best row."""
    if not bool(rankable_mask(pd.DataFrame([row]))[0]):
        return None
    dispatch = row.get(C.DISPATCH)
    dispatch = None if dispatch is None or pd.isna(dispatch) else str(dispatch)
    table = cell_best(data, cell, "dashboard", int(row[C.WORLD_SIZE]), dispatch).table
    if table.empty:
        return None
    mask = pd.Series(True, index=table.index)
    for col in _WORKLOAD:
        if col in table:
            want = row.get(col)
            mask &= pd.Series([_same(v, want) for v in table[col]], index=table.index)
    found = table[mask]
    if found.empty:
        return None
    best = found.iloc[0].to_dict()
    is_pick = all(_same(best.get(f"best_{c}"), row.get(c)) for c in _CONFIG)
    score, best_score = float(row[C.SCORE_MS]), float(best["best_" + C.SCORE_MS])
    slower = 0.0 if is_pick else (score - best_score) / best_score * 100.0
    pick = " · ".join(str(best.get(f"best_{c}")) for c in _CONFIG)
    return PointConfidence(
        is_pick=is_pick,
        slower_pct=slower if math.isfinite(slower) else math.nan,
        pick=pick,
        verdict=str(best[CF.CONFIDENCE]),
        note=str(best[CF.CONFIDENCE_NOTE]),
        row=best,
    )
