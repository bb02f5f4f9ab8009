"""Best configuration per workload, with the runner-up, the margin and a tie flag.

Two groupings:

* ``BENCH_MOE_KEYS`` -- bench_moe's own rankings: (run_id, num_tokens, parallel_mode);
  CUDA graph on/off, backends and comms share a group, exactly like ``rankings[]``.
  Per run, so repeats never meet: every row is its own measurement.
* ``DASHBOARD_KEYS`` -- NVIDIA's MoE Perf Dashboard: (model, hardware, quant,
  world_size, num_tokens, dispatch, cuda_graph, attn); it keeps the top 3.

A grouping without ``run_id`` pools runs, so it ranks **configurations**, not rows: the
frame is first collapsed by ``analysis.identity.configuration_frame`` (one row per
workload x configuration; ``repeats="median"`` = median over repeat runs of the same
TensorRT-LLM version, ``"latest"`` = the latest run's measurement). So the runner-up is
always a different configuration, never the winner's own repeat.

Only rankable rows compete (status success, finite score_ms > 0, autotune not failed).
Ordering inside a group: score_ms ascending, then :data:`ORDER_COLS` (run_id,
candidate_index -- bench_moe's own stable order within a run -- then the recipe),
missing values last; so equal scores resolve the same way whatever the row order.

Noise band (``noise_band_pct``): each side's relative spread is its configuration's
``score_spread`` -- the **run-to-run** spread where repeats were pooled, else the
**within-run** iteration spread (``identity.relative_spread``: ``iter_stdev_ms /
score_ms``, robust when outliers were trimmed). The band for a pair is the relative
spread of a difference of two independent measurements:
``100 * sqrt(s_best**2 + s_runner_up**2)`` percent; ``noise_source`` says which spreads
went in ("run_to_run", "iteration_spread", "run_to_run+iteration_spread"). When either
spread is unknown (e.g. NVIDIA dashboard rows carry none) the band is
:data:`DEFAULT_NOISE_PCT` (3 %, the guide's "flat" band) and the source "default".
``is_tie`` is ``margin_pct <= noise_band_pct``; ``tie_state`` says the same in words,
with "no runner-up" its own state (one candidate: nothing compared, not "no tie").

With a noise model (``noise``: :mod:`analysis.noise` estimated over the slice's runs),
a pair whose two configurations both have a modelled run-to-run spread gets the band a
re-run could open between them instead: :func:`analysis.noise.pair_band` (95 %, the
spreads of the means of each side's runs), ``noise_source`` the model's sources
("repeats", "history", "prior" …); the others keep the rule above.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import noise as N
from analysis.derived import as_float, group_codes, rankable_mask, sort_codes
from analysis.identity import (
    N_REPEATS,
    REPEAT_RUN_IDS,
    SCORE_SPREAD,
    SPREAD_SOURCE,
    Repeats,
    configuration_frame,
    relative_spread,
)
from analysis.pareto import RECIPE_COLS

__all__ = ["relative_spread"]  # re-exported: its home is analysis.identity

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

RANK = "rank"  # 1-based position inside the group (top_by_workload)
N_CANDIDATES = "n_candidates"
MARGIN_PCT = "margin_pct"
NOISE_BAND_PCT = "noise_band_pct"
NOISE_SOURCE = "noise_source"  # "run_to_run" | "iteration_spread" | both joined | "default"
IS_TIE = "is_tie"
# The tie verdict as one of three states: a workload with one candidate has no runner-up,
# which is not "no tie" (nothing was compared); sorted last (TIE_STATE_ORDER).
TIE_STATE = "tie_state"
TIE = "tie"
NO_TIE = "no tie"
NO_RUNNER_UP = "no runner-up"
TIE_STATE_ORDER: tuple[str, ...] = (TIE, NO_TIE, NO_RUNNER_UP)
REL_SPREAD = "rel_spread"
SPREAD_PCT = "spread_pct"  # per side: best_spread_pct, runner_up_spread_pct
# Per-side recipe columns of best_by_workload: "best_<col>" and "runner_up_<col>".
SIDE_COLS: tuple[str, ...] = (*RECIPE_COLS, C.SCORE_MS, C.RUN_ID, C.CANDIDATE_INDEX)
# Per-side measurement columns: how many repeats, which runs, how the spread was taken.
REPEAT_SIDE_COLS: tuple[str, ...] = (N_REPEATS, REPEAT_RUN_IDS, SPREAD_PCT, SPREAD_SOURCE)


def _keys(grouping: str | Sequence[str]) -> list[str]:
    if isinstance(grouping, str):
        if grouping not in GROUPINGS:
            raise ValueError(f"unknown grouping {grouping!r}; use {sorted(GROUPINGS)}")
        return list(GROUPINGS[grouping])
    return list(grouping)


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
    df: pd.DataFrame, keys: list[str], n: int, rows: np.ndarray | None = None
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Top-``n`` rankable rows per group, sorted by (group, score, ORDER_COLS); of the
    ``rows`` (a boolean mask over ``df``) only, when given.

    Returns (rows, group ids, rank, group sizes). Sorts by (group, score) first and
    applies the ORDER_COLS tie-break only inside runs of equal (group, score).
    """
    missing = [c for c in (*keys, C.SCORE_MS, C.STATUS) if c not in df]
    if missing:
        raise KeyError(f"columns not in frame: {missing}")
    ok = rankable_mask(df)
    pos = np.flatnonzero(ok if rows is None else ok & np.asarray(rows, dtype=bool))
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


def measurements(
    df: pd.DataFrame, keys: Sequence[str], repeats: Repeats = "median"
) -> pd.DataFrame:
    """What a grouping ranks: ``df`` itself when the keys hold ``run_id`` (per run, each
    row its own measurement), else one row per workload x configuration
    (``identity.configuration_frame`` with ``repeats``)."""
    return df if C.RUN_ID in keys else configuration_frame(df, repeats)


def _ranked(
    df: pd.DataFrame, keys: Sequence[str], repeats: Repeats, rows: np.ndarray | None
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """:func:`measurements` of ``df[rows]`` without copying ``df``: (the frame ranked,
    the mask of its rows still to apply)."""
    if C.RUN_ID in keys:
        return df, rows
    return configuration_frame(df, repeats, rows=rows), None


def top_by_workload(
    df: pd.DataFrame,
    grouping: str | Sequence[str] = "dashboard",
    n: int = 3,
    repeats: Repeats = "median",
    rows: np.ndarray | None = None,
) -> pd.DataFrame:
    """The ``n`` best rankable rows of every group (long format, dashboard style).

    Returns the ranked rows (all columns; per configuration for a grouping without
    run_id, see :func:`measurements`) plus ``rank`` (1 = lowest score_ms) and
    ``n_candidates`` (rankable configurations in the group), sorted by group keys then
    rank. ``rows`` (a boolean mask over ``df``): the same answer as for ``df[rows]``,
    without copying ``df``.
    """
    keys = _keys(grouping)
    ranked, mask = _ranked(df, keys, repeats, rows)
    top, _, rank, sizes = _ordered(ranked, keys, n, rows=mask)
    return top.assign(**{RANK: rank, N_CANDIDATES: sizes}).reset_index(drop=True)


def _side_spread(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(relative spread, its source) per row: the configuration's own when the frame is
    a configuration frame, else the within-run iteration spread."""
    if SCORE_SPREAD in rows:
        return as_float(rows[SCORE_SPREAD]), rows[SPREAD_SOURCE].to_numpy(dtype=object)
    spread = relative_spread(rows)
    return spread, np.where(np.isfinite(spread), "iteration_spread", "unknown").astype(object)


def best_by_workload(
    df: pd.DataFrame,
    grouping: str | Sequence[str] = "bench_moe",
    default_noise_pct: float = DEFAULT_NOISE_PCT,
    repeats: Repeats = "median",
    noise: N.NoiseModel | None = None,
    rows: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per group: the group keys, ``best_<c>`` and ``runner_up_<c>`` for c in
    :data:`SIDE_COLS` (recipe columns, score_ms, run_id, candidate_index) and
    :data:`REPEAT_SIDE_COLS` (n_repeats, repeat_run_ids, spread_pct = the side's
    relative spread in %, spread_source), ``n_candidates``, ``margin_pct`` =
    (runner_up - best) / best * 100 (NaN when the group has one candidate),
    ``noise_band_pct``, ``noise_source`` and ``is_tie`` (False without a runner-up).
    A grouping without run_id ranks configurations (median over repeats, or the latest
    run: ``repeats``). ``noise``: the band from the noise model where it knows both
    sides (module docstring). Groups with no rankable row are absent. Sorted by keys.
    ``rows`` (a boolean mask over ``df``): the answer for ``df[rows]`` without its copy.
    """
    keys = _keys(grouping)
    top = top_by_workload(df, keys, n=2, repeats=repeats, rows=rows)
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
    spread_first, src_first = _side_spread(first)
    spread_second, src_second = _side_spread(second)
    spread_second = np.where(has, spread_second, np.nan)
    sides = (
        ("best_", first, spread_first, src_first),
        ("runner_up_", second, spread_second, src_second),
    )
    for prefix, side, spread, src in sides:
        mask = has if prefix == "runner_up_" else np.ones(len(side), bool)
        reps = as_float(side[N_REPEATS]) if N_REPEATS in side else np.ones(len(side))
        out[prefix + N_REPEATS] = pd.array(np.where(mask, reps, 0).astype(np.int64), dtype="Int64")
        out.loc[~mask, prefix + N_REPEATS] = pd.NA
        col = REPEAT_RUN_IDS if REPEAT_RUN_IDS in side else C.RUN_ID
        ids: np.ndarray = side[col].astype("string").to_numpy(dtype=object, na_value=None)
        out[prefix + REPEAT_RUN_IDS] = np.where(mask, ids, np.array(None, dtype=object))
        out[prefix + SPREAD_PCT] = 100.0 * spread
        out[prefix + SPREAD_SOURCE] = np.where(mask, src, np.array(None, dtype=object))
    out["runner_up_" + C.SCORE_MS] = as_float(out["runner_up_" + C.SCORE_MS])
    out["best_" + C.SCORE_MS] = as_float(out["best_" + C.SCORE_MS])
    best_s = out["best_" + C.SCORE_MS].to_numpy()
    ru_s = out["runner_up_" + C.SCORE_MS].to_numpy()
    out[MARGIN_PCT] = (ru_s - best_s) / best_s * 100.0
    known = np.isfinite(spread_first) & np.isfinite(spread_second)
    out[NOISE_BAND_PCT] = np.where(
        known, 100.0 * np.hypot(spread_first, spread_second), default_noise_pct
    )
    out[NOISE_SOURCE] = np.where(known, _joined(src_first, src_second), "default")
    if noise is not None and len(out):
        a, b = N.noise_for(noise, first), N.noise_for(noise, second)
        n_a = as_float(out["best_" + N_REPEATS])
        n_b = np.nan_to_num(as_float(out["runner_up_" + N_REPEATS]), nan=1.0)
        band = N.pair_band(a[N.SPREAD].to_numpy(float), n_a, b[N.SPREAD].to_numpy(float), n_b)
        modelled = has & np.isfinite(band)
        out[NOISE_BAND_PCT] = np.where(modelled, band, out[NOISE_BAND_PCT])
        sources = _joined(a[N.SOURCE].to_numpy(object), b[N.SOURCE].to_numpy(object))
        out[NOISE_SOURCE] = np.where(modelled, sources, out[NOISE_SOURCE])
    out[IS_TIE] = np.where(has, out[MARGIN_PCT].to_numpy() <= out[NOISE_BAND_PCT].to_numpy(), False)
    out[TIE_STATE] = np.where(has, np.where(out[IS_TIE].astype(bool), TIE, NO_TIE), NO_RUNNER_UP)
    return out.reset_index(drop=True)


def _joined(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair: the one spread source both sides share, else both joined with "+"
    (run-to-run first)."""
    a = a.astype(str)
    b = b.astype(str)
    lo = np.where(a <= b, a, b)
    hi = np.where(a <= b, b, a)
    both: np.ndarray = np.where(lo == hi, lo, np.char.add(np.char.add(hi, "+"), lo))
    return both
