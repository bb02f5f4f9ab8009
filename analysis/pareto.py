"""Pareto frontiers over candidate frames (vectorised: one sort plus a cumulative max).

A point P dominates Q when P is at least as good on both axes and strictly better on one.
A frontier keeps every point no other point of its group dominates. Exact duplicates
(same group, same x, same y) do not dominate each other; we keep exactly one of them,
the first by the deterministic recipe order :data:`TIE_BREAK_COLS` (missing values
last), so the output never depends on input row order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import as_float, ensure_derived, group_codes, rankable_mask, sort_codes

# Columns that identify a point's recipe; every frontier row carries them.
RECIPE_COLS: tuple[str, ...] = (
    C.BACKEND,
    C.COMM,
    C.PARALLEL_MODE,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.CUDA_GRAPH,
)
TIE_BREAK_COLS: tuple[str, ...] = RECIPE_COLS + (
    C.LOW_PRECISION_COMBINE,
    C.RUN_ID,
    C.CANDIDATE_INDEX,
)
# model x hardware x quant x world_size x phase (phase = CUDA graph on/off).
FRONTIER_GROUP_COLS: tuple[str, ...] = (C.MODEL, C.HARDWARE, C.QUANT, C.WORLD_SIZE, C.PHASE)


def pareto_frontier(
    df: pd.DataFrame,
    x: str,
    y: str,
    minimize_x: bool = True,
    maximize_y: bool = True,
    group_cols: Sequence[str] = (),
) -> pd.DataFrame:
    """Rows of ``df`` on the Pareto frontier of (x, y), computed per ``group_cols``.

    Only rankable rows take part (status success, finite score_ms > 0, autotune not
    failed -- see ``derived.rankable_mask``) and only rows with finite x and y.
    Returns those rows with all their columns (recipe columns included), index reset,
    sorted by group_cols then x ascending (y breaks no ties: frontier x values are
    unique within a group). Input is not modified.
    """
    missing = [c for c in (x, y, *group_cols) if c not in df]
    if missing:
        raise KeyError(f"columns not in frame: {missing}")
    xs = as_float(df[x])
    ys = as_float(df[y])
    ok = rankable_mask(df) & np.isfinite(xs) & np.isfinite(ys)
    if not ok.any():
        return df.iloc[0:0].reset_index(drop=True)
    # Work on the few needed columns; the full rows are taken only for the winners.
    rows_ok = np.flatnonzero(ok)
    sub = df[list(dict.fromkeys(group_cols))].iloc[rows_ok] if group_cols else df.iloc[:0]
    # Canonical orientation: smaller ox is better, larger oy is better.
    ox = xs[ok] if minimize_x else -xs[ok]
    oy = ys[ok] if maximize_y else -ys[ok]
    g = group_codes(sub, group_cols) if group_cols else np.zeros(len(rows_ok), np.int64)
    order = np.lexsort((-oy, ox, g))
    g_s, ox_s, oy_s = g[order], ox[order], oy[order]
    # Best y seen strictly before each point in its group (-inf at a group's start).
    best = pd.Series(oy_s).groupby(g_s).cummax().to_numpy()
    prev = np.empty_like(best)
    prev[0] = -np.inf
    prev[1:] = best[:-1]
    starts = np.ones(len(g_s), dtype=bool)
    starts[1:] = g_s[1:] != g_s[:-1]
    prev[starts] = -np.inf
    keep = oy_s > prev
    chosen = order[keep]
    chosen = _resolve_duplicates(df, rows_ok, g_s, ox_s, oy_s, order, keep, chosen)
    out = df.iloc[rows_ok[np.sort(chosen)]]
    sort_cols = [*group_cols, x]
    return out.sort_values(sort_cols, kind="mergesort", na_position="last").reset_index(drop=True)


def _resolve_duplicates(
    df: pd.DataFrame,
    rows_ok: np.ndarray,
    g_s: np.ndarray,
    ox_s: np.ndarray,
    oy_s: np.ndarray,
    order: np.ndarray,
    keep: np.ndarray,
    chosen: np.ndarray,
) -> np.ndarray:
    """Replace each kept point that has exact duplicates by the duplicate that comes
    first in TIE_BREAK_COLS order (so the pick does not depend on row order)."""
    same = np.zeros(len(g_s), dtype=bool)
    same[1:] = (g_s[1:] == g_s[:-1]) & (ox_s[1:] == ox_s[:-1]) & (oy_s[1:] == oy_s[:-1])
    if not same.any():
        return chosen
    run_id = np.cumsum(~same)  # run = maximal block of identical (g, x, y) in sort order
    kept_runs = np.unique(run_id[keep])
    dup_runs = np.intersect1d(kept_runs, np.unique(run_id[same]))
    if dup_runs.size == 0:
        return chosen
    in_dup = np.isin(run_id, dup_runs)
    rows = order[in_dup]
    cand = df.iloc[rows_ok[rows]]
    keys = [sort_codes(cand[c]) for c in reversed(TIE_BREAK_COLS) if c in cand]
    pick_order = np.lexsort((*keys, run_id[in_dup]))
    runs_sorted = run_id[in_dup][pick_order]
    first = np.ones(len(runs_sorted), dtype=bool)
    first[1:] = runs_sorted[1:] != runs_sorted[:-1]
    winners = rows[pick_order][first]
    remaining = np.setdiff1d(chosen, order[in_dup])
    return np.concatenate([remaining, winners])


def throughput_latency_frontier(
    df: pd.DataFrame, group_cols: Sequence[str] = FRONTIER_GROUP_COLS
) -> pd.DataFrame:
    """Frontier of tokens_per_s_per_gpu (maximise) vs score_ms (minimise) per model x
    hardware x quant x world_size x phase. Adds the derived columns when absent."""
    return pareto_frontier(
        ensure_derived(df),
        C.SCORE_MS,
        C.TOKENS_PER_S_PER_GPU,
        minimize_x=True,
        maximize_y=True,
        group_cols=group_cols,
    )


def throughput_tokens_frontier(
    df: pd.DataFrame, group_cols: Sequence[str] = FRONTIER_GROUP_COLS
) -> pd.DataFrame:
    """Frontier of tokens_per_s_per_gpu (maximise) vs activated_tokens_per_rank
    (minimise: fewer tokens in flight per rank = smaller batch per step) per model x
    hardware x quant x world_size x phase. Adds the derived columns when absent."""
    return pareto_frontier(
        ensure_derived(df),
        C.ACTIVATED_TOKENS_PER_RANK,
        C.TOKENS_PER_S_PER_GPU,
        minimize_x=True,
        maximize_y=True,
        group_cols=group_cols,
    )
