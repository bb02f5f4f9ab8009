"""Compare two sets of measurements (two runs, two TensorRT-LLM versions): what changed.

:func:`compare` takes a *base* and a *head* candidate frame (every status) and answers,
per workload x configuration (``analysis.identity``: :data:`WORKLOAD_COLUMNS` +
:data:`CONFIG_COLUMNS` that both frames carry; the version is not part of the key, it is
what differs):

* ``change_pct`` = ``100 * (head_ms / base_ms - 1)`` on ``score_ms`` (positive = slower).
  Each side is first collapsed by :func:`~analysis.identity.configuration_frame`
  (``repeats="median"``: the median over that side's repeat runs).
* ``noise_pct``: the band a re-run could move the change by, from the noise model of
  :mod:`analysis.noise` (``noise``: estimated from the history of the slice by the
  caller; by default from the base side alone): the configuration's run-to-run spread
  ``run_spread_pct`` from repeats, the history of versions or a prior of configurations
  alike, turned into a one-in-10,000 band for the mean of ``n_base`` vs ``n_head`` runs
  (:func:`analysis.noise.change_band`). ``noise_source`` names it ("repeats",
  "history", "repeats+history", "prior"). Where the model knows nothing, the
  **within-run** band ``100 * NOISE_Z * sqrt(s_base**2 + s_head**2)`` of each side's
  ``score_spread`` (``identity``) is used ("within-run"); both unknown: NaN, "unknown".
* ``verdict``: both sides measured (status success with a score):
  ``regression`` / ``improvement`` when ``|change_pct|`` exceeds ``threshold_pct`` AND
  the noise band (when known); ``inconclusive`` when it exceeds the threshold but not
  the band (a re-run could give it); else ``unchanged``. Otherwise from the statuses
  (success | failed | skipped; a success row without a usable score or with a failed
  autotune counts as failed): ``new_failure`` (head failed, base did not),
  ``newly_skipped`` (base succeeded, head skipped), ``recovered`` (base failed or
  skipped, head succeeded), ``still_unsuccessful``; and ``only_base`` / ``only_head``
  for configurations measured on one side only. On one side, a configuration that
  succeeded in any repeat counts as success, else failed if any repeat failed, else
  skipped.

:func:`compare` also lists the workloads whose **best configuration changed**: per
workload (both sides measured something), the fastest configuration of each side (ties:
the first in key order), with how the base's best does on head and how much faster the
head's best is than that (``gain_pct``); ``within_noise`` when that gain is inside the
two configurations' head-side noise band.

Rows come in sorted key order (missing values last) whatever the input row order;
inputs are not modified. Vectorised: one joint encoding of both sides' keys, numpy
selects, no Python loop over rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import noise as N
from analysis.config_labels import config_label
from analysis.derived import as_float, ensure_derived, group_codes, rankable_mask
from analysis.identity import (
    CONFIG_COLUMNS,
    N_REPEATS,
    REPEAT_RUN_IDS,
    SCORE_SPREAD,
    WORKLOAD_COLUMNS,
    Repeats,
    configuration_frame,
    relative_spread,
)

NOISE_Z = 2.0
DEFAULT_THRESHOLD_PCT = 5.0

BASE_MS, HEAD_MS = "base_ms", "head_ms"
CHANGE_PCT = "change_pct"
BASE_SPREAD_PCT, HEAD_SPREAD_PCT = "base_spread_pct", "head_spread_pct"
NOISE_PCT, NOISE_SOURCE = "noise_pct", "noise_source"
RUN_SPREAD_PCT = "run_spread_pct"
BASELINE_MS, BASELINE_N = "baseline_ms", "baseline_runs"
BASELINE_CHANGE_PCT = "baseline_change_pct"
BASE_STATUS, HEAD_STATUS = "base_status", "head_status"
BASE_N, HEAD_N = "base_n_repeats", "head_n_repeats"
BASE_RUN_IDS, HEAD_RUN_IDS = "base_run_ids", "head_run_ids"
BASE_VERSION, HEAD_VERSION = "base_version", "head_version"
VERDICT = "verdict"
CONFIG_LABEL = "config"

REGRESSION, IMPROVEMENT, UNCHANGED = "regression", "improvement", "unchanged"
INCONCLUSIVE = "inconclusive"
NEW_FAILURE, NEWLY_SKIPPED, RECOVERED = "new_failure", "newly_skipped", "recovered"
STILL_UNSUCCESSFUL, ONLY_BASE, ONLY_HEAD = "still_unsuccessful", "only_base", "only_head"
# np.select order in compare (the codes of the verdict categorical)
VERDICT_ORDER: tuple[str, ...] = (
    "regression",
    "improvement",
    "unchanged",
    "only_head",
    "only_base",
    "new_failure",
    "newly_skipped",
    "recovered",
    "still_unsuccessful",
    "inconclusive",
)
VERDICTS: tuple[str, ...] = (
    REGRESSION,
    IMPROVEMENT,
    INCONCLUSIVE,
    UNCHANGED,
    NEW_FAILURE,
    NEWLY_SKIPPED,
    RECOVERED,
    STILL_UNSUCCESSFUL,
    ONLY_BASE,
    ONLY_HEAD,
)
# best-change table
BASE_BEST, HEAD_BEST = "base_best", "head_best"
BASE_BEST_MS, HEAD_BEST_MS = "base_best_ms", "head_best_ms"
BASE_BEST_ON_HEAD_MS = "base_best_on_head_ms"
GAIN_PCT = "gain_pct"
WITHIN_NOISE = "within_noise"
BEST_CHANGED = "best_changed"

_SUCCESS, _FAILED, _SKIPPED = 0, 1, 2
_STATUS_NAMES = np.array(["success", "failed", "skipped"], dtype=object)


@dataclass(frozen=True)
class Comparison:
    """The answer of :func:`compare`: ``rows`` (one per workload x configuration),
    ``best_changes`` (one per workload whose best configuration changed), ``counts``
    (rows per verdict, plus ``best_changed``), the threshold used and the key columns."""

    rows: pd.DataFrame
    best_changes: pd.DataFrame
    counts: dict[str, int]
    threshold_pct: float
    key: tuple[str, ...] = field(default=())


def _fast(series: pd.Series) -> bool:
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return True
    return dtype.kind in "iufb" or isinstance(dtype, pd.StringDtype)


_NOISE_SOURCES = [*N.SOURCES, "unknown"]
_SIDE_COLUMNS = (
    C.RUN_ID,
    C.RUN_DATE,
    C.TRTLLM_VERSION,
    C.CANDIDATE_INDEX,
    C.STATUS,
    C.FAILURE_CATEGORY,
    C.AUTOTUNE_STATUS,
    C.SCORE_MS,
    C.ITER_STDEV_MS,
    C.ITER_MEDIAN_MS,
    C.ITER_P90_MS,
    C.OUTLIER_COUNT,
)


# every column compare reads (a caller may pass only these)
INPUT_COLUMNS: tuple[str, ...] = (*WORKLOAD_COLUMNS, *CONFIG_COLUMNS, *_SIDE_COLUMNS)


@dataclass(frozen=True)
class _Side:
    """One side: key rows (dtypes kept) and per-row arrays -- the configuration frame's
    rows first, then every unsuccessful row."""

    keys: pd.DataFrame
    status: np.ndarray
    ms: np.ndarray
    spread: np.ndarray
    n: np.ndarray
    runs: np.ndarray  # object: "2,3"
    version: np.ndarray  # object
    tie: np.ndarray  # (run_id, candidate_index) as one number: which row of a key shows


def _text(series: pd.Series) -> np.ndarray:
    out: np.ndarray = series.astype(object).to_numpy(dtype=object)
    return out


def _tie(df: pd.DataFrame) -> np.ndarray:
    """Per row, (run_id, candidate_index) as one orderable number (0 when unknown): a
    row attribute, so the row shown for a key does not depend on row order."""
    n = len(df)
    run = as_float(df[C.RUN_ID]) if C.RUN_ID in df else np.zeros(n)
    cand = as_float(df[C.CANDIDATE_INDEX]) if C.CANDIDATE_INDEX in df else np.zeros(n)
    out: np.ndarray = np.nan_to_num(run) * 1e9 + np.nan_to_num(cand)
    return out


def _single_run(frame: pd.DataFrame, pos: np.ndarray, key: list[str]) -> _Side | None:
    """A side that is one run whose rankable rows (``pos``) all differ in ``key`` (the
    usual case): each row is its own measurement (median of one, its iteration
    spread) -- the same answer as ``configuration_frame``, without its sorts and
    copies. None when that does not hold."""
    if C.RUN_ID not in frame or frame.empty:
        return None
    runs = frame[C.RUN_ID].to_numpy()
    if not (runs == runs[0]).all():
        return None
    bad = np.setdiff1d(np.arange(len(frame)), pos, assume_unique=True)
    keys = frame[key].iloc[np.r_[pos, bad]].reset_index(drop=True)
    if int(group_codes(keys.iloc[: len(pos)], key).max(initial=-1)) + 1 != len(pos):
        return None
    m = len(bad)
    spread = relative_spread(frame)[pos]
    status = _text(frame[C.STATUS])[bad]
    version = (
        _text(frame[C.TRTLLM_VERSION])[np.r_[pos, bad]]
        if C.TRTLLM_VERSION in frame
        else np.full(len(pos) + m, None, dtype=object)
    )
    return _Side(
        keys=keys,
        status=np.r_[
            np.full(len(pos), _SUCCESS), np.where(status == "skipped", _SKIPPED, _FAILED)
        ].astype(np.int64),
        ms=np.r_[as_float(frame[C.SCORE_MS])[pos], np.full(m, np.nan)],
        spread=np.r_[spread, np.full(m, np.nan)],
        n=np.ones(len(pos) + m, np.int64),
        runs=np.full(len(pos) + m, str(int(runs[0])), dtype=object),
        version=version,
        tie=_tie(frame)[np.r_[pos, bad]],
    )


def _side(frame: pd.DataFrame, key: list[str], repeats: Repeats) -> _Side:
    ok = rankable_mask(frame)
    fast = _single_run(frame, np.flatnonzero(ok), key)
    if fast is not None:
        return fast
    slim = frame[list(dict.fromkeys([*key, *(c for c in _SIDE_COLUMNS if c in frame)]))]
    cfg = configuration_frame(slim, repeats)
    bad_pos = np.flatnonzero(~ok)
    bad = slim.iloc[bad_pos]
    m = len(bad)
    keys = pd.concat([cfg[key], bad[key]], ignore_index=True) if m else cfg[key]
    skipped = (_text(bad[C.STATUS]) == "skipped") if m else np.zeros(0, bool)
    none = np.full(len(cfg), None, dtype=object)
    return _Side(
        keys=keys,
        status=np.r_[np.full(len(cfg), _SUCCESS), np.where(skipped, _SKIPPED, _FAILED)].astype(
            np.int64
        ),
        ms=np.r_[as_float(cfg[C.SCORE_MS]), np.full(m, np.nan)],
        spread=np.r_[as_float(cfg[SCORE_SPREAD]), np.full(m, np.nan)],
        n=np.r_[cfg[N_REPEATS].to_numpy(np.int64), np.ones(m, np.int64)],
        runs=np.r_[
            _text(cfg[REPEAT_RUN_IDS]),
            _text(bad[C.RUN_ID]).astype(str).astype(object) if C.RUN_ID in bad else none[:0],
        ].astype(object),
        version=np.r_[
            _text(cfg[C.TRTLLM_VERSION]) if C.TRTLLM_VERSION in cfg else none,
            _text(bad[C.TRTLLM_VERSION]) if C.TRTLLM_VERSION in bad else np.full(m, None),
        ].astype(object),
        tie=np.r_[_tie(cfg), _tie(bad)],
    )


def _joint_keys(
    b: pd.DataFrame, h: pd.DataFrame, key: list[str]
) -> tuple[dict[str, Any], np.ndarray]:
    """Both sides' key values per column (base rows first) and their joint codes (in
    sorted key order, missing values last). A column with the same categorical dtype on
    both sides (rows of one cell frame) stays on its codes: no concatenated frame."""
    n = len(b) + len(h)
    cols: dict[str, Any] = {}
    combined = np.zeros(n, dtype=np.int64)
    for c in key:
        sb, sh = b[c], h[c]
        if isinstance(sb.dtype, pd.CategoricalDtype) and sb.dtype == sh.dtype:
            raw = np.r_[sb.cat.codes.to_numpy(), sh.cat.codes.to_numpy()].astype(np.int64)
            cols[c] = pd.Categorical.from_codes(raw, dtype=sb.dtype)
            cats = sb.dtype.categories
            order = np.argsort(np.asarray(cats.astype(str)), kind="stable")
            rank = np.empty(len(cats), dtype=np.int64)
            rank[order] = np.arange(len(cats))
            codes = np.where(raw >= 0, rank[np.maximum(raw, 0)], len(cats))
            card = len(cats)
        else:
            vals = pd.concat([sb, sh], ignore_index=True)
            cols[c] = vals.array
            enc = vals if _fast(vals) else vals.astype(object).astype("string")
            codes, uniq = pd.factorize(enc, sort=True, use_na_sentinel=True)
            card = len(uniq)
            codes = np.where(codes < 0, card, codes).astype(np.int64)
        combined = combined * (card + 1) + codes
        if combined.max(initial=0) > 1 << 40:
            combined = np.unique(combined, return_inverse=True)[1].astype(np.int64)
    joint: np.ndarray = np.unique(combined, return_inverse=True)[1].astype(np.int64)
    return cols, joint


def _categorical(values: np.ndarray) -> pd.Categorical:
    """Object values as a categorical (missing values stay missing)."""
    codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=True)
    return pd.Categorical.from_codes(codes, categories=list(uniques))


def _pick(codes: np.ndarray, status: np.ndarray, tie: np.ndarray, n_codes: int) -> np.ndarray:
    """Per code, the row position of its best status (success, then failed, then
    skipped; then the smallest ``tie``), -1 when the code has no row."""
    out = np.full(n_codes, -1, dtype=np.int64)
    if not len(codes):
        return out
    order = np.lexsort((np.arange(len(codes)), tie, status, codes))
    first = np.ones(len(order), dtype=bool)
    first[1:] = codes[order][1:] != codes[order][:-1]
    out[codes[order][first]] = order[first]
    return out


def _masked(keep: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` as objects, None where ``keep`` is False."""
    out = np.asarray(values).astype(object)
    out[~keep] = None
    return out


def _take(values: np.ndarray, pos: np.ndarray, fill: object) -> np.ndarray:
    out: np.ndarray = values[np.maximum(pos, 0)]
    if out.dtype.kind in "iu" and isinstance(fill, int):
        ints: np.ndarray = np.where(pos >= 0, out, fill)
        return ints
    if out.dtype.kind == "f":
        floats: np.ndarray = np.where(pos >= 0, out, np.nan)
        return floats
    res = out.astype(object)
    res[pos < 0] = fill
    return res


def compare(
    base: pd.DataFrame,
    head: pd.DataFrame,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    repeats: Repeats = "median",
    noise: N.NoiseModel | None = None,
) -> Comparison:
    """Compare ``head`` with ``base`` (candidate frames, every status); see the module
    docstring for the key, the change, the noise band and the verdicts. ``noise``: the
    noise model of the slice's history (default: estimated from ``base``).
    ``threshold_pct`` must be finite and >= 0 (ValueError otherwise)."""
    if not np.isfinite(threshold_pct) or threshold_pct < 0:
        raise ValueError(f"threshold_pct must be a finite number >= 0, got {threshold_pct!r}")
    # the phase is the only derived column the comparison needs
    base = base if C.PHASE in base else ensure_derived(base)
    head = head if C.PHASE in head else ensure_derived(head)
    key = [
        c for c in (*WORKLOAD_COLUMNS, *CONFIG_COLUMNS) if c in base.columns and c in head.columns
    ]
    b, h = _side(base, key, repeats), _side(head, key, repeats)
    nb = len(b.status)
    both, codes = _joint_keys(b.keys, h.keys, key)
    n_codes = int(codes.max()) + 1 if len(codes) else 0
    pb = _pick(codes[:nb], b.status, b.tie, n_codes)
    ph = _pick(codes[nb:], h.status, h.tie, n_codes)
    shown = np.where(pb >= 0, pb, ph + nb)

    def take(values: np.ndarray, pos: np.ndarray, fill: object) -> np.ndarray:
        return _take(values, pos, fill)

    sb = take(b.status, pb, -1).astype(np.int64)
    sh = take(h.status, ph, -1).astype(np.int64)
    bms, hms = take(b.ms, pb, np.nan), take(h.ms, ph, np.nan)
    spread_b, spread_h = take(b.spread, pb, np.nan), take(h.spread, ph, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        change = 100.0 * (hms / bms - 1.0)
        within = 100.0 * NOISE_Z * np.sqrt(spread_b**2 + spread_h**2)
    measured = (sb == _SUCCESS) & (sh == _SUCCESS)
    rows = pd.DataFrame({c: both[c][shown] for c in key})
    est = N.noise_for(noise if noise is not None else N.estimate_noise(base), rows)
    j = N.judge(est, bms, hms, take(b.n, pb, 1), take(h.n, ph, 1), take(b.version, pb, None))
    noise_pct = np.where(np.isfinite(j.band_pct), j.band_pct, within)
    src = np.where(
        np.isfinite(j.band_pct), j.source, np.where(np.isfinite(within), N.WITHIN, "unknown")
    )
    codes = N.verdict_codes(j.change_pct, noise_pct, threshold_pct)
    verdict = np.select(
        [
            measured & (codes == 0),
            measured & (codes == 1),
            measured & (codes == 3),
            measured,
            sb < 0,
            sh < 0,
            (sh == _FAILED) & (sb != _FAILED),
            (sh == _SKIPPED) & (sb == _SUCCESS),
            (sh == _SUCCESS),
        ],
        [0, 1, 9, 2, 3, 4, 5, 6, 7],
        8,
    )
    status_names = ["success", "failed", "skipped"]
    extra = {
        CONFIG_LABEL: config_label(rows).to_numpy(),
        BASE_MS: np.where(sb == _SUCCESS, bms, np.nan),
        HEAD_MS: np.where(sh == _SUCCESS, hms, np.nan),
        CHANGE_PCT: np.where(measured, change, np.nan),
        BASE_SPREAD_PCT: 100.0 * spread_b,
        HEAD_SPREAD_PCT: 100.0 * spread_h,
        BASELINE_MS: np.where(measured, j.baseline_ms, np.nan),
        BASELINE_N: np.where(measured, j.n_base, np.nan),
        BASELINE_CHANGE_PCT: np.where(measured, j.change_pct, np.nan),
        RUN_SPREAD_PCT: np.where(measured, 100.0 * j.spread, np.nan),
        NOISE_PCT: np.where(measured, noise_pct, np.nan),
        NOISE_SOURCE: pd.Categorical(_masked(measured, src), categories=_NOISE_SOURCES),
        VERDICT: pd.Categorical.from_codes(verdict, categories=list(VERDICT_ORDER)),
        BASE_STATUS: pd.Categorical.from_codes(sb, categories=status_names),
        HEAD_STATUS: pd.Categorical.from_codes(sh, categories=status_names),
        BASE_N: pd.array(_masked(pb >= 0, take(b.n, pb, 0)), dtype="Int64"),
        HEAD_N: pd.array(_masked(ph >= 0, take(h.n, ph, 0)), dtype="Int64"),
        BASE_RUN_IDS: _categorical(take(b.runs, pb, None)),
        HEAD_RUN_IDS: _categorical(take(h.runs, ph, None)),
        BASE_VERSION: _categorical(take(b.version, pb, None)),
        HEAD_VERSION: _categorical(take(h.version, ph, None)),
    }
    rows = pd.concat([rows, pd.DataFrame(extra, index=rows.index)], axis=1)
    best = best_changes(rows, [c for c in key if c in WORKLOAD_COLUMNS])
    tally = np.bincount(verdict, minlength=len(VERDICT_ORDER)) if len(verdict) else None
    counts = {v: int(tally[VERDICT_ORDER.index(v)]) if tally is not None else 0 for v in VERDICTS}
    counts[BEST_CHANGED] = len(best)
    return Comparison(rows, best, counts, float(threshold_pct), tuple(key))


def _best_rows(wcode: np.ndarray, ms: np.ndarray, n_w: int) -> np.ndarray:
    """Per workload code, the row with the smallest finite ``ms`` (first row on ties);
    -1 when none."""
    out = np.full(n_w, -1, dtype=np.int64)
    ok = np.flatnonzero(np.isfinite(ms))
    if not len(ok):
        return out
    order = ok[np.lexsort((ok, ms[ok], wcode[ok]))]
    first = np.ones(len(order), dtype=bool)
    first[1:] = wcode[order][1:] != wcode[order][:-1]
    out[wcode[order][first]] = order[first]
    return out


def best_changes(rows: pd.DataFrame, workload: list[str]) -> pd.DataFrame:
    """Workloads of a :func:`compare` ``rows`` table whose fastest configuration differs
    between base and head (module docstring); one row per such workload, in key order:
    the workload columns, ``base_best`` / ``head_best`` (config labels), their scores,
    the base best's score on head, ``gain_pct`` and ``within_noise``, then every
    configuration column of both winners prefixed ``base_best_`` / ``head_best_``."""
    cfg_cols = [c for c in CONFIG_COLUMNS if c in rows]
    out_cols = [
        *workload,
        BASE_BEST,
        HEAD_BEST,
        BASE_BEST_MS,
        HEAD_BEST_MS,
        BASE_BEST_ON_HEAD_MS,
        GAIN_PCT,
        WITHIN_NOISE,
        *(f"base_best_{c}" for c in cfg_cols),
        *(f"head_best_{c}" for c in cfg_cols),
    ]
    if rows.empty:
        return pd.DataFrame(columns=out_cols)
    enc = pd.DataFrame(
        {
            c: rows[c] if _fast(rows[c]) else rows[c].astype(object).astype("string")
            for c in workload
        }
    )
    wcode = group_codes(enc, workload)
    n_w = int(wcode.max()) + 1
    bms, hms = as_float(rows[BASE_MS]), as_float(rows[HEAD_MS])
    bb, hb = _best_rows(wcode, bms, n_w), _best_rows(wcode, hms, n_w)
    changed = np.flatnonzero((bb >= 0) & (hb >= 0) & (bb != hb))
    bb, hb = bb[changed], hb[changed]
    spread = as_float(rows[HEAD_SPREAD_PCT]) / 100.0
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = 100.0 * (1.0 - hms[hb] / hms[bb])
        band = 100.0 * NOISE_Z * np.sqrt(spread[hb] ** 2 + spread[bb] ** 2)
    cols: dict[str, Any] = {c: rows[c].take(hb).to_numpy() for c in workload}
    cols.update(
        {
            BASE_BEST: rows[CONFIG_LABEL].take(bb).to_numpy(),
            HEAD_BEST: rows[CONFIG_LABEL].take(hb).to_numpy(),
            BASE_BEST_MS: bms[bb],
            HEAD_BEST_MS: hms[hb],
            BASE_BEST_ON_HEAD_MS: hms[bb],
            GAIN_PCT: gain,
            WITHIN_NOISE: np.isfinite(gain) & np.isfinite(band) & (gain <= band),
        }
    )
    for c in cfg_cols:
        cols[f"base_best_{c}"] = rows[c].take(bb).to_numpy()
    for c in cfg_cols:
        cols[f"head_best_{c}"] = rows[c].take(hb).to_numpy()
    return pd.DataFrame(cols, columns=out_cols)
