"""The Pareto page's CSV downloads: the frontier, or every point of the chart.

Both are :func:`service.pareto.cell_pareto` under the page's filter and axes, so a
CSV holds exactly what the chart shows -- except that "all points" is every matching
configuration (the chart thins a huge cloud to ``CLOUD_MAX_POINTS``; the file does
not). Column names carry their units (:data:`CSV_HEADERS`: ``latency_score_ms``,
``throughput_tokens_per_s_per_gpu``, ``world_size_gpus`` ...); the points file marks
the frontier's rows in ``on_frontier``.
"""

from __future__ import annotations

import sys
from typing import Literal

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.frontier import KEY, FrontierAxes, FrontierFilter
from analysis.identity import N_REPEATS, SCORE_SPREAD, SPREAD_SOURCE
from analysis.tables import to_csv_text
from service.frames import Cell, DashData
from service.pareto import cell_pareto

Which = Literal["frontier", "points"]
ON_FRONTIER = "on_frontier"
# column -> CSV header (with its unit where it has one), in file order
CSV_HEADERS: dict[str, str] = {
    C.MODEL: "model",
    C.HARDWARE: "hardware",
    C.QUANT: "quant",
    C.WORLD_SIZE: "world_size_gpus",
    C.PHASE: "phase",
    C.ATTN: "attention",
    C.DISPATCH: "dispatch",
    C.NUM_TOKENS: "num_tokens",
    C.BACKEND: "backend",
    C.COMM: "comm",
    C.PARALLEL_MODE: "parallel_mode",
    C.MOE_EP_SIZE: "moe_ep_size",
    C.MOE_TP_SIZE: "moe_tp_size",
    C.CUDA_GRAPH: "cuda_graph",
    C.SCORE_MS: "latency_score_ms",
    C.TOKENS_PER_S_PER_GPU: "throughput_tokens_per_s_per_gpu",
    C.ACTIVATED_TOKENS_PER_RANK: "activated_tokens_per_rank_tokens",
    N_REPEATS: "n_repeats",
    SCORE_SPREAD: "score_spread_fraction",
    SPREAD_SOURCE: "spread_source",
    C.RUN_ID: "run_id",
    C.CANDIDATE_INDEX: "candidate_index",
    ON_FRONTIER: "on_frontier",
}


def pareto_rows(
    data: DashData, cell: Cell, flt: FrontierFilter, axes: FrontierAxes, which: Which
) -> pd.DataFrame:
    """The frontier (sorted by phase, then x) or every plottable point (``which``) of
    ``cell`` under ``flt`` on ``axes``, with the cell's model / hardware / quant and,
    for points, ``on_frontier``; columns of :data:`CSV_HEADERS` that exist, in that
    order, under their own names. No point: an empty frame with those columns."""
    ans = cell_pareto(data, cell, flt, axes, max_points=sys.maxsize)
    view = ans.view
    rows = view.frontier if which == "frontier" else view.cloud
    rows = rows.assign(**{C.MODEL: cell.model, C.HARDWARE: cell.hardware, C.QUANT: cell.quant})
    if which == "points":
        front = set(view.frontier[KEY].to_numpy(np.int64).tolist()) if len(view.frontier) else set()
        rows[ON_FRONTIER] = np.isin(rows[KEY].to_numpy(np.int64), list(front))
        rows = rows.sort_values([C.RUN_ID, C.CANDIDATE_INDEX], kind="mergesort")
    cols = [c for c in CSV_HEADERS if c in rows or c in (C.MODEL, C.HARDWARE, C.QUANT)]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    return rows[cols].reset_index(drop=True)


def pareto_csv(rows: pd.DataFrame) -> str:
    """:func:`pareto_rows` as CSV text, headers from :data:`CSV_HEADERS`."""
    named = rows.rename(columns=CSV_HEADERS)
    return to_csv_text(named, list(named.columns))
