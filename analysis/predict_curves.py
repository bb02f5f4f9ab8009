"""A configuration's score between and beyond its measured token counts, as a scikit-learn
regressor (so MAPIE can calibrate its intervals by conformal prediction).

:class:`LogLogCurves` sees each configuration of one workload group as a curve of
``log(score_ms)`` over ``log(num_tokens)``: inside the measured range it interpolates
linearly between the two measured neighbours (a power law between them, which is what a
kernel moving from launch-bound to bandwidth- to compute-bound looks like piece by
piece); beyond it, it extends the outermost segment with its slope clipped to
``[min_slope, max_slope]`` (latency never falls with more tokens, and grows at most a
little faster than linearly). A curve of one point uses the median slope of every
segment of the fit.

``X`` is numeric: column 0 the curve's integer code, column 1 ``log(num_tokens)``;
``y`` is ``log(score_ms)``. A code the fit has not seen predicts NaN.

A curve does not run across a change of regime: :func:`idle_ranks` says which token
counts leave attention-DP ranks without a token, and :func:`same_regime` which counts an
answer may interpolate between.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

_SPAN = 1e4  # log token counts are far below this: one sorted key per (curve, x)


class LogLogCurves(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Per-curve piecewise log-log interpolation (module docstring)."""

    def __init__(self, min_slope: float = 0.0, max_slope: float = 1.2) -> None:
        self.min_slope = min_slope
        self.max_slope = max_slope

    def fit(self, X: Any, y: Any) -> LogLogCurves:
        x = np.asarray(X, dtype=float)
        target = np.asarray(y, dtype=float)
        code, lx = x[:, 0].astype(np.int64), x[:, 1]
        # one point per (curve, token count): the mean of duplicates (none in a
        # configuration frame)
        pairs, inv = np.unique(np.c_[code, lx], axis=0, return_inverse=True)
        inv = inv.ravel()
        self.codes_, starts = np.unique(pairs[:, 0].astype(np.int64), return_index=True)
        self.x_ = pairs[:, 1]
        self.y_ = np.bincount(inv, weights=target) / np.bincount(inv)
        self.start_ = starts
        self.end_ = np.r_[starts[1:], len(pairs)]
        self.key_ = np.searchsorted(self.codes_, pairs[:, 0].astype(np.int64)) * _SPAN + self.x_
        same = np.repeat(np.arange(len(starts)), self.end_ - self.start_)
        seg = same[1:] == same[:-1]
        with np.errstate(divide="ignore", invalid="ignore"):  # across curves: masked
            slopes = (np.diff(self.y_) / np.diff(self.x_))[seg]
        median = float(np.median(slopes)) if len(slopes) else 0.0
        self.median_slope_ = float(np.clip(median, self.min_slope, self.max_slope))
        return self

    def predict(self, X: Any) -> np.ndarray:
        x = np.asarray(X, dtype=float)
        code, at = x[:, 0].astype(np.int64), x[:, 1]
        k = np.clip(np.searchsorted(self.codes_, code), 0, len(self.codes_) - 1)
        seen = self.codes_[k] == code
        s, e = self.start_[k], self.end_[k]
        pos = np.searchsorted(self.key_, k * _SPAN + at)
        single = e - s == 1
        # the segment (j - 1, j) at or around the query: interior, or the outermost one
        j = np.clip(pos, s + 1, np.maximum(e - 1, s + 1))
        j = np.where(single, s, j)
        i = np.where(single, s, j - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = (self.y_[j] - self.y_[i]) / (self.x_[j] - self.x_[i])
        clipped = np.clip(slope, self.min_slope, self.max_slope)
        below, above = at < self.x_[s], at > self.x_[e - 1]
        slope = np.where(single, self.median_slope_, np.where(below | above, clipped, slope))
        anchor = np.where(above, j, i)
        out: np.ndarray = self.y_[anchor] + slope * (at - self.x_[anchor])
        return np.where(seen, out, np.nan)


def idle_ranks(tokens: np.ndarray, world_size: int, attention_dp: bool | None) -> np.ndarray:
    """Per token count: whether it leaves ranks without a token -- under attention DP
    bench_moe splits ``num_tokens`` evenly over the ranks, remainder first, so below
    ``world_size`` tokens some ranks idle (``[1, 1, 0, 0]`` for 2 on 4). That is another
    regime, not a point on the same curve: on NVIDIA's sweeps a DEP configuration's time
    fell by 14-26 % from below the world size to above it in 4 of the 19 steps across it,
    against 4 of 2,707 steps falling by more than 5 % elsewhere."""
    return np.asarray(tokens, float) < world_size if attention_dp else np.zeros(len(tokens), bool)


def same_regime(
    tokens: np.ndarray, t: float, world_size: int, attention_dp: bool | None
) -> np.ndarray:
    """The token counts of the same regime (:func:`idle_ranks`) as ``t``; every count
    when none is (the group measured only the other regime)."""
    idle = idle_ranks(tokens, world_size, attention_dp)
    same = idle == bool(idle_ranks(np.array([t]), world_size, attention_dp)[0])
    return same if same.any() else np.ones(len(tokens), dtype=bool)
