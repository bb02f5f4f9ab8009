"""One noise model: how far a re-run of the same software could move a configuration's score.

A comparison of two measurements is only as good as the band it is held against. The
within-run iteration spread (a few hundred iterations of one process) says how precise a
run's own mean is; it says nothing of what changes between two processes -- clocks,
placement, autotuner picks, launch jitter. Eager (CUDA graph off), launch-bound
configurations move 30-80 % between runs while their iteration spread is 1 %. So the
band is estimated from **runs**, per configuration (workload x configuration,
``analysis.identity``), on the natural-log scale of ``score_ms`` (a relative spread):

* ``repeats``: runs of the same TensorRT-LLM version on the slice -- their deviations
  from that version's mean (``n - 1`` degrees of freedom per version).
* ``history``: the runs of the other versions (version order of
  :mod:`analysis.versions`) around their level. A level change is not noise: as in
  change-point detection (Apache Otava splits a series where a two-sample t-test says
  its level moved, MongoDB's e-divisive likewise), the series is split recursively at
  the version boundary of the largest t statistic while it is significant
  (:data:`SPLIT_P`), and the spread is the runs' deviation from their segment's mean.
  Needs at least :data:`MIN_STEPS` version steps, so a lone step (change or noise:
  nobody can tell) never counts; with fewer, only repeats do.
* ``prior``: configurations alike -- same CUDA graph mode, backend and token range
  (:func:`token_range`), then coarser (graph mode and token range, graph mode, all) --
  share a prior learned from those that have evidence: the empirical-Bayes variance
  moderation of limma (Smyth 2004), prior variance ``s0²`` and prior degrees of freedom
  ``d0`` from the moments of ``log s²`` (``scipy.special`` digamma/trigamma). A
  configuration with evidence gets ``(d0 s0² + d s²) / (d0 + d)`` with ``d0 + d``
  degrees of freedom; one without any gets the prior, said to be a prior.
* ``within-run``: nothing above exists (a single run per version, a short history): the
  caller falls back to the iteration spread, and says so.

:func:`change_band` turns a spread into the band of a change between two sides of
``n_base`` and ``n_head`` runs: a Student-t prediction bound (``scipy.stats.t``, as
Bencher's t-test thresholds) at :data:`FALSE_ALARM` per side -- one false alarm in
10,000 unchanged rows. :func:`verdict_codes`: a change beyond the threshold and the band
is a regression / improvement; beyond the threshold but inside the band it is
``inconclusive`` (a re-run could give it); within the threshold it is ``unchanged``.

Pure and deterministic; inputs are not modified; results do not depend on row order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from analysis import columns as C
from analysis.derived import as_float, group_codes, rankable_mask
from analysis.identity import CONFIG_COLUMNS, WORKLOAD_COLUMNS, present
from analysis.versions import version_order, version_table

FALSE_ALARM = 1e-4  # per side and row: P(band exceeded | nothing changed)
SPLIT_P = 1e-2  # a level change in a configuration's history: t-test p below this
MIN_STEPS = 3  # history counts from this many version steps on
MIN_GROUP = 3  # configurations with evidence a prior group needs
MAX_PRIOR_DF = 200.0  # d0 of a group whose spreads agree (no spread of spreads)
# d0 of a group whose spreads disagree: from a handful of configurations the moment
# estimate is itself noisy, and below a few degrees of freedom the t quantile explodes
MIN_PRIOR_DF = 4.0
MAX_BAND_PCT = 10_000.0
# (0.1 %)²: GPU timings of two processes never agree closer; identical repeats are
# rounding, and a zero would dominate the log-variance moments of the prior
_VAR_FLOOR = 0.001**2

# what the version order of a frame reads (analysis.versions.version_table)

SPREAD = "run_spread"  # estimated run-to-run spread, natural-log units (~ a fraction)
DF = "run_spread_df"
SOURCE = "run_spread_source"
LEVEL = "baseline_log"  # mean log score of the runs since the last level change
N_LEVEL = "baseline_runs"  # how many runs that is
LAST_VERSION = "baseline_version"  # the latest version among them
REPEATS, HISTORY, BOTH, PRIOR, WITHIN = (
    "repeats",
    "history",
    "repeats+history",
    "prior",
    "within-run",
)
SOURCES: tuple[str, ...] = (REPEATS, HISTORY, BOTH, PRIOR, WITHIN)
# coarser and coarser groups of "alike" configurations
PRIOR_LEVELS: tuple[tuple[str, ...], ...] = (
    (C.CUDA_GRAPH, C.BACKEND, "token_range"),
    (C.CUDA_GRAPH, "token_range"),
    (C.CUDA_GRAPH,),
    (),
)
TOKEN_RANGES: tuple[tuple[str, float], ...] = (
    ("1-3", 4),
    ("4-63", 64),
    ("64-1023", 1024),
    ("1024-16383", 16384),
    ("16384+", np.inf),
)


@dataclass(frozen=True)
class NoiseModel:
    """Per configuration (``key`` columns), the moderated run-to-run spread, its degrees
    of freedom and source (``table``); per prior group the learned prior (``priors``:
    level, the level's columns, ``s0``, ``d0``, ``n_configs``)."""

    table: pd.DataFrame
    priors: pd.DataFrame
    key: tuple[str, ...]


def token_range(num_tokens: pd.Series) -> np.ndarray:
    """Per row, the token range label of :data:`TOKEN_RANGES` ("?" when unknown)."""
    tokens = as_float(num_tokens)
    edges = np.array([hi for _, hi in TOKEN_RANGES])
    names = np.array([n for n, _ in TOKEN_RANGES] + ["?"], dtype=object)
    idx = np.searchsorted(edges, tokens, side="right")
    idx = np.where(np.isfinite(tokens), np.minimum(idx, len(TOKEN_RANGES) - 1), len(edges))
    out: np.ndarray = names[idx]
    return out


def _trigamma_inverse(y: float) -> float:
    return float(optimize.brentq(lambda x: special.polygamma(1, x) - y, 1e-6, 1e7))


def fit_prior(variances: np.ndarray, dfs: np.ndarray) -> tuple[float, float]:
    """The prior ``(s0², d0)`` of sample variances ``variances`` with ``dfs`` degrees of
    freedom each (limma's moment estimate on ``log s²``); ``d0`` is
    :data:`MAX_PRIOR_DF` when the variances vary no more than sampling explains, at
    least :data:`MIN_PRIOR_DF`."""
    var = np.maximum(variances, _VAR_FLOOR)
    half = dfs / 2.0
    e = np.log(var) - special.digamma(half) + np.log(half)
    mean = float(e.mean())
    n = len(e)
    extra = float(((e - mean) ** 2).sum() / max(n - 1, 1) - special.polygamma(1, half).mean())
    if extra <= 0:
        return float(np.exp(mean)), MAX_PRIOR_DF
    d0 = float(np.clip(2.0 * _trigamma_inverse(extra), MIN_PRIOR_DF, MAX_PRIOR_DF))
    s0_sq = float(np.exp(mean + special.digamma(d0 / 2) - np.log(d0 / 2)))
    return s0_sq, d0


def _versions(frame: pd.DataFrame) -> np.ndarray:
    if C.TRTLLM_VERSION not in frame:
        return np.zeros(len(frame), np.int64)
    order = version_order(frame[C.TRTLLM_VERSION], version_table(frame))
    out: np.ndarray = np.where(order < 0, np.iinfo(np.int32).max, order).astype(np.int64)
    return out


@lru_cache(maxsize=512)
def _critical_t(df: int) -> float:
    return float(stats.t.isf(SPLIT_P / 2, df))


def boundary_t(y: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The pooled two-sample t statistic (``scipy.stats.ttest_ind(y[:k], y[k:])``) of
    every split position ``k`` of ``bounds`` at once (cumulative sums, one pass);
    inf where both sides are constant at different levels, NaN when equal."""
    n = len(y)
    cs, cs2 = np.cumsum(y), np.cumsum(y * y)
    left, right = bounds.astype(float), n - bounds.astype(float)
    m_l, m_r = cs[bounds - 1] / left, (cs[-1] - cs[bounds - 1]) / right
    ss = cs2[bounds - 1] - left * m_l**2 + (cs2[-1] - cs2[bounds - 1]) - right * m_r**2
    pooled = np.maximum(ss, 0.0) / (n - 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = (m_l - m_r) / np.sqrt(pooled * (1 / left + 1 / right))
    return out


def _segments(y: np.ndarray, ver: np.ndarray) -> list[tuple[int, int]]:
    """Split a configuration's runs (``y`` ordered by version ``ver``) where its level
    changes: the version boundary of the largest two-sample t statistic
    (:func:`boundary_t`), kept when it is beyond Student's two-sided critical value at
    :data:`SPLIT_P` (``scipy.stats.t``); then each side again."""
    bounds = np.flatnonzero(ver[1:] != ver[:-1]) + 1
    n = len(y)
    if not len(bounds) or n < 3 or np.ptp(y) < 1e-12:
        return [(0, n)]
    t_abs = np.nan_to_num(np.abs(boundary_t(y, bounds)), nan=0.0, posinf=np.inf)
    best = int(np.argmax(t_abs))
    if t_abs[best] <= _critical_t(n - 2):
        return [(0, n)]
    k = int(bounds[best])
    return [*_segments(y[:k], ver[:k]), *((a + k, b + k) for a, b in _segments(y[k:], ver[k:]))]


def _evidence(cfg: np.ndarray, ver: np.ndarray, y: np.ndarray, n_cfg: int) -> pd.DataFrame:
    """Per configuration code: the residual sum of squares and degrees of freedom of
    its runs around their level (``ss``, ``df``), and whether repeats / history gave
    them. History (runs of other versions around one level, :func:`_segments`) needs
    :data:`MIN_STEPS` version steps; with fewer, only repeats count (levels per
    version)."""
    if not len(cfg):
        empty = np.zeros(n_cfg)
        return pd.DataFrame(
            {"ss": empty, "df": empty, "rep": empty > 0, "hist": empty > 0, LEVEL: empty,
             N_LEVEL: empty.astype(np.int64), "last": empty.astype(np.int64)}
        )  # fmt: skip
    order = np.lexsort((y, ver, cfg))
    cfg, ver, y = cfg[order], ver[order], y[order]
    del order
    # per (configuration, version): runs, mean, sum of squares -- vectorised, one
    # temporary per step (a cell of a year: ~1M rows)
    new_cell = np.r_[True, (cfg[1:] != cfg[:-1]) | (ver[1:] != ver[:-1])]
    cell = np.cumsum(new_cell) - 1
    n_v = np.bincount(cell).astype(float)
    mean_v = np.bincount(cell, weights=y) / n_v
    dev = mean_v[cell]
    np.subtract(y, dev, out=dev)
    ss_v = np.bincount(cell, weights=np.square(dev, out=dev))
    del cell, dev
    cfg_v, ver_v = cfg[new_cell], ver[new_cell]
    n_versions = np.bincount(cfg_v, minlength=n_cfg)
    runs = np.bincount(cfg, minlength=n_cfg)
    ss = np.bincount(cfg_v, weights=ss_v, minlength=n_cfg).astype(float)
    df = np.bincount(cfg_v, weights=n_v - 1, minlength=n_cfg).astype(float)
    # the newest version of each configuration is its level (repeats only)
    newest = np.flatnonzero(np.r_[cfg_v[1:] != cfg_v[:-1], True])
    level = np.full(n_cfg, np.nan)
    n_level = np.zeros(n_cfg, dtype=np.int64)
    last = np.zeros(n_cfg, dtype=np.int64)
    level[cfg_v[newest]] = mean_v[newest]
    n_level[cfg_v[newest]] = n_v[newest].astype(np.int64)
    last[cfg_v[newest]] = ver_v[newest]
    rep = runs > n_versions
    hist = np.zeros(n_cfg, dtype=bool)
    # history needs MIN_STEPS version steps: those configurations are split into levels
    long = np.flatnonzero(n_versions - 1 >= MIN_STEPS)
    if len(long):
        starts = np.searchsorted(cfg, long)
        ends = np.searchsorted(cfg, long, side="right")
        for code, a0, b0 in zip(long, starts, ends, strict=True):
            yc, vc = y[a0:b0], ver[a0:b0]
            segs = _segments(yc, vc)
            ss[code] = sum(float(((yc[a:b] - yc[a:b].mean()) ** 2).sum()) for a, b in segs)
            df[code] = float(sum(b - a - 1 for a, b in segs))
            a, b = segs[-1]
            level[code], n_level[code] = yc[a:b].mean(), b - a
            hist[code] = df[code] > 0
    return pd.DataFrame(
        {
            "ss": ss,
            "df": df,
            "rep": rep & (df > 0),
            "hist": hist,
            LEVEL: level,
            N_LEVEL: n_level,
            "last": last,
        }
    )


def _prior_columns(rows: pd.DataFrame) -> pd.DataFrame:
    """The columns prior groups are formed on (``token_range`` added)."""
    out = pd.DataFrame(index=rows.index)
    for col in (C.CUDA_GRAPH, C.BACKEND):
        out[col] = rows[col].astype(object).astype(str) if col in rows else "?"
    out["token_range"] = token_range(rows[C.NUM_TOKENS]) if C.NUM_TOKENS in rows else "?"
    return out


def estimate_noise(history: pd.DataFrame) -> NoiseModel:
    """The :class:`NoiseModel` of a candidate frame of one or more runs (module
    docstring). Only rankable rows count; a configuration is the workload x
    configuration key of the columns the frame carries."""
    key = tuple(present(history, (*WORKLOAD_COLUMNS, *CONFIG_COLUMNS)))
    ok = np.flatnonzero(rankable_mask(history)) if len(history) else np.zeros(0, np.int64)
    # codes of the whole frame taken at the rankable rows, and of those rows only the
    # columns read below: no copy of the frame (a cell of a year is ~1M rows)
    cfg = (
        np.unique(group_codes(history, list(key))[ok], return_inverse=True)[1].astype(np.int64)
        if len(ok)
        else np.zeros(0, np.int64)
    )
    n_cfg = int(cfg.max()) + 1 if len(cfg) else 0
    first = np.unique(cfg, return_index=True)[1]
    table = history[list(key)].iloc[ok[first]].reset_index(drop=True)
    if len(first) == len(cfg):  # every configuration measured once: nothing to learn
        for col, value in ((SPREAD, np.nan), (DF, np.nan), (SOURCE, WITHIN), (LEVEL, np.nan),
                           (N_LEVEL, 0), (LAST_VERSION, None), ("_prior_s", np.nan),
                           ("_prior_df", np.nan)):  # fmt: skip
            table[col] = value
        return NoiseModel(table, pd.DataFrame(), key)
    # version order of the whole frame taken at the rankable rows (no copy of them)
    ver = _versions(history)[ok]
    ev = _evidence(cfg, ver, np.log(as_float(history[C.SCORE_MS])[ok]), n_cfg)
    d = ev["df"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_sq = (ev["ss"].to_numpy() / d).astype(float)
    has = d > 0
    groups = _prior_columns(table)
    s0 = np.full(n_cfg, np.nan)
    d0 = np.zeros(n_cfg)
    prior_rows = []
    for level, cols in enumerate(PRIOR_LEVELS):
        codes = group_codes(groups, list(cols)) if cols else np.zeros(n_cfg, np.int64)
        for code in np.unique(codes):
            members = (codes == code) & has
            open_ = (codes == code) & np.isnan(s0)
            if members.sum() < MIN_GROUP:
                continue
            s0_sq, df0 = fit_prior(s_sq[members], d[members])
            s0[open_], d0[open_] = s0_sq, df0
            label = {c: groups[c].to_numpy()[codes == code][0] for c in cols}
            prior_rows.append(
                {"level": level, **label, "s0": np.sqrt(s0_sq), "d0": df0, "n": members.sum()}
            )
    post_df = np.where(has, d, 0.0) + np.where(np.isfinite(s0), d0, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        post = (np.where(has, d * s_sq, 0.0) + np.where(np.isfinite(s0), d0 * s0, 0.0)) / post_df
    rep, hist = ev["rep"].to_numpy(), ev["hist"].to_numpy()
    source = np.where(rep & hist, BOTH, np.where(rep, REPEATS, np.where(hist, HISTORY, PRIOR)))
    source = np.where(has | np.isfinite(s0), source, WITHIN)
    table[SPREAD] = np.sqrt(np.where(post_df > 0, post, np.nan))
    table[DF] = np.where(post_df > 0, post_df, np.nan)
    table[SOURCE] = source
    table[LEVEL] = ev[LEVEL].to_numpy()
    table[N_LEVEL] = ev[N_LEVEL].to_numpy()
    seen, first_row = np.unique(ver, return_index=True)  # each version's first row
    names = pd.Series(
        history[C.TRTLLM_VERSION].iloc[ok[first_row]].astype(object).to_numpy()
        if C.TRTLLM_VERSION in history
        else None,
        index=seen,
    )
    table[LAST_VERSION] = names.reindex(ev["last"].to_numpy()).to_numpy(dtype=object)
    table["_prior_s"] = np.sqrt(s0)
    table["_prior_df"] = np.where(np.isfinite(s0), d0, np.nan)
    return NoiseModel(table, pd.DataFrame(prior_rows), key)


def noise_for(model: NoiseModel, rows: pd.DataFrame) -> pd.DataFrame:
    """Per row of ``rows`` (any frame with the model's key columns): ``run_spread``,
    ``run_spread_df``, ``run_spread_source`` and its baseline (``baseline_log``,
    ``baseline_runs``, ``baseline_version``: NaN, 0, None when unseen). A
    configuration the model has not seen gets the prior of its group (source "prior")
    when one was learned, else NaN and "within-run" (the caller's fallback)."""
    out = pd.DataFrame(index=rows.index)
    out[SPREAD], out[DF], out[SOURCE] = np.nan, np.nan, WITHIN
    out[LEVEL], out[N_LEVEL], out[LAST_VERSION] = np.nan, 0, None
    nothing = model.priors.empty and (model.table[SOURCE] == WITHIN).all()
    if not len(rows) or model.table.empty or nothing:  # e.g. one run: nothing learned
        return out
    key = [c for c in model.key if c in rows]
    table = model.table
    both = pd.concat([table[key].astype(object), rows[key].astype(object)], ignore_index=True)
    codes = group_codes(both, key)
    lookup = np.full(int(codes.max()) + 1, -1, dtype=np.int64)
    lookup[codes[: len(table)]] = np.arange(len(table))
    pos = lookup[codes[len(table) :]]
    seen = pos >= 0
    at = np.maximum(pos, 0)
    for col in (SPREAD, DF, SOURCE, LEVEL, N_LEVEL, LAST_VERSION):
        vals = model.table[col].to_numpy()[at]
        out.loc[seen, col] = vals[seen]
    if (~seen).any() and not model.priors.empty:
        out.loc[~seen, [SPREAD, DF, SOURCE]] = _priors_of(model, rows.loc[~seen]).to_numpy()
    return out


def _priors_of(model: NoiseModel, rows: pd.DataFrame) -> pd.DataFrame:
    groups = _prior_columns(rows)
    spread = np.full(len(rows), np.nan)
    df = np.full(len(rows), np.nan)
    for level, cols in enumerate(PRIOR_LEVELS):
        here = model.priors[model.priors["level"] == level]
        if here.empty:
            continue
        if cols:
            merged = groups[list(cols)].merge(here, on=list(cols), how="left")
            s0, d0 = merged["s0"].to_numpy(float), merged["d0"].to_numpy(float)
        else:
            s0 = np.full(len(rows), float(here["s0"].iat[0]))
            d0 = np.full(len(rows), float(here["d0"].iat[0]))
        fill = np.isnan(spread) & np.isfinite(s0)
        spread[fill], df[fill] = s0[fill], d0[fill]
    source = np.where(np.isfinite(spread), PRIOR, WITHIN)
    return pd.DataFrame({SPREAD: spread, DF: df, SOURCE: source}, index=rows.index)


def change_band(
    spread: np.ndarray,
    df: np.ndarray,
    n_base: np.ndarray,
    n_head: np.ndarray,
    false_alarm: float = FALSE_ALARM,
) -> np.ndarray:
    """Half-width, in percent of the base score, of the change an unchanged
    configuration can show between the mean of ``n_base`` and of ``n_head`` runs:
    ``100 * (exp(t * spread * sqrt(1/n_base + 1/n_head)) - 1)`` with ``t`` the
    Student-t quantile ``1 - false_alarm`` at ``df`` degrees of freedom, at most
    :data:`MAX_BAND_PCT` (a band that wide says "anything goes" already). NaN where the
    spread is unknown."""
    spread = np.asarray(spread, float)
    dfs = np.where(np.isfinite(df) & (np.asarray(df, float) > 0), df, np.nan)
    quantile = stats.t.ppf(1.0 - false_alarm, np.minimum(dfs, 1e6))
    nb = np.maximum(np.asarray(n_base, float), 1.0)
    nh = np.maximum(np.asarray(n_head, float), 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        log_band = quantile * spread * np.sqrt(1.0 / nb + 1.0 / nh)
        band: np.ndarray = 100.0 * np.expm1(np.minimum(log_band, np.log1p(MAX_BAND_PCT / 100)))
    return band


def verdict_codes(change_pct: np.ndarray, band_pct: np.ndarray, threshold_pct: float) -> np.ndarray:
    """0 regression, 1 improvement, 2 unchanged, 3 inconclusive per change: beyond
    ``threshold_pct`` and beyond the band (NaN band: the threshold alone) is conclusive;
    beyond the threshold inside the band is inconclusive; within it, unchanged."""
    change = np.asarray(change_pct, float)
    band = np.asarray(band_pct, float)
    over = np.abs(change) > threshold_pct
    beyond = over & (~np.isfinite(band) | (np.abs(change) > band))
    out: np.ndarray = np.select(
        [beyond & (change > 0), beyond & (change < 0), over], [0, 1, 3], 2
    ).astype(np.int64)
    return out


@dataclass(frozen=True)
class Judged:
    """What :func:`judge` gives per row: the baseline a change is judged against, its
    number of runs, the change in percent, the run-to-run spread (log units), the band
    in percent (NaN where the model knows nothing) and its source."""

    baseline_ms: np.ndarray
    n_base: np.ndarray
    change_pct: np.ndarray
    spread: np.ndarray
    band_pct: np.ndarray
    source: np.ndarray


def judge(
    est: pd.DataFrame,
    base_ms: np.ndarray,
    head_ms: np.ndarray,
    n_base: np.ndarray,
    n_head: np.ndarray,
    base_version: np.ndarray,
) -> Judged:
    """The change of ``head_ms`` (mean of ``n_head`` runs) against its baseline, with
    the band of ``est`` (:func:`noise_for` rows). The baseline is every run since the
    configuration's last level change (``baseline_log``, ``baseline_runs``) when the
    base side's version is the newest of them -- as Bencher and Otava judge a new
    result against the stable history, not one run -- else ``base_ms`` over ``n_base``
    runs."""
    level = est[LEVEL].to_numpy(float)
    spread = est[SPREAD].to_numpy(float)
    same = np.asarray(base_version, dtype=object) == est[LAST_VERSION].to_numpy(dtype=object)
    use = np.isfinite(level) & np.isfinite(spread) & same
    baseline = np.where(use, np.exp(np.where(use, level, 0.0)), base_ms)
    runs = np.where(use, est[N_LEVEL].to_numpy(float), np.asarray(n_base, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        change = 100.0 * (np.asarray(head_ms, float) / baseline - 1.0)
    band = change_band(spread, est[DF].to_numpy(float), runs, n_head)
    return Judged(baseline, runs, change, spread, band, est[SOURCE].to_numpy(dtype=object))


def history_until(
    frame: pd.DataFrame, version: str | None, exclude_runs: Sequence[int]
) -> pd.DataFrame:
    """The rows of ``frame`` a comparison's noise model learns from: those of ``version``
    and of every version before it (:mod:`analysis.versions` order), without the runs
    ``exclude_runs`` (the head's). ``version`` None (or unknown): every other run."""
    keep = ~frame[C.RUN_ID].isin(list(exclude_runs)).to_numpy(dtype=bool, na_value=False)
    if version is not None and C.TRTLLM_VERSION in frame:
        table = version_table(frame)
        order = version_order(frame[C.TRTLLM_VERSION], table)
        mine = version_order(pd.Series([version]), table)[0]
        if mine >= 0:
            keep &= (order >= 0) & (order <= mine)
    return frame.loc[keep]


TIE_Z = 1.96  # a margin inside the 95 % band of a re-run is a tie


def pair_band(
    spread_a: np.ndarray, n_a: np.ndarray, spread_b: np.ndarray, n_b: np.ndarray
) -> np.ndarray:
    """The band, in percent, a re-run could open between two configurations measured
    ``n_a`` and ``n_b`` times with run-to-run spreads ``spread_a`` / ``spread_b``:
    ``100 * (exp(TIE_Z * sqrt(spread_a²/n_a + spread_b²/n_b)) - 1)``; NaN where a spread
    is unknown. A best's margin inside it is a tie."""
    na = np.maximum(np.asarray(n_a, float), 1.0)
    nb = np.maximum(np.asarray(n_b, float), 1.0)
    with np.errstate(invalid="ignore"):
        sd = np.sqrt(np.asarray(spread_a, float) ** 2 / na + np.asarray(spread_b, float) ** 2 / nb)
    out: np.ndarray = 100.0 * np.expm1(TIE_Z * sd)
    return out
