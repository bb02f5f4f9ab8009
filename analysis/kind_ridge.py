"""The shape model's regressor: a ridge on configuration-kind-by-feature interactions
(:class:`KindRidge`), and the one ridge equal to a cross-conformal ensemble of them
(:func:`mean_ridge`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.linear_model import Ridge

ALPHA = 1.0  # ridge shrinkage of the kind-by-feature terms (features are O(1) logs)


class KindRidge(Ridge):  # type: ignore[misc]
    """``Ridge`` on kind-by-feature interactions: ``X`` column 0 is the kind's integer
    code, the rest the features; a kind the fit has not seen uses the common terms."""

    def __init__(self, alpha: float = ALPHA, n_kinds: int = 1) -> None:
        # the design is made per call and owned here: centred in place, not copied
        super().__init__(alpha=alpha, copy_X=False)
        self.n_kinds = n_kinds

    def _design(self, X: Any) -> np.ndarray:
        """Columns: the features x 10 (common slopes, barely shrunk), then per kind its
        intercept and its slopes (the row's own kind's block holds 1 and its features,
        the others 0). Written into one array (a 30,000-row design of 60 kinds is 88 MB:
        no intermediate of the same size)."""
        x = np.asarray(X, dtype=float)
        code, f = x[:, 0].astype(int), x[:, 1:]
        n, nf = f.shape
        width = nf + 1
        out = np.zeros((n, nf + self.n_kinds * width))
        out[:, :nf] = f * 10.0
        known = np.flatnonzero(code < self.n_kinds)  # a kind the fit has not seen: no block
        start = nf + np.clip(code[known], 0, self.n_kinds - 1) * width
        out[known, start] = 1.0
        for j in range(nf):
            out[known, start + 1 + j] = f[known, j]
        return out

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> KindRidge:
        super().fit(self._design(X), y, sample_weight)
        return self

    def predict(self, X: Any) -> np.ndarray:
        out: np.ndarray = super().predict(self._design(X))
        return out


def mean_ridge(mapie: Any) -> tuple[np.ndarray, float] | None:
    """The coefficients and intercept of the one ridge whose prediction is the
    cross-conformal model's point prediction: that prediction is the mean over training
    rows of the estimator fitted without each row's group (MAPIE's mean aggregation),
    so, the estimators being linear, the weighted mean of their coefficients (weights:
    the share of rows each left out). One design-matrix product instead of one per
    estimator and a test x train matrix (the hot path of answers far from the store).
    None where the fitted MAPIE model does not expose its estimators."""
    inner = getattr(mapie, "_mapie_regressor", None)
    ensemble = getattr(inner, "estimator_", None)
    k, fitted = getattr(ensemble, "k_", None), getattr(ensemble, "estimators_", None)
    if k is None or not fitted or getattr(ensemble, "agg_function", None) != "mean":
        return None
    mask = np.nan_to_num(np.asarray(k, float), nan=0.0)
    share = (mask / mask.sum(axis=1, keepdims=True)).mean(axis=0)
    coef = sum(w * np.asarray(e.coef_, float) for w, e in zip(share, fitted, strict=True))
    intercept = float(sum(w * float(e.intercept_) for w, e in zip(share, fitted, strict=True)))
    return np.asarray(coef, float), intercept
