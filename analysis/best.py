"""Best configuration per workload, with the runner-up, the margin and a tie flag.

Two groupings:

* ``BENCH_MOE_KEYS`` -- bench_moe's own rankings: (run_id, num_tokens, parallel_mode);
  CUDA graph on/off, backends and comms share a group, exactly like ``rankings[]``.
* ``DASHBOARD_KEYS`` -- NVIDIA's MoE Perf Dashboard: (model, hardware, quant,
  world_size, num_tokens, dispatch, cuda_graph, attn); it keeps the top 3.

Only rankable rows compete (status success, finite score_ms > 0, autotune not failed).
Ordering inside a group: score_ms ascending, then :data:`ORDER_COLS` (run_id,
candidate_index -- bench_moe's own stable order within a run -- then the recipe),
missing values last; so equal scores resolve the same way whatever the row order.

Noise band (``noise_band_pct``): each candidate's relative spread is
``iter_stdev_ms / score_ms``. The stdev is taken over all iterations, outliers
included, while the score trims them; so when ``outlier_count > 0`` we use the smaller
of that and the robust estimate ``(iter_p90_ms - iter_median_ms) / 1.2816 /
iter_median_ms`` (p90 = median + 1.2816 sigma for a normal). The band for a pair is the
relative spread of a difference of two independent measurements:
``100 * sqrt(s_best**2 + s_runner_up**2)`` percent. When either spread is unknown (e.g.
NVIDIA dashboard rows carry none) the band is :data:`DEFAULT_NOISE_PCT` (3 %, the
guide's "flat" band). ``is_tie`` is ``margin_pct <= noise_band_pct``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import as_float, group_codes, rankable_mask, sort_codes
from analysis.pareto import RECIPE_COLS

BENCH_MOE_KEYS: tuple[str, ...] = (C.RUN_ID, C.NUM_TOKENS, C.PARALLEL_MODE)
DASHBOARD_KEYS: tuple[str, ...] = (
    C.MODEL,
    C.HARDWARE,
    C.QUANT,
    C.WORLD_SIZE,
    C.NUM_TOKENS,
    C.DISPATCH,
    C.CUDA_GRAPH,
    C.ATTN,
)
GROUPINGS: dict[str, tuple[str, ...]] = {"bench_moe": BENCH_MOE_KEYS, "dashboard": DASHBOARD_KEYS}
ORDER_COLS: tuple[str, ...] = (C.RUN_ID, C.CANDIDATE_INDEX, *RECIPE_COLS, C.LOW_PRECISION_COMBINE)
DEFAULT_NOISE_PCT = 3.0
_P90_Z = 1.2816

RANK = "rank"  # 1-based position inside the group (top_by_workload)
N_CANDIDATES = "n_candidates"
MARGIN_PCT = "margin_pct"
NOISE_BAND_PCT = "noise_band_pct"
NOISE_SOURCE = "noise_source"  # "iteration_spread" | "default"
IS_TIE = "is_tie"
REL_SPREAD = "rel_spread"
# Per-side recipe columns of best_by_workload: "best_<col>" and "runner_up_<col>".
SIDE_COLS: tuple[str, ...] = (*RECIPE_COLS, C.SCORE_MS, C.RUN_ID, C.CANDIDATE_INDEX)


def _keys(grouping: str | Sequence[str]) -> list[str]:
    if isinstance(grouping, str):
        if grouping not in GROUPINGS:
            raise ValueError(f"unknown grouping {grouping!r}; use {sorted(GROUPINGS)}")
        return list(GROUPINGS[grouping])
    return list(grouping)


def relative_spread(df: pd.DataFrame) -> np.ndarray:
    """Per-row relative spread of the score (fraction, NaN when unknown); see module doc."""
    n = len(df)
    nan = np.full(n, np.nan)
    score = as_float(df[C.SCORE_MS]) if C.SCORE_MS in df else nan
    stdev = as_float(df[C.ITER_STDEV_MS]) if C.ITER_STDEV_MS in df else nan
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(score > 0, stdev / score, np.nan)
        if {C.OUTLIER_COUNT, C.ITER_P90_MS, C.ITER_MEDIAN_MS} <= set(df.columns):
            outliers = as_float(df[C.OUTLIER_COUNT])
            med = as_float(df[C.ITER_MEDIAN_MS])
            robust = (as_float(df[C.ITER_P90_MS]) - med) / _P90_Z / med
            use = (outliers > 0) & np.isfinite(robust) & (robust >= 0)
            spread = np.where(use, np.fmin(spread, robust), spread)
    return np.where(spread >= 0, spread, np.nan)


def _group_score_order(g: np.ndarray, score: np.ndarray) -> np.ndarray:
    """``np.lexsort((score, g))`` (by group, then score, then position): with fewer
    than 32768 groups as a stable score sort followed by a stable radix sort on int16
    group ids -- the same permutation, ~2x faster on millions of rows."""
    if len(g) and g.min() >= 0 and g.max() < np.iinfo(np.int16).max:
        by_score = np.argsort(score, kind="stable")
        out: np.ndarray = by_score[np.argsort(g[by_score].astype(np.int16), kind="stable")]
        return out
    return np.lexsort((score, g))


def _ordered(
    df: pd.DataFrame, keys: list[str], n: int
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Top-``n`` rankable rows per group, sorted by (group, score, ORDER_COLS).

    Returns (rows, group ids, rank, group sizes). Sorts by (group, score) first and
    applies the ORDER_COLS tie-break only inside runs of equal (group, score).
    """
    missing = [c for c in (*keys, C.SCORE_MS, C.STATUS) if c not in df]
    if missing:
        raise KeyError(f"columns not in frame: {missing}")
    pos = np.flatnonzero(rankable_mask(df))
    g = group_codes(df[keys].iloc[pos], keys)
    score = as_float(df[C.SCORE_MS])[pos]
    order = _group_score_order(g, score)
    gs, ss = g[order], score[order]
    same = np.r_[False, (gs[1:] == gs[:-1]) & (ss[1:] == ss[:-1])]
    if same.any():
        run = np.cumsum(~same)
        tied_runs = np.unique(run[same])
        in_tied = np.isin(run, tied_runs)
        idx = np.flatnonzero(in_tied)
        tie_rows = df.iloc[pos[order[idx]]]
        tie = [sort_codes(tie_rows[c]) for c in reversed(ORDER_COLS) if c in tie_rows]
        order[idx] = order[idx][np.lexsort((*tie, run[idx]))]
        gs = g[order]
    starts = np.r_[True, gs[1:] != gs[:-1]] if len(gs) else np.zeros(0, bool)
    first_idx = np.maximum.accumulate(np.where(starts, np.arange(len(gs)), 0))
    rank = np.arange(len(gs)) - first_idx + 1
    sizes = np.bincount(gs)[gs] if len(gs) else np.zeros(0, np.int64)
    keep = rank <= n
    return df.iloc[pos[order[keep]]], gs[keep], rank[keep], sizes[keep]


def top_by_workload(
    df: pd.DataFrame, grouping: str | Sequence[str] = "dashboard", n: int = 3
) -> pd.DataFrame:
    """The ``n`` best rankable rows of every group (long format, dashboard style).

    Returns the input rows (all columns) plus ``rank`` (1 = lowest score_ms) and
    ``n_candidates`` (rankable rows in the group), sorted by group keys then rank.
    """
    rows, _, rank, sizes = _ordered(df, _keys(grouping), n)
    return rows.assign(**{RANK: rank, N_CANDIDATES: sizes}).reset_index(drop=True)


def best_by_workload(
    df: pd.DataFrame,
    grouping: str | Sequence[str] = "bench_moe",
    default_noise_pct: float = DEFAULT_NOISE_PCT,
) -> pd.DataFrame:
    """One row per group: the group keys, ``best_<c>`` and ``runner_up_<c>`` for c in
    :data:`SIDE_COLS` (recipe columns, score_ms, run_id, candidate_index),
    ``n_candidates``, ``margin_pct`` = (runner_up - best) / best * 100 (NaN when the
    group has one candidate), ``noise_band_pct``, ``noise_source`` and ``is_tie``
    (False without a runner-up). Groups with no rankable row are absent. Sorted by keys.
    """
    keys = _keys(grouping)
    top = top_by_workload(df, keys, n=2)
    # top is sorted by group then rank, so a runner-up sits right after its winner.
    rank = top[RANK].to_numpy()
    idx1 = np.flatnonzero(rank == 1)
    nxt = np.minimum(idx1 + 1, max(len(top) - 1, 0))
    has = (idx1 + 1 < len(top)) & (rank[nxt] == 2) if len(top) else np.zeros(0, bool)
    first = top.iloc[idx1].reset_index(drop=True)
    second = top.iloc[nxt].reset_index(drop=True)
    out = first[keys + [N_CANDIDATES]].copy()
    for c in SIDE_COLS:
        out["best_" + c] = first.get(c)
        out["runner_up_" + c] = second[c].where(pd.Series(has)) if c in second else None
    spread_first = relative_spread(first)
    spread_second = np.where(has, relative_spread(second), np.nan)
    out["runner_up_" + C.SCORE_MS] = as_float(out["runner_up_" + C.SCORE_MS])
    out["best_" + C.SCORE_MS] = as_float(out["best_" + C.SCORE_MS])
    best_s = out["best_" + C.SCORE_MS].to_numpy()
    ru_s = out["runner_up_" + C.SCORE_MS].to_numpy()
    out[MARGIN_PCT] = (ru_s - best_s) / best_s * 100.0
    known = np.isfinite(spread_first) & np.isfinite(spread_second)
    out[NOISE_BAND_PCT] = np.where(
        known, 100.0 * np.hypot(spread_first, spread_second), default_noise_pct
    )
    out[NOISE_SOURCE] = np.where(known, "iteration_spread", "default")
    out[IS_TIE] = np.where(has, out[MARGIN_PCT].to_numpy() <= out[NOISE_BAND_PCT].to_numpy(), False)
    return out.reset_index(drop=True)
