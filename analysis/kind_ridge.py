"""The shape model's regressor: a ridge on configuration-kind-by-feature interactions
(:class:`KindRidge`), and the one ridge equal to a cross-conformal ensemble of them
(:func:`mean_ridge`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg, sparse
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
        common, kinds = self._blocks(x)
        out = np.zeros((len(x), common.shape[1] + kinds.shape[1]))
        out[:, : common.shape[1]] = common
        blocks = kinds.tocoo()  # (explicit zeros kept: a feature may be 0)
        out[blocks.row, common.shape[1] + blocks.col] = blocks.data
        return out

    def _blocks(self, x: np.ndarray) -> tuple[np.ndarray, sparse.csr_matrix]:
        """The design's two parts: the common slopes (dense, n x features) and the
        per-kind blocks (sparse: a row's own kind's block only, 1 and its features)."""
        code, f = x[:, 0].astype(int), x[:, 1:]
        n, nf = f.shape
        width = nf + 1
        known = np.flatnonzero(code < self.n_kinds)  # a kind the fit has not seen: no block
        start = np.clip(code[known], 0, self.n_kinds - 1) * width
        cols = (start[:, None] + np.arange(width)).ravel()
        vals = np.c_[np.ones(len(known)), f[known]].ravel()
        rows = np.repeat(known, width)
        kinds = sparse.csr_matrix((vals, (rows, cols)), shape=(n, self.n_kinds * width))
        return f * 10.0, kinds

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> KindRidge:
        """Ridge's closed form (its ``cholesky`` solver, what ``Ridge`` picks for this
        dense, tall design) from the design's Gram matrix, built from the dense common
        part and the sparse kind blocks: the n x (features + kinds x (features + 1))
        design (~88 MB at 30,000 rows of 60 kinds, once per cross-conformal fold) is
        never made. Equal to ``Ridge(alpha).fit(design)`` to rounding (tested). With
        sample weights: that ``Ridge`` on the dense design."""
        x = np.asarray(X, dtype=float)
        if sample_weight is not None or x.ndim != 2 or len(x) < 2:
            super().fit(self._design(x), y, sample_weight)
            return self
        yv = np.asarray(y, dtype=float).ravel()
        common, kinds = self._blocks(x)
        n, nc = common.shape
        mean_c = common.mean(axis=0)
        common -= mean_c  # centred: its cross terms with the kind blocks need no mean
        mean_k = np.asarray(kinds.mean(axis=0)).ravel()
        mean_y = float(yv.mean())
        yc = yv - mean_y
        p = nc + kinds.shape[1]
        gram = np.empty((p, p))
        gram[:nc, :nc] = common.T @ common
        cross = np.asarray(kinds.T @ common)
        gram[nc:, :nc] = cross
        gram[:nc, nc:] = cross.T
        gram[nc:, nc:] = (kinds.T @ kinds).toarray() - n * np.outer(mean_k, mean_k)
        rhs = np.r_[common.T @ yc, kinds.T @ yc]
        gram.flat[:: p + 1] += self.alpha
        coef = linalg.solve(gram, rhs, assume_a="pos", overwrite_a=True)
        self.coef_ = coef
        self.intercept_ = mean_y - float(np.r_[mean_c, mean_k] @ coef)
        self.n_features_in_ = p
        self.solver_ = "cholesky"
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
