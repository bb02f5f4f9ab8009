"""One threshold along an axis, fitted to "rank 1 is X / is not X" votes, with a bootstrap.

The guide's thresholds are one-sided rules: "``axis <= t`` -> not X, else X" (X above,
e.g. the fused MEGAMOE backend above ``decode_megamoe_tokens_per_rank``) or "``axis <=
t`` -> X, else not X" (X below, e.g. TRTLLM up to ``small_world_size``). A *vote* is one
workload: its axis value and whether its rank-1 (fastest) candidate is X.

Fit (:func:`fit_counts`): the votes are counted per distinct axis value ``u[0] < ... <
u[U-1]``. A split ``k`` in ``0..U`` puts ``u[:k]`` on the low side and ``u[k:]`` on the
high side; ``k = 0`` and ``k = U`` are the "no switch inside the measured range" fits
(X everywhere / nowhere). The split minimising the misclassified votes of the expected
orientation wins; equally good splits resolve to the lower middle one, so a result does
not depend on row order. The threshold lies in the half-open *bracket* ``[lo, hi)`` with
``lo = u[k-1]`` (``-inf`` for ``k = 0``) and ``hi = u[k]`` (``+inf`` for ``k = U``):
every ``t`` in it classifies the measured votes identically under the tree's ``<=``.
The point estimate (``derived``) is the geometric mean of a finite bracket (sweeps are
powers of two: the midpoint in log space), the arithmetic mean when ``lo <= 0``, NaN when
the bracket is open. The *reversed* orientation's best error is reported too: when it is
lower, the data switch the other way round.

Bootstrap (:func:`bootstrap_brackets`): resampling the n votes with replacement is the
same as drawing the per-cell counts (axis value x X / not X) from a multinomial with the
observed proportions, so each of the ``B`` resamples costs ``O(U)``, not ``O(n)``. The
percentile interval of the threshold is ``[quantile_lower(lo_b, a/2),
quantile_higher(hi_b, 1 - a/2))``: it covers both the sampling spread and the sweep's
grid (a threshold is only located up to its bracket). A fixed seed makes it
deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 20260913  # the guide's sweep date; any fixed value keeps answers stable
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class Counts:
    """Votes per distinct axis value: ``u`` sorted ascending, ``n_x`` / ``n_not`` the
    number of workloads whose rank 1 is / is not X there."""

    u: np.ndarray
    n_x: np.ndarray
    n_not: np.ndarray

    @property
    def n(self) -> int:
        return int(self.n_x.sum() + self.n_not.sum())


@dataclass(frozen=True)
class SplitFit:
    """Best split of one orientation: ``k`` (0..U), the bracket ``[lo, hi)`` (open ends
    are -inf / +inf), ``derived`` (NaN when open), ``errors`` (misclassified votes),
    ``reversed_errors`` (best split of the opposite orientation) and ``accuracy``."""

    k: int
    lo: float
    hi: float
    derived: float
    errors: float
    reversed_errors: float
    accuracy: float

    @property
    def interior(self) -> bool:
        """A switch inside the measured range (both bracket ends finite)."""
        return bool(np.isfinite(self.lo) and np.isfinite(self.hi))


def count_votes(axis: np.ndarray, is_x: np.ndarray) -> Counts:
    """:class:`Counts` of the votes (NaN axis values are dropped)."""
    x = np.asarray(axis, dtype=float)
    w = np.asarray(is_x, dtype=bool)
    ok = np.isfinite(x)
    u, inv = np.unique(x[ok], return_inverse=True)
    n_x = np.bincount(inv, weights=w[ok], minlength=len(u))
    n_not = np.bincount(inv, weights=~w[ok], minlength=len(u))
    return Counts(u, n_x, n_not)


def _errors(n_x: np.ndarray, n_not: np.ndarray, x_above: bool) -> np.ndarray:
    """Misclassified votes of every split k = 0..U; rows are resamples (2-D input)."""
    zero = np.zeros((n_x.shape[0], 1))
    cx = np.concatenate([zero, np.cumsum(n_x, axis=1)], axis=1)
    cn = np.concatenate([zero, np.cumsum(n_not, axis=1)], axis=1)
    tx, tn = cx[:, -1:], cn[:, -1:]
    if x_above:  # X on the low side and not-X on the high side are wrong
        out: np.ndarray = cx + (tn - cn)
    else:
        out = cn + (tx - cx)
    return out


def _lower_middle(err: np.ndarray) -> np.ndarray:
    """Per row, the lower middle of the positions holding the row's minimum."""
    tied = err == err.min(axis=1, keepdims=True)
    target = (tied.sum(axis=1) - 1) // 2 + 1
    hit = tied & (np.cumsum(tied, axis=1) == target[:, None])
    out: np.ndarray = hit.argmax(axis=1)
    return out


def _brackets(u: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ext = np.concatenate([[-np.inf], u, [np.inf]])
    return ext[k], ext[k + 1]


def point_estimate(lo: float, hi: float) -> float:
    """Geometric mean of a finite positive bracket, arithmetic mean of a finite one
    reaching 0 or below, NaN when either end is open."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return float("nan")
    return float(np.sqrt(lo * hi)) if lo > 0 else (lo + hi) / 2


def fit_counts(c: Counts, x_above: bool) -> SplitFit:
    """The best split of the expected orientation (see module docstring). Without any
    vote: k = 0 with an open bracket on both sides and accuracy NaN."""
    if c.n == 0:
        nan = float("nan")
        return SplitFit(0, -np.inf, np.inf, nan, 0.0, 0.0, nan)
    err = _errors(c.n_x[None, :], c.n_not[None, :], x_above)
    rev = _errors(c.n_x[None, :], c.n_not[None, :], not x_above)
    k = int(_lower_middle(err)[0])
    lo, hi = _brackets(c.u, np.array([k]))
    best = float(err[0, k])
    return SplitFit(
        k,
        float(lo[0]),
        float(hi[0]),
        point_estimate(float(lo[0]), float(hi[0])),
        best,
        float(rev.min()),
        1.0 - best / c.n,
    )


@dataclass(frozen=True)
class Bootstrap:
    """``lo`` / ``hi``: the bracket of each resample; ``interior``: the resample
    switches inside the measured range; ``reversed_better``: the opposite orientation
    fits the resample strictly better."""

    lo: np.ndarray
    hi: np.ndarray
    interior: np.ndarray
    reversed_better: np.ndarray

    def interval(self, alpha: float = DEFAULT_ALPHA) -> tuple[float, float]:
        """Percentile interval ``[ci_lo, ci_hi)`` of the threshold (ends may be +-inf;
        NaN, NaN without resamples)."""
        if not len(self.lo):
            return float("nan"), float("nan")
        lo = float(np.quantile(self.lo, alpha / 2, method="lower"))
        hi = float(np.quantile(self.hi, 1 - alpha / 2, method="higher"))
        return lo, hi


def flip_rates(
    axis: np.ndarray, is_x: np.ndarray, p_flip: np.ndarray, u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct axis value ``u``: the mean flip probability of its X votes and of
    its not-X votes (0 for a cell without votes)."""
    a, x, p = np.asarray(axis, float), np.asarray(is_x, bool), np.asarray(p_flip, float)
    p = np.clip(np.nan_to_num(p, nan=0.0), 0.0, 1.0)
    at = np.searchsorted(u, a)
    out = []
    for side in (x, ~x):
        total = np.bincount(at[side], weights=p[side], minlength=len(u))
        count = np.bincount(at[side], minlength=len(u))
        out.append(np.divide(total, count, out=np.zeros(len(u)), where=count > 0))
    return out[0], out[1]


def bootstrap_brackets(
    c: Counts,
    x_above: bool,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    flips: tuple[np.ndarray, np.ndarray] | None = None,
) -> Bootstrap:
    """``resamples`` nonparametric bootstrap fits of ``c`` (multinomial cell counts,
    generator ``numpy.random.default_rng(seed)``). Empty ``c``: empty arrays.
    ``flips`` (:func:`flip_rates`): measurement noise on top of the resampling -- in
    each resample, each drawn vote of a cell turns to the other side with the cell's
    mean probability that noise alone decided it (binomial per cell), so a threshold
    resting on votes a re-run could reverse gets a wider interval."""
    n, u_count = c.n, len(c.u)
    if n == 0 or resamples <= 0:
        empty = np.zeros(0)
        return Bootstrap(empty, empty, empty.astype(bool), empty.astype(bool))
    p = np.concatenate([c.n_x, c.n_not]) / n
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, p / p.sum(), size=resamples)
    n_x, n_not = draws[:, :u_count].astype(float), draws[:, u_count:].astype(float)
    if flips is not None and (np.any(flips[0] > 0) or np.any(flips[1] > 0)):
        x_to_not = rng.binomial(n_x.astype(np.int64), flips[0])
        not_to_x = rng.binomial(n_not.astype(np.int64), flips[1])
        n_x, n_not = n_x - x_to_not + not_to_x, n_not + x_to_not - not_to_x
    err = _errors(n_x, n_not, x_above)
    rev = _errors(n_x, n_not, not x_above)
    k = _lower_middle(err)
    lo, hi = _brackets(c.u, k)
    best = err[np.arange(resamples), k]
    return Bootstrap(lo, hi, np.isfinite(lo) & np.isfinite(hi), rev.min(axis=1) < best)


def predict_x(axis: np.ndarray, threshold: float, x_above: bool) -> np.ndarray:
    """The tree's call per axis value: X above ``threshold`` (``axis > t``) or X up to
    it (``axis <= t``); ``t = +-inf`` gives "never" / "always"."""
    a = np.asarray(axis, dtype=float)
    out: np.ndarray = a > threshold if x_above else a <= threshold
    return out
