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
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class LogLogCurves(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Per-curve piecewise log-log interpolation (module docstring)."""

    def __init__(self, min_slope: float = 0.0, max_slope: float = 1.2) -> None:
        self.min_slope = min_slope
        self.max_slope = max_slope

    def fit(self, X: Any, y: Any) -> LogLogCurves:
        x = np.asarray(X, dtype=float)
        target = np.asarray(y, dtype=float)
        code, lx = x[:, 0].astype(np.int64), x[:, 1]
        order = np.lexsort((lx, code))
        code, lx, target = code[order], lx[order], target[order]
        codes, starts = np.unique(code, return_index=True)
        self.curves_: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        slopes = []
        for c, xs, ys in zip(
            codes, np.split(lx, starts[1:]), np.split(target, starts[1:]), strict=True
        ):
            # the same token count twice (should not happen in a configuration frame):
            # their mean
            ux, inv = np.unique(xs, return_inverse=True)
            uy = np.bincount(inv, weights=ys) / np.bincount(inv)
            self.curves_[int(c)] = (ux, uy)
            if len(ux) > 1:
                slopes.append(np.diff(uy) / np.diff(ux))
        every = np.concatenate(slopes) if slopes else np.zeros(1)
        self.median_slope_ = float(np.clip(np.median(every), self.min_slope, self.max_slope))
        return self

    def predict(self, X: Any) -> np.ndarray:
        x = np.asarray(X, dtype=float)
        code, lx = x[:, 0].astype(np.int64), x[:, 1]
        out = np.full(len(x), np.nan)
        for c in np.unique(code):
            curve = self.curves_.get(int(c))
            if curve is None:
                continue
            rows = code == c
            out[rows] = self._along(curve[0], curve[1], lx[rows])
        return out

    def _along(self, xs: np.ndarray, ys: np.ndarray, at: np.ndarray) -> np.ndarray:
        if len(xs) == 1:
            single: np.ndarray = ys[0] + self.median_slope_ * (at - xs[0])
            return single
        inside: np.ndarray = np.interp(at, xs, ys)
        lo = np.clip((ys[1] - ys[0]) / (xs[1] - xs[0]), self.min_slope, self.max_slope)
        hi = np.clip((ys[-1] - ys[-2]) / (xs[-1] - xs[-2]), self.min_slope, self.max_slope)
        below = ys[0] + lo * (at - xs[0])
        above = ys[-1] + hi * (at - xs[-1])
        result: np.ndarray = np.where(at < xs[0], below, np.where(at > xs[-1], above, inside))
        return result
