"""Segments, switch rows and per-series summaries of the crossover explorer
(``analysis.crossovers`` has the rules: segments, margins, noise bands, verdicts)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import noise as N

ROBUST, TIE, NOT_COMPARED = "robust", "tie within noise", "not compared"
VERDICTS: tuple[str, ...] = (ROBUST, TIE, NOT_COMPARED)
RUN_TO_RUN, ITERATION, DEFAULT_SOURCE = "run_to_run", "iteration_spread", "default"

SWITCH_COLUMNS: tuple[str, ...] = (
    "series",
    "series_label",
    "switch",
    "before",
    "after",
    "bracket_lo",
    "bracket_hi",
    "n_before",
    "n_after",
    "before_at_lo_ms",
    "after_at_lo_ms",
    "before_at_hi_ms",
    "after_at_hi_ms",
    "margin_lo_pct",
    "margin_hi_pct",
    "noise_lo_pct",
    "noise_hi_pct",
    "noise_source",
    "verdict",
)
SERIES_SUMMARY: tuple[str, ...] = (
    "series",
    "series_label",
    "n_axis_points",
    "n_options",
    "n_segments",
    "n_switches",
    "n_robust",
    "rank1_sequence",
    "axis_min",
    "axis_max",
)


@dataclass(frozen=True)
class Pairs:
    """The switches found, one entry per switch: series id, 1-based switch number in its
    series, option labels before/after, bracket axis positions (into the axis values),
    segment lengths, and the positions of the two options' points at both bracket ends
    (into the answer's point arrays; -1 where the option was not measured)."""

    series: np.ndarray
    switch: np.ndarray
    before: np.ndarray
    after: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_before: np.ndarray
    n_after: np.ndarray
    before_lo: np.ndarray
    after_lo: np.ndarray
    before_hi: np.ndarray
    after_hi: np.ndarray


def _text(values: np.ndarray) -> pd.Series:
    """Strings as an object column: no per-string conversion to Arrow (pandas' default
    string dtype costs ~1 µs a value, and all-data answers have thousands of switches)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def _take(values: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``values[pos]`` as float, NaN where ``pos`` is -1."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return np.full(len(pos), np.nan)
    return np.where(pos >= 0, v[np.maximum(pos, 0)], np.nan)


def _band(s1: np.ndarray, s2: np.ndarray, default: float) -> np.ndarray:
    known = np.isfinite(s1) & np.isfinite(s2)
    return np.where(known, 100.0 * np.hypot(s1, s2), default)


def _pick(values: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``values`` at ``pos`` (None where pos < 0)."""
    if len(values) == 0:
        return np.full(len(pos), None, dtype=object)
    out: np.ndarray = np.where(pos >= 0, values[np.maximum(pos, 0)], np.array(None, dtype=object))
    return out


def _model_source(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The noise model's source of a pair: the one both share, else both joined."""
    a, b = a.astype(str), b.astype(str)
    lo, hi = np.where(a <= b, a, b), np.where(a <= b, b, a)
    out: np.ndarray = np.where(lo == hi, lo, np.char.add(np.char.add(lo, "+"), hi))
    return out.astype(object)


def _source(src: np.ndarray, positions: Sequence[np.ndarray]) -> np.ndarray:
    """Where the bands come from, as ``analysis.best`` says it: "run_to_run",
    "iteration_spread" or both joined ("run_to_run+iteration_spread") over the
    configurations involved; "default" when one of them has no known spread."""
    n = len(positions[0])
    any_rr = np.zeros(n, dtype=bool)
    any_it = np.zeros(n, dtype=bool)
    unknown = np.zeros(n, dtype=bool)
    for pos in positions:
        present = pos >= 0
        s = src[np.maximum(pos, 0)] if len(src) else np.full(n, None, dtype=object)
        any_rr |= present & (s == RUN_TO_RUN)
        any_it |= present & (s == ITERATION)
        unknown |= present & (s != RUN_TO_RUN) & (s != ITERATION)
    both = any_rr & any_it
    return np.where(
        unknown,
        DEFAULT_SOURCE,
        np.where(both, f"{RUN_TO_RUN}+{ITERATION}", np.where(any_rr, RUN_TO_RUN, ITERATION)),
    )


def empty_switches(scols: Sequence[str]) -> pd.DataFrame:
    """A switches frame without rows (the columns of :func:`switches_table`)."""
    return pd.DataFrame(columns=[*scols, *SWITCH_COLUMNS])


def switches_table(
    pairs: Pairs,
    score: np.ndarray,
    spread: np.ndarray,
    source: np.ndarray,
    axis_values: np.ndarray,
    s_frame: pd.DataFrame,
    s_label: np.ndarray,
    scols: Sequence[str],
    default_noise_pct: float,
    modelled: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> pd.DataFrame:
    """One row per switch: the series columns (``s_frame`` row = series id), then
    :data:`SWITCH_COLUMNS`. ``score`` (ms), ``spread`` (fraction) and ``source`` are the
    answer's point arrays that the pairs' positions index. Margins and bands in %.
    ``modelled``: per point the noise model's run spread (log units, NaN: none), runs
    and source; a pair with both spreads gets :func:`analysis.noise.pair_band` of one
    re-run per side (the band a repeat run could open)."""
    if len(pairs.series) == 0:
        return empty_switches(scols)
    positions = (pairs.before_lo, pairs.after_lo, pairs.before_hi, pairs.after_hi)
    sb_lo, sa_lo, sb_hi, sa_hi = (_take(score, p) for p in positions)
    with np.errstate(divide="ignore", invalid="ignore"):
        margin_lo = (sa_lo - sb_lo) / sb_lo * 100.0
        margin_hi = (sb_hi - sa_hi) / sa_hi * 100.0
    band_lo = _band(
        _take(spread, pairs.before_lo), _take(spread, pairs.after_lo), default_noise_pct
    )
    band_hi = _band(
        _take(spread, pairs.before_hi), _take(spread, pairs.after_hi), default_noise_pct
    )
    noise_source = _source(source, positions)
    if modelled is not None:
        m_spread, m_runs, m_source = modelled
        sides = ((pairs.before_lo, pairs.after_lo), (pairs.before_hi, pairs.after_hi))
        bands = [band_lo, band_hi]
        model_src = np.full(len(pairs.series), None, dtype=object)
        for i, (a, b) in enumerate(sides):
            # one re-run of each side: a switch is robust when a repeat run would not
            # flip it, whatever number of runs its medians pooled
            one = np.ones(len(a))
            pb = N.pair_band(_take(m_spread, a), one, _take(m_spread, b), one)
            ok = np.isfinite(pb)
            bands[i] = np.where(ok, pb, bands[i])
            joined = _model_source(_pick(m_source, a), _pick(m_source, b))
            model_src = np.where(ok & (model_src == None), joined, model_src)  # noqa: E711
        band_lo, band_hi = bands
        noise_source = np.where(model_src == None, noise_source, model_src)  # noqa: E711
    compared = np.isfinite(margin_lo) & np.isfinite(margin_hi)
    robust = compared & (margin_lo > band_lo) & (margin_hi > band_hi)
    verdict = np.where(~compared, NOT_COMPARED, np.where(robust, ROBUST, TIE))
    s = pairs.series
    out = s_frame[list(scols)].iloc[s].reset_index(drop=True)
    cols = {
        "series": s,
        "series_label": _text(s_label[s]),
        "switch": pairs.switch,
        "before": _text(pairs.before),
        "after": _text(pairs.after),
        "bracket_lo": axis_values[pairs.lo],
        "bracket_hi": axis_values[pairs.hi],
        "n_before": pairs.n_before,
        "n_after": pairs.n_after,
        "before_at_lo_ms": sb_lo,
        "after_at_lo_ms": sa_lo,
        "before_at_hi_ms": sb_hi,
        "after_at_hi_ms": sa_hi,
        "margin_lo_pct": margin_lo,
        "margin_hi_pct": margin_hi,
        "noise_lo_pct": band_lo,
        "noise_hi_pct": band_hi,
        "noise_source": _text(noise_source),
        "verdict": _text(verdict),
    }
    return out.assign(**cols)


def series_table(
    s_frame: pd.DataFrame,
    points: pd.DataFrame,
    segments: pd.DataFrame,
    switches: pd.DataFrame,
    scols: Sequence[str],
) -> pd.DataFrame:
    """One row per series: its columns (``s_frame`` row = series id), then
    :data:`SERIES_SUMMARY` (axis points with a rank 1, distinct options measured,
    segments, switches, robust switches, the rank-1 options in axis order joined by
    " → ", and the axis range)."""
    if points.empty:
        return pd.DataFrame(columns=[*scols, *SERIES_SUMMARY])
    n_s = len(s_frame)
    sid = points["series"].to_numpy()
    winners = points["rank"].to_numpy() == 1
    x = points["axis_value"].to_numpy(dtype=float)
    n_opts = (
        points.groupby("series", sort=True)["option"].nunique().reindex(range(n_s), fill_value=0)
    )
    seq = _sequences(segments, n_s)
    sw = switches["series"].to_numpy(dtype=np.int64) if len(switches) else np.zeros(0, np.int64)
    robust = (switches["verdict"].to_numpy() == ROBUST) if len(switches) else np.zeros(0, bool)
    x_min = np.full(n_s, np.inf)
    x_max = np.full(n_s, -np.inf)
    np.minimum.at(x_min, sid, x)
    np.maximum.at(x_max, sid, x)
    out = s_frame.reset_index(drop=True)
    return out.assign(
        series=np.arange(n_s),
        n_axis_points=np.bincount(sid[winners], minlength=n_s),
        n_options=n_opts.to_numpy(),
        n_segments=np.bincount(segments["series"].to_numpy(dtype=np.int64), minlength=n_s),
        n_switches=np.bincount(sw, minlength=n_s),
        n_robust=np.bincount(sw[robust], minlength=n_s),
        rank1_sequence=seq,
        axis_min=x_min,
        axis_max=x_max,
    )[[*scols, *SERIES_SUMMARY]]


def _sequences(segments: pd.DataFrame, n_s: int) -> np.ndarray:
    """Per series the rank-1 options of its segments in axis order, joined by " → "
    (one join per series; segments arrive sorted by series then axis)."""
    out = np.full(n_s, "", dtype=object)
    if segments.empty:
        return out
    sid = segments["series"].to_numpy(dtype=np.int64)
    names = segments["option"].astype(str).to_numpy(dtype=object)
    cuts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
    for start, stop in zip(cuts, np.r_[cuts[1:], len(sid)], strict=True):
        out[sid[start]] = " → ".join(names[start:stop])
    return out


def segments_and_pairs(
    p_s: np.ndarray,
    p_a: np.ndarray,
    p_o: np.ndarray,
    winners: np.ndarray,
    keys: np.ndarray,
    n_a: int,
    n_o: int,
    labels: np.ndarray,
) -> tuple[pd.DataFrame, Pairs]:
    """Run-length segments of the rank-1 option per series (axis positions in
    ``_a_lo``/``_a_hi``) and the switches between neighbouring segments, with the
    positions (in key order) of both options at both bracket ends (-1: not measured)."""
    ws, wa, wo = p_s[winners], p_a[winners], p_o[winners]
    change = np.r_[True, (ws[1:] != ws[:-1]) | (wo[1:] != wo[:-1])]
    seg_start = np.flatnonzero(change)
    seg_end = np.r_[seg_start[1:], len(winners)] - 1
    seg_series = ws[seg_start]
    first_of_series = np.r_[True, seg_series[1:] != seg_series[:-1]]
    idx = np.arange(len(seg_start))
    seg_no = idx - np.maximum.accumulate(np.where(first_of_series, idx, 0))
    segments = pd.DataFrame(
        {
            "series": seg_series,
            "segment": seg_no,
            "option": _text(labels[wo[seg_start]]),
            "_a_lo": wa[seg_start],
            "_a_hi": wa[seg_end],
            "n_points": seg_end - seg_start + 1,
        }
    )
    j = np.flatnonzero(~first_of_series[1:]) if len(seg_start) > 1 else np.zeros(0, np.int64)
    before, after = wo[seg_start[j]], wo[seg_start[j + 1]]
    a_lo, a_hi = wa[seg_end[j]], wa[seg_start[j + 1]]
    s = seg_series[j]

    def find(a: np.ndarray, o: np.ndarray) -> np.ndarray:
        want = (s * n_a + a) * n_o + o
        at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
        found: np.ndarray = np.where(keys[at] == want, at, -1)
        return found

    pairs = Pairs(
        series=s,
        switch=seg_no[j + 1],
        before=labels[before],
        after=labels[after],
        lo=a_lo,
        hi=a_hi,
        n_before=seg_end[j] - seg_start[j] + 1,
        n_after=seg_end[j + 1] - seg_start[j + 1] + 1,
        before_lo=winners[seg_end[j]],
        after_lo=find(a_lo, after),
        before_hi=find(a_hi, before),
        after_hi=winners[seg_start[j + 1]],
    )
    return segments, pairs
