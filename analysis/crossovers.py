"""Crossover explorer: the rank-1 *option* along an axis, as segments and switches.

An **option** is one value of a user-chosen dimension (:data:`OPTION_DIMS`: backend,
comm, backend+comm, parallel mode); any names work, known to the guide or not. A
**series** is one group of :data:`SERIES_COLS` (model, hardware, quant, world size, CUDA
graph = phase, attention family, dispatch pattern): what stays fixed while the axis moves.
Attention is always a series column because num_tokens means a global total under
attention DP and a per-rank count under TP, so parallel modes compete within one family.

Per series and **axis value** (num_tokens in tokens, activated_tokens_per_rank in tokens
per rank, dispatch_kb in KiB; only finite values > 0, the axis is logarithmic) the
option's score is its best configuration's score: the lowest ``score_ms`` over every
other dimension, where a configuration's score is the median over its repeat runs
(``analysis.identity.configuration_frame``: repeats of one TensorRT-LLM version pooled,
run-to-run spread). The option with the lowest score
is rank 1; exactly equal scores go to the option whose label sorts first. An axis value
where only one option was measured still has a rank 1 (top-3-only published data keeps
the winner).

Consecutive axis values with the same rank-1 option form a **segment**; every change of
rank 1 between neighbouring axis values is a **switch**, so a series has any number of
them (an option that wins only in a middle window makes two). A switch carries

* ``before`` / ``after``: the old and the new rank-1 option;
* ``bracket_lo`` / ``bracket_hi``: the last axis value of the old winner and the first of
  the new one (the crossover lies between them);
* ``n_before`` / ``n_after``: axis values in the segment on each side (supporting
  workloads);
* ``margin_lo_pct``: at bracket_lo, how much slower the new option is than the old,
  ``(after - before) / before * 100``; ``margin_hi_pct``: at bracket_hi, how much slower
  the old one is, ``(before - after) / after * 100``; NaN when the other option was not
  measured there;
* ``noise_lo_pct`` / ``noise_hi_pct``: the noise band of that pair, as in
  ``analysis.best``: ``100 * hypot(s_before, s_after)`` of the two configurations'
  relative spreads (run-to-run spread where the configuration was repeated, within-run
  spread otherwise), ``default_noise_pct`` (3 %) when either is unknown;
  With a noise model (``build_index(..., noise=...)``), a pair whose two configurations
  both have a modelled run-to-run spread (repeats, version history or a prior learned
  over similar configurations: :mod:`analysis.noise`) gets the band a re-run could open
  between them instead (:func:`analysis.noise.pair_band` for one re-run per side: a
  switch is robust when a repeat run would not flip it), and ``noise_source`` names
  the model's sources;
* ``verdict``: ``robust`` when each margin exceeds its band, ``tie within noise`` when
  one does not (as ``analysis.best``: margin <= band is a tie), ``not compared`` when a
  margin is NaN.

Everything is vectorised over configurations (no Python loop per row) and independent of
row order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.best import DEFAULT_NOISE_PCT
from analysis.crossover_index import ConfigIndex, build_index, dense_ids, labelled, series_labels
from analysis.crossover_switches import (
    empty_switches,
    segments_and_pairs,
    series_table,
    switches_table,
)
from analysis.derived import ensure_derived
from analysis.identity import N_REPEATS, SCORE_SPREAD, SPREAD_SOURCE, configuration_frame

OPTION_DIMS: dict[str, tuple[str, ...]] = {
    "backend": (C.BACKEND,),
    "comm": (C.COMM,),
    "backend+comm": (C.BACKEND, C.COMM),
    "parallel_mode": (C.PARALLEL_MODE,),
}
AXES: tuple[str, ...] = (C.NUM_TOKENS, C.ACTIVATED_TOKENS_PER_RANK, C.DISPATCH_KB)
AXIS_UNITS: dict[str, str] = {
    C.NUM_TOKENS: "tokens",
    C.ACTIVATED_TOKENS_PER_RANK: "tokens per rank",
    C.DISPATCH_KB: "KiB",
}
SERIES_COLS: tuple[str, ...] = (
    C.MODEL,
    C.HARDWARE,
    C.QUANT,
    C.WORLD_SIZE,
    C.CUDA_GRAPH,
    C.ATTN,
    C.DISPATCH,
)
SERIES = "series"  # 0-based series id, in series key order
SERIES_LABEL = "series_label"
AXIS_VALUE = "axis_value"
OPTION = "option"
RANK = "rank"  # 1 = the lowest score at this axis value
N_OPTIONS = "n_options"  # options measured at this axis value
N_CONFIGS = "n_configs"  # configurations behind the option's score
POINT_COLUMNS: tuple[str, ...] = (
    SERIES,
    SERIES_LABEL,
    AXIS_VALUE,
    OPTION,
    C.SCORE_MS,
    SCORE_SPREAD,
    SPREAD_SOURCE,
    N_REPEATS,
    N_CONFIGS,
    RANK,
    N_OPTIONS,
)
SEGMENT_COLUMNS: tuple[str, ...] = (
    SERIES,
    SERIES_LABEL,
    "segment",
    OPTION,
    "axis_lo",
    "axis_hi",
    "n_points",
)


@dataclass(frozen=True)
class CrossoverMap:
    """The explorer's answer (columns in the module docstring and below).

    ``series``: one row per series (series columns, label, counts, the rank-1 sequence);
    ``points``: one row per series x axis value x option, the score curves (score_ms of
    the option's best configuration, its score_spread, spread_source, n_repeats, n_configs,
    rank, n_options); ``segments``: series, segment (0-based), option, axis_lo, axis_hi,
    n_points; ``switches``: one row per switch (see the module docstring)."""

    option: str
    axis: str
    series: pd.DataFrame
    points: pd.DataFrame
    segments: pd.DataFrame
    switches: pd.DataFrame


def option_columns(option: str) -> tuple[str, ...]:
    """The candidate columns of an option dimension; ValueError naming the allowed ones."""
    if option not in OPTION_DIMS:
        raise ValueError(f"unknown option dimension {option!r}; use one of {list(OPTION_DIMS)}")
    return OPTION_DIMS[option]


def _empty(option: str, axis: str, scols: Sequence[str]) -> CrossoverMap:
    return CrossoverMap(
        option,
        axis,
        series_table(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), scols),
        pd.DataFrame(columns=list(POINT_COLUMNS)),
        pd.DataFrame(columns=list(SEGMENT_COLUMNS)),
        empty_switches(scols),
    )


def rank_one_on_index(
    index: ConfigIndex,
    mask: np.ndarray | None = None,
    option: str = "backend",
    axis: str = C.NUM_TOKENS,
    default_noise_pct: float = DEFAULT_NOISE_PCT,
) -> CrossoverMap:
    """The explorer's answer over the configurations of ``index`` selected by ``mask``
    (all when None). Configurations without an option value, an axis value > 0 or a
    score > 0 take no part. See the module docstring for every rule."""
    opt_cols = option_columns(option)
    missing = [c for c in (*opt_cols, axis) if c not in index.configs]
    if missing:
        raise KeyError(f"columns not in frame: {missing}")
    scols = index.series_cols
    opts, ax = index.options(opt_cols), index.axis(axis)
    ok = (opts.ids >= 0) & (ax.ids >= 0) & np.isfinite(index.score) & (index.score > 0)
    if mask is not None:
        ok &= mask
    pos = np.flatnonzero(ok)
    if len(pos) == 0:
        return _empty(option, axis, scols)
    score, spread, reps = index.score[pos], index.spread[pos], index.repeats[pos]
    sid, aid, oid = index.series_id[pos], ax.ids[pos], opts.ids[pos]
    n_a, n_o = len(ax.values), len(opts.labels)
    # the series of this answer, renumbered 0.. in series key order
    present = np.zeros(len(index.series_frame), dtype=bool)
    present[sid] = True
    sid = (np.cumsum(present) - 1)[sid]
    s_frame = index.series_frame.iloc[np.flatnonzero(present)].reset_index(drop=True)
    s_label = series_labels(s_frame, scols)

    # best configuration per (series, axis value, option): min score, then the smaller
    # spread (unknown last), then more repeats
    inv, keys = dense_ids((sid * n_a + aid) * n_o + oid)
    k = len(keys)
    best = np.full(k, np.inf)
    np.minimum.at(best, inv, score)
    chosen = _best_rows(inv, k, score == best[inv], spread, reps)
    p_s, p_a, p_o = keys // (n_a * n_o), (keys // n_o) % n_a, keys % n_o

    # rank per (series, axis value): score, then option label (keys are sorted, so
    # keys // n_o is the (series, axis value) group in order)
    order = np.lexsort((opts.rank[p_o], best, keys // n_o))
    g = (keys // n_o)[order]
    start = np.r_[True, g[1:] != g[:-1]]
    first_idx = np.maximum.accumulate(np.where(start, np.arange(k), 0))
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k) - first_idx + 1
    sizes = np.diff(np.r_[np.flatnonzero(start), k])  # options per (series, axis value)
    n_opts = np.empty(k, dtype=np.int64)
    n_opts[order] = np.repeat(sizes, sizes)

    src = index.source[pos][chosen]
    cols = {
        SERIES: p_s[order],
        SERIES_LABEL: labelled(p_s[order], s_label),
        AXIS_VALUE: ax.values[p_a[order]],
        OPTION: labelled(p_o[order], opts.labels),
        C.SCORE_MS: best[order],
        SCORE_SPREAD: spread[chosen][order],
        SPREAD_SOURCE: labelled(index.source_codes[pos][chosen][order], index.source_names),
        N_REPEATS: reps[chosen][order],
        N_CONFIGS: np.bincount(inv, minlength=k)[order],
        RANK: rank[order],
        N_OPTIONS: n_opts[order],
    }
    points = pd.DataFrame(cols)
    # rank-1 points in (series, axis) order, as positions in key order
    winners = order[start]
    segments, pairs = segments_and_pairs(p_s, p_a, p_o, winners, keys, n_a, n_o, opts.labels)
    seg_label = pd.Series(s_label[segments[SERIES].to_numpy()], dtype=object)
    segments.insert(1, SERIES_LABEL, seg_label)
    segments.insert(5, "axis_lo", ax.values[segments.pop("_a_lo").to_numpy()])
    segments.insert(6, "axis_hi", ax.values[segments.pop("_a_hi").to_numpy()])
    modelled = None
    if index.run_spread is not None and index.run_source is not None:
        picked = pos[chosen]
        modelled = (index.run_spread[picked], reps[chosen], index.run_source[picked])
    switches = switches_table(
        pairs,
        best,
        spread[chosen],
        src,
        ax.values,
        s_frame,
        s_label,
        scols,
        default_noise_pct,
        modelled=modelled,
    )
    series = series_table(
        s_frame.assign(**{SERIES_LABEL: s_label}), points, segments, switches, scols
    )
    return CrossoverMap(option, axis, series, points, segments, switches)


def _best_rows(
    inv: np.ndarray, k: int, at_min: np.ndarray, spread: np.ndarray, reps: np.ndarray
) -> np.ndarray:
    """Per key the row of its best configuration among the rows scoring the minimum
    (``at_min``): the smaller spread (unknown last), then more repeats, then the first
    row. Sorts only the keys where several rows tie on the minimum."""
    hit = np.flatnonzero(at_min)
    counts = np.bincount(inv[hit], minlength=k)
    chosen = np.empty(k, dtype=np.int64)
    single = counts[inv[hit]] == 1
    chosen[inv[hit[single]]] = hit[single]
    tied = hit[~single]
    if len(tied):
        tie_spread = np.where(np.isfinite(spread[tied]), spread[tied], np.inf)
        tied = tied[np.lexsort((tied, -reps[tied], tie_spread, inv[tied]))]
        first = np.r_[True, inv[tied][1:] != inv[tied][:-1]]
        chosen[inv[tied[first]]] = tied[first]
    return chosen


def rank_one_segments(
    configs: pd.DataFrame,
    option: str = "backend",
    axis: str = C.NUM_TOKENS,
    series_cols: Sequence[str] = SERIES_COLS,
    default_noise_pct: float = DEFAULT_NOISE_PCT,
) -> CrossoverMap:
    """:func:`rank_one_on_index` of a configuration frame (one row per configuration
    with score_ms, score_spread, spread_source, n_repeats), one series per group of
    ``series_cols`` present in the frame."""
    if C.SCORE_MS not in configs:
        raise KeyError(f"columns not in frame: {[C.SCORE_MS]}")
    return rank_one_on_index(
        build_index(configs, series_cols), None, option, axis, default_noise_pct
    )


def find_rank_one_segments(
    df: pd.DataFrame,
    option: str = "backend",
    axis: str = C.NUM_TOKENS,
    series_cols: Sequence[str] = SERIES_COLS,
    default_noise_pct: float = DEFAULT_NOISE_PCT,
) -> CrossoverMap:
    """:func:`rank_one_segments` of a candidate frame: rankable rows collapsed to
    configurations first (median over repeat runs; ``identity.configuration_frame``;
    derived columns added when missing)."""
    configs = configuration_frame(ensure_derived(df))
    return rank_one_segments(configs, option, axis, series_cols, default_noise_pct)
