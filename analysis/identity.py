"""What a measurement *is*: its workload, its configuration, and when two are repeats.

A candidate row measures one **configuration** (:data:`CONFIG_COLUMNS`: backend, requested
and actual comm, parallel mode, EP/TP sizes, attention DP, CUDA graph, low-precision
combine, chunks) on one **workload** (:data:`WORKLOAD_COLUMNS`: model, hardware, quant,
world size, num_tokens, routing pattern, attention family, phase). Rows of *different*
runs that share the workload, the configuration and the TensorRT-LLM version are
**repeats** of one measurement (:data:`MEASUREMENT_KEY`). Columns a frame does not carry
are left out of the key (e.g. ``num_chunks`` on frames that do not load it).

:func:`configuration_frame` turns a candidate frame into one row per workload x
configuration -- the unit every ranking (best, Pareto, agreement, measured pick) compares:

* ``repeats="median"`` (default): ``score_ms`` is the median over the repeats (the mean
  of the two middle values for an even count); the row shown for it (its run_id,
  candidate_index, iteration statistics) is the repeat nearest the median, the later
  run on equal distance.
* ``repeats="latest"``: the latest run's own row and score (latest = newest run_date,
  runs without a date older than any dated one, then the larger run_id).

Spread (``score_spread``, a fraction of the score): with two or more repeats under
``median``, the run-to-run sample standard deviation (ddof=1) of their scores divided
by the median (``spread_source`` "run_to_run"); otherwise the row's within-run
iteration spread (:func:`relative_spread`, "iteration_spread"), NaN when unknown
("unknown"). ``n_repeats`` counts the runs pooled; ``repeat_run_ids`` lists them
("3,7", ascending).

Versions: the same configuration measured under several TensorRT-LLM versions is not
pooled; the version of its latest run supersedes the older ones (``n_versions`` says how
many versions measured it). Rows of one run that share every key column (they differ
only in a knob the frame does not carry) count as one measurement, the fastest (on
equal scores the smaller known iteration spread, then the lower candidate index).

Only rankable rows take part (``derived.rankable_mask``). ``tokens_per_s_per_gpu`` is
rescaled to the aggregate score when present. The input is not modified; a frame that
already is a configuration frame (has ``n_repeats``) is returned as it is. Output order
is the input order of the rows shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import as_float, group_codes, rankable_mask, sort_codes

Repeats = Literal["median", "latest"]
REPEATS: tuple[str, ...] = ("median", "latest")

CONFIG_COLUMNS: tuple[str, ...] = (
    C.BACKEND,
    C.COMM_REQUESTED,
    C.COMM,
    C.PARALLEL_MODE,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.ATTENTION_DP,
    C.CUDA_GRAPH,
    C.LOW_PRECISION_COMBINE,
    C.NUM_CHUNKS,
)
WORKLOAD_COLUMNS: tuple[str, ...] = (
    C.MODEL,
    C.HARDWARE,
    C.QUANT,
    C.WORLD_SIZE,
    C.NUM_TOKENS,
    C.DISPATCH,
    C.ATTN,
    C.PHASE,
)
MEASUREMENT_KEY: tuple[str, ...] = (*WORKLOAD_COLUMNS, *CONFIG_COLUMNS, C.TRTLLM_VERSION)

N_REPEATS = "n_repeats"
REPEAT_RUN_IDS = "repeat_run_ids"
SCORE_SPREAD = "score_spread"
SPREAD_SOURCE = "spread_source"  # "run_to_run" | "iteration_spread" | "unknown"
N_VERSIONS = "n_versions"
AGGREGATE_COLUMNS: tuple[str, ...] = (
    N_REPEATS,
    REPEAT_RUN_IDS,
    SCORE_SPREAD,
    SPREAD_SOURCE,
    N_VERSIONS,
)
_P90_Z = 1.2816  # p90 = median + 1.2816 sigma for a normal distribution
_SPREAD_COLUMNS: tuple[str, ...] = (
    C.SCORE_MS,
    C.ITER_STDEV_MS,
    C.OUTLIER_COUNT,
    C.ITER_P90_MS,
    C.ITER_MEDIAN_MS,
)


def present(df: pd.DataFrame, cols: Sequence[str]) -> list[str]:
    """The columns of ``cols`` that ``df`` carries, in order."""
    return [c for c in cols if c in df.columns]


def relative_spread(df: pd.DataFrame) -> np.ndarray:
    """Per-row within-run spread of the score as a fraction (NaN when unknown):
    ``iter_stdev_ms / score_ms``. The stdev covers every iteration, outliers included,
    while the score trims them; so with ``outlier_count > 0`` the smaller of that and
    the robust ``(iter_p90_ms - iter_median_ms) / 1.2816 / iter_median_ms`` is used."""
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


def run_order(df: pd.DataFrame) -> np.ndarray:
    """Per-row rank of its run in time (larger = later): by run_date (ISO text; runs
    without a date come before every dated run), then run_id."""
    n = len(df)
    run = as_float(df[C.RUN_ID]) if C.RUN_ID in df else np.zeros(n)
    if C.RUN_DATE in df and isinstance(df[C.RUN_DATE].dtype, pd.CategoricalDtype):
        # the categories' text ranked once, not a string per row
        dates = df[C.RUN_DATE]
        rank = sort_codes(pd.Series(dates.cat.categories).astype("string"))
        date = np.append(rank, -1)[dates.cat.codes.to_numpy()]  # code -1 (missing) -> -1
    elif C.RUN_DATE in df:
        date = sort_codes(df[C.RUN_DATE].astype("string"))
        date = np.where(date == np.iinfo(np.int64).max, -1, date)
    else:
        date = np.zeros(n, dtype=np.int64)
    order = np.lexsort((np.nan_to_num(run, nan=-1.0), date))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return rank


def _starts(sorted_groups: np.ndarray) -> np.ndarray:
    out = np.ones(len(sorted_groups), dtype=bool)
    out[1:] = sorted_groups[1:] != sorted_groups[:-1]
    return out


def _combine(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """Dense codes of the pairs (major, minor) of two non-negative int code arrays."""
    if not len(major):
        return major.astype(np.int64)
    width = int(minor.max()) + 1
    if int(major.max()) < np.iinfo(np.int64).max // width:
        pair = major.astype(np.int64) * width + minor
    else:  # pragma: no cover - astronomically many groups
        pair = np.unique(np.stack([major, minor], axis=1), axis=0, return_inverse=True)[1]
    out: np.ndarray = np.unique(pair, return_inverse=True)[1].astype(np.int64)
    return out


def _codes(values: pd.Series) -> np.ndarray:
    """Sorted codes of a column, missing values a code of their own (the largest)."""
    codes = sort_codes(values.astype("string") if values.dtype == object else values)
    codes = np.where(codes == np.iinfo(np.int64).max, -1, codes)
    out: np.ndarray = np.unique(codes, return_inverse=True)[1].astype(np.int64)
    return out


def configuration_frame(
    df: pd.DataFrame, repeats: Repeats = "median", rows: np.ndarray | None = None
) -> pd.DataFrame:
    """One row per workload x configuration over the rankable rows of ``df``, with
    :data:`AGGREGATE_COLUMNS` added; see the module docstring for the rule. ``rows``
    (a boolean mask over ``df``): only those rows take part -- the same answer as
    ``configuration_frame(df[rows])`` without copying the frame."""
    if repeats not in REPEATS:
        raise ValueError(f"unknown repeats {repeats!r}; use {list(REPEATS)}")
    if N_REPEATS in df.columns:
        return df if rows is None else df[np.asarray(rows, dtype=bool)]
    ok = rankable_mask(df)
    pos = np.flatnonzero(ok if rows is None else ok & np.asarray(rows, dtype=bool))
    # One encoding of the workload x configuration over the rankable rows; the version
    # and the run refine it (arrays only: the frame is taken once, at the end). Codes
    # of the whole frame, taken at the rankable rows: no copy of the key columns.
    key = present(df, (*WORKLOAD_COLUMNS, *CONFIG_COLUMNS))
    g_cfg = _dense(group_codes(df, key)[pos])
    version = (
        _codes(df[C.TRTLLM_VERSION].iloc[pos])
        if C.TRTLLM_VERSION in df
        else np.zeros(len(pos), np.int64)
    )
    g = _combine(g_cfg, version) if version.max(initial=0) > 0 else g_cfg
    later_all = run_order(df)[pos]
    # Newer versions supersede older ones of the same workload x configuration: only
    # the rows of each configuration's latest version are pooled (a year of versions
    # is mostly superseded rows); the older versions are only counted.
    n_versions_all, newest = _latest_versions(g, g_cfg, later_all)
    if len(newest) < len(pos):
        pos, g, later_all, n_versions_all = (
            pos[newest],
            _dense(g[newest]),
            later_all[newest],
            n_versions_all[newest],
        )
    n_all = len(pos)
    score_all = as_float(df[C.SCORE_MS])[pos]
    runs_all = (
        as_float(df[C.RUN_ID])[pos].astype(np.int64)
        if C.RUN_ID in df
        else np.zeros(n_all, np.int64)
    )
    # rows of one run sharing the key are one measurement: the fastest
    per_run = _combine(g, _codes(pd.Series(runs_all)))
    if per_run.max(initial=-1) + 1 == n_all:  # the usual case: no such rows
        keep = np.arange(n_all)
    else:
        # ties on score: the known, smaller iteration spread, then the candidate index
        # (row attributes, so the answer does not depend on row order)
        tie = _spread_at(df, pos)
        tie = np.where(np.isfinite(tie), tie, np.inf)
        cand = as_float(df[C.CANDIDATE_INDEX])[pos] if C.CANDIDATE_INDEX in df else np.zeros(n_all)
        first = np.lexsort((np.arange(n_all), cand, tie, score_all, per_run))
        keep = np.sort(first[_starts(per_run[first])])
    pos, g, n_versions_all = pos[keep], g[keep], n_versions_all[keep]
    score, runs, later = score_all[keep], runs_all[keep], later_all[keep]
    n = len(pos)
    # by group, score, then later runs first; a configuration measured once (the usual
    # case) is its own group and needs no sort: those rows go first, as they are
    single = np.bincount(g)[g] == 1 if n else np.zeros(0, bool)
    alone, pooled_rows = np.flatnonzero(single), np.flatnonzero(~single)

    def by_group(*keys: np.ndarray) -> np.ndarray:
        sub = np.lexsort(tuple(k[pooled_rows] for k in keys))
        return np.concatenate([alone, pooled_rows[sub]])

    order = by_group(-later, score, g)
    gs = g[order]
    starts = np.flatnonzero(_starts(gs))
    counts = np.diff(np.r_[starts, n])
    lo = starts + (counts - 1) // 2
    hi = starts + counts // 2
    median = (score[order[lo]] + score[order[hi]]) / 2.0
    if repeats == "median":
        # the middle row (odd count) or the later of the two middle rows (even count)
        rep = np.where(later[order[hi]] > later[order[lo]], order[hi], order[lo])
        value = median
    else:
        last = by_group(later, g)  # by group, then later last
        rep = last[np.r_[starts[1:], n] - 1] if n else last
        value = score[rep]
    within = _spread_at(df, pos[rep]) if n else np.zeros(0)
    sums = np.add.reduceat(score[order], starts) if n else np.zeros(0)
    sq = np.add.reduceat(score[order] ** 2, starts) if n else np.zeros(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = sums / counts
        var = np.maximum(sq - counts * mean**2, 0.0) / (counts - 1)
        run_spread = np.sqrt(var) / median
    pooled = (counts > 1) & (repeats == "median")
    spread = np.where(pooled, run_spread, within)
    source = np.where(
        pooled, "run_to_run", np.where(np.isfinite(within), "iteration_spread", "unknown")
    )
    n_versions = n_versions_all[rep]
    chosen = np.argsort(pos[rep], kind="stable")  # input order
    ids = _run_id_lists(runs[order], starts, counts, chosen)
    out = df.iloc[pos[rep[chosen]]].copy()
    old = as_float(out[C.SCORE_MS])
    out[C.SCORE_MS] = value[chosen]
    if C.TOKENS_PER_S_PER_GPU in out:
        with np.errstate(divide="ignore", invalid="ignore"):
            tps = as_float(out[C.TOKENS_PER_S_PER_GPU]) * old / value[chosen]
        out[C.TOKENS_PER_S_PER_GPU] = tps
    out[N_REPEATS] = counts[chosen].astype(np.int64)
    out[REPEAT_RUN_IDS] = ids
    out[SCORE_SPREAD] = spread[chosen]
    out[SPREAD_SOURCE] = source[chosen]
    out[N_VERSIONS] = n_versions[chosen].astype(np.int64)
    return out.reset_index(drop=True)


def _dense(codes: np.ndarray) -> np.ndarray:
    """Dense codes (0..k-1) in the order of ``codes``."""
    out: np.ndarray = np.unique(codes, return_inverse=True)[1].astype(np.int64)
    return out


def _latest_versions(
    g: np.ndarray, g_cfg: np.ndarray, later: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row (``g``: workload x configuration x version; ``g_cfg``: workload x
    configuration; ``later``: run order) the number of versions of its configuration,
    and the positions of the rows of each configuration's latest version (the version
    whose latest run is the latest; a run holds one version, so there is no tie)."""
    if not len(g):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    n_g = int(g.max()) + 1
    newest = np.full(n_g, -1, dtype=np.int64)
    np.maximum.at(newest, g, later)
    cfg = np.zeros(n_g, dtype=np.int64)
    cfg[g] = g_cfg
    seen = np.zeros(n_g, dtype=bool)
    seen[g] = True
    n_versions = np.bincount(cfg, weights=seen).astype(np.int64)[g_cfg]
    sup = np.flatnonzero(seen)
    sup = sup[np.lexsort((newest[sup], cfg[sup]))]
    latest = np.zeros(n_g, dtype=bool)
    latest[sup[np.r_[_starts(cfg[sup])[1:], True]]] = True
    return n_versions, np.flatnonzero(latest[g])


def _spread_at(df: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """:func:`relative_spread` of the rows at positions ``rows`` (only the columns it
    reads are taken)."""
    cols = present(df, _SPREAD_COLUMNS)
    return relative_spread(pd.DataFrame({c: df[c].iloc[rows].reset_index(drop=True) for c in cols}))


def _run_id_lists(
    runs: np.ndarray, starts: np.ndarray, counts: np.ndarray, which: np.ndarray
) -> np.ndarray:
    """The run ids ("a,b,c", ascending) of the groups ``which`` of ``runs``
    (``starts`` / ``counts`` delimit the groups; a run appears once per group)."""
    if not len(which):
        return np.zeros(0, dtype=object)
    uniq, inv = np.unique(runs, return_inverse=True)
    names = np.array([str(u) for u in uniq.tolist()], dtype=object)
    base, size = starts[which], counts[which]
    out: np.ndarray = names[inv[base]].copy()
    multi = np.flatnonzero(size > 1)
    if len(multi):
        # only the pooled groups: their run ids sorted (a few repeats each)
        width = int(size[multi].max())
        grid = np.full((len(multi), width), len(uniq), dtype=np.int64)
        for j in range(width):
            has = size[multi] > j
            grid[has, j] = inv[base[multi][has] + j]
        grid.sort(axis=1)
        text = np.concatenate([names, np.array([None], dtype=object)])
        joined = text[grid[:, 0]].copy()
        for j in range(1, width):
            has = grid[:, j] < len(uniq)
            joined[has] = joined[has] + "," + text[grid[has, j]]
        out[multi] = joined
    return out


def default_dispatch(labels: pd.Series) -> str | None:
    """The routing pattern an answer uses when none is asked for: "balanced" when any
    row has it (the guide ranks under perfect routing), else the label with the most
    rows (equal counts: the first alphabetically). None when no row has a label."""
    counts = labels.dropna().astype(str).value_counts()
    if counts.empty:
        return None
    if "balanced" in counts.index:
        return "balanced"
    top = counts[counts == counts.max()]
    return str(sorted(top.index)[0])


def known_dispatch(labels: pd.Series) -> list[str]:
    """The routing pattern labels present (sorted, missing values left out)."""
    return sorted({str(v) for v in labels.dropna().unique()})
