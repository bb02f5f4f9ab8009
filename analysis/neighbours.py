"""Interpolating a group's measured scores between the two measured loads around an
asked one (log-log), per configuration: the estimate the predictions' local correction
and their bracketing read. Pure numpy (a hot path of the shape model's answers)."""

from __future__ import annotations

import numpy as np


def _nanmax(values: np.ndarray) -> float:
    finite = values[~np.isnan(values)]
    return float(finite.max()) if len(finite) else np.nan


def _least_by_label(
    values: np.ndarray, labels: np.ndarray, query: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per label of ``query``, the least of ``values`` carrying it (NaN values skipped;
    NaN: no value), and the least per distinct label of ``labels`` -- a grouped minimum
    in numpy (a hot path of the shape model's answers)."""
    uniq, inv = np.unique(labels.astype(str), return_inverse=True)
    least = np.full(len(uniq), np.nan)
    np.fmin.at(least, inv, values)
    pos = np.searchsorted(uniq, query.astype(str))
    pos = np.clip(pos, 0, max(len(uniq) - 1, 0))
    hit = (uniq[pos] == query.astype(str)) if len(uniq) else np.zeros(len(query), bool)
    out = np.where(hit, least[pos] if len(uniq) else np.nan, np.nan)
    return out.astype(float), least


def neighbour_estimate(
    tokens: np.ndarray, score: np.ndarray, labels: np.ndarray, query: np.ndarray, t: float,
    censored: bool,
) -> np.ndarray:  # fmt: skip
    """Per label of ``query``: ``log(score_ms)`` at ``t`` interpolated log-log between the
    group's measured neighbours below and above ``t`` (``tokens``, ``score``, ``labels``:
    the group's rows). A configuration missing at a neighbour is NaN -- unless the source
    keeps only its top configurations (``censored``): then it is known to be no faster
    than the slowest kept there, and that score stands in (the most it can be worth, as
    the threshold checks read top-3 data). Measured at neither neighbour: NaN. With one
    neighbour only (beyond the range): NaN."""
    lower, upper = tokens[tokens < t], tokens[tokens > t]
    out = np.full(len(query), np.nan)
    if not len(lower) or not len(upper):
        return out
    t0, t1 = float(lower.max()), float(upper.min())
    side = []
    for x in (t0, t1):
        at = tokens == x
        kept = _least_by_label(np.log(score[at]), labels[at], query)
        worst = _nanmax(kept[1]) if censored else np.nan
        side.append(np.where(np.isnan(kept[0]), worst, kept[0]))
    seen = np.isin(query, labels[(tokens == t0) | (tokens == t1)])
    w = (np.log(t) - np.log(t0)) / (np.log(t1) - np.log(t0))
    est = side[0] + w * (side[1] - side[0])
    out[seen] = est[seen]
    return out
