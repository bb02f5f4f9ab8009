"""Uncertainty and validation of one re-derived threshold: bootstrap interval, verdict
rule, leave-one-model-out.

:func:`assess` fits the votes of one check (``analysis.threshold_fit``) and returns the
row fields: the bracket and derived value, the bootstrap percentile interval
``[ci_lo, ci_hi)`` (``resamples`` multinomial resamples of the votes, fixed ``seed``,
level ``1 - alpha``), the status, the in-sample accuracy of the derived and the published
value, and the verdict.

Status: ``insufficient`` (fewer than ``min_points`` votes or one axis value),
``reversed`` (the guide's orientation finds no switch while the opposite one does, with
fewer misclassified votes and accuracy >= ``min_accuracy``, in the full sample and in at
least half of the resamples), else
``crossover`` / ``noisy`` (a switch inside the measured range, accuracy >= / <
``min_accuracy``) or ``no_crossover`` (X everywhere or nowhere in the range).

Verdict rule (:data:`VERDICT_RULE`, shown on the page and in docs/thresholds.md) for the
published value p:

1. ``not enough data``: status insufficient, or the interval is open on both sides.
2. ``contradicts``: status reversed.
3. ``published is aggressive``: p < ci_lo (the tree leaves the low-side choice at smaller
   axis values than the data allow); ``published is conservative``: p >= ci_hi (it keeps
   the low-side choice longer).
4. p inside ``[ci_lo, ci_hi)`` but outside the measured axis range: ``not enough data``.
5. p inside the interval, but the leave-one-out check says the derived value predicts
   the held-out units better (``loo_helps``): aggressive when derived > p, else
   conservative. Sampling noise alone cannot reject p there, but generalisation does.
6. Slices holding several models: each model gets its own verdict; unless a strict
   majority of the models with a verdict other than "not enough data" agree, the pooled
   verdict is the one a strict majority of them share, else ``not enough data`` (the
   models disagree with each other).
7. Otherwise ``agrees``.

Leave-one-out (:func:`leave_one_out`): the held-out unit is the model (the hardware when
the slice has one model; nothing when it has one of each). For each unit with at least
``min_points`` votes, the threshold is fitted on the other units' votes (their derived
value; the published one when they show no switch inside their range, as the derived
tree would) and scored on the held-out votes against the published value: accuracy =
share of held-out votes the rule classifies right. ``loo_helps``: at least two units
evaluated, more held-out votes right in total than the published value gets, and no unit
worse.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.threshold_checks import AXIS_VALUE, IS_X, P_FLIP
from analysis.threshold_fit import (
    DEFAULT_ALPHA,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_brackets,
    count_votes,
    fit_counts,
    flip_rates,
    predict_x,
)
from analysis.tree_text import number

AGREES = "agrees"
CONSERVATIVE = "published is conservative"
AGGRESSIVE = "published is aggressive"
CONTRADICTS = "contradicts"
NOT_ENOUGH = "not enough data"
VERDICTS: tuple[str, ...] = (AGREES, CONSERVATIVE, AGGRESSIVE, CONTRADICTS, NOT_ENOUGH)
VERDICT_RULE = (
    "Each workload votes with its rank-1 (fastest) candidate: X (the tree's pick above the "
    "threshold) or not X. One threshold is fitted along the axis (fewest misclassified "
    "votes); its 95 % interval is a bootstrap percentile interval over workloads "
    "({resamples} resamples, fixed seed) of the bracket the threshold lies in. Leave one "
    "model out: fit on the other models, score the held-out model's votes. Verdict for the "
    "published value p: not enough data (fewer than {min_points} votes, one axis value, or "
    "no switch located); contradicts (rank 1 switches the other way round); published is "
    "aggressive (p below the interval: the tree switches earlier than the data allow); "
    "published is conservative (p at or above the interval's upper end: it switches "
    "later); p inside the interval but outside the measured range: not enough data; p "
    "inside the interval but the value fitted without each held-out model predicts every "
    "held-out model at least as well and more votes in total: aggressive or conservative "
    "by its side; agrees only when p lies inside the interval and, where the slice holds "
    "several models, a strict majority of the models' own verdicts agree (otherwise the "
    "verdict most models share, or not enough data when they split)."
)


def interval_text(lo: float, hi: float) -> str:
    """``[lo, hi)`` with open ends as ``(-∞`` / ``∞)``; "" when either end is NaN."""
    if np.isnan(lo) or np.isnan(hi):
        return ""
    left = f"[{number(lo)}" if np.isfinite(lo) else "(-∞"
    right = f"{number(hi)})" if np.isfinite(hi) else "∞)"
    return f"{left}, {right}"


def _status(
    n: int, n_axis: int, acc: float, interior: bool, rev: bool, min_points: int, min_acc: float
) -> str:
    if n < min_points or n_axis < 2:
        return "insufficient"
    if rev:
        return "reversed"
    if interior:
        return "crossover" if acc >= min_acc else "noisy"
    return "no_crossover"


def verdict(
    published: float,
    status: str,
    ci: tuple[float, float],
    axis_range: tuple[float, float],
    model_verdicts: Sequence[str] = (),
    loo_better: float | None = None,
) -> tuple[str, str]:
    """(verdict, reason in words) by the module's rule; ``model_verdicts`` are the
    per-model verdicts of a multi-model slice (empty for one model); ``loo_better`` is
    the derived value when the leave-one-out check says it predicts held-out units
    better than the published one (``loo_helps``), else None."""
    lo, hi = ci
    if status == "insufficient":
        return NOT_ENOUGH, "too few comparison points"
    if status == "reversed":
        return CONTRADICTS, "rank 1 switches the other way round along the axis"
    if not (np.isfinite(lo) or np.isfinite(hi)):
        return NOT_ENOUGH, "the data do not locate a switch"
    span = f"interval {interval_text(lo, hi)}"
    if published < lo:
        return AGGRESSIVE, f"published {number(published)} is below the {span}"
    if published >= hi:
        return CONSERVATIVE, f"published {number(published)} is at or above the {span}"
    if not axis_range[0] <= published <= axis_range[1]:
        return NOT_ENOUGH, "the sweeps do not reach the published value"
    if loo_better is not None and np.isfinite(loo_better):
        why = (
            f"inside the {span}, but fitted without each held-out unit the threshold "
            f"({number(loo_better)}) predicts every held-out unit at least as well as "
            f"{number(published)}, and more votes in total"
        )
        return (AGGRESSIVE if loo_better > published else CONSERVATIVE), why
    judged = [v for v in model_verdicts if v != NOT_ENOUGH]
    if len(judged) >= 2 and 2 * judged.count(AGREES) <= len(judged):
        common, count = Counter(v for v in judged if v != AGREES).most_common(1)[0]
        n_agree = judged.count(AGREES)
        why = f"inside the pooled {span}, but only {n_agree} of {len(judged)} models agree"
        return (common, why) if 2 * count > len(judged) else (NOT_ENOUGH, why)
    return AGREES, f"published {number(published)} is inside the {span}"


def assess(
    votes: pd.DataFrame,
    published: float,
    x_above: bool,
    min_points: int = 3,
    min_accuracy: float = 0.75,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    alpha: float = DEFAULT_ALPHA,
    model_verdicts: Sequence[str] = (),
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(leave-one-out rows, fields) of one check over ``votes`` (non-tie points with
    ``axis_value``, ``is_x`` and model / hardware): fit, interval, status, ``loo_*`` and
    verdict. Open interval ends are +-inf, open bracket ends NaN."""
    c = count_votes(votes[AXIS_VALUE].to_numpy(float), votes[IS_X].to_numpy(bool))
    fit = fit_counts(c, x_above)
    flips = None
    if P_FLIP in votes and len(votes):  # the noise model's: see threshold_points
        flips = flip_rates(
            votes[AXIS_VALUE].to_numpy(float),
            votes[IS_X].to_numpy(bool),
            votes[P_FLIP].to_numpy(float),
            c.u,
        )
    boot = bootstrap_brackets(c, x_above, resamples, seed, flips)
    ci = boot.interval(alpha)
    # Reversed only when the guide's orientation finds no switch at all: a window
    # (X at both ends) is a noisy switch, not a contradiction.
    rev_clean = c.n > 0 and not fit.interior and fit.reversed_errors < fit.errors
    rev_clean &= (1 - fit.reversed_errors / max(c.n, 1)) >= min_accuracy
    boot_rev = boot.reversed_better & ~boot.interior
    rev = bool(rev_clean and len(boot.lo) and boot_rev.mean() >= 0.5)
    status = _status(c.n, len(c.u), fit.accuracy, fit.interior, rev, min_points, min_accuracy)
    if status == "insufficient":  # an interval from two or three votes says nothing
        ci = (np.nan, np.nan)
    axis_range = (float(c.u[0]), float(c.u[-1])) if len(c.u) else (np.nan, np.nan)
    usable = fit.interior and status in ("crossover", "noisy")
    loo_rows, loo = leave_one_out(votes, published, x_above, min_points)
    better = fit.derived if usable and loo["loo_helps"] else None
    v, why = verdict(published, status, ci, axis_range, model_verdicts, better)
    x, is_x = votes[AXIS_VALUE].to_numpy(float), votes[IS_X].to_numpy(bool)
    acc_pub = float((predict_x(x, published, x_above) == is_x).mean()) if c.n else np.nan
    return loo_rows, {
        "derived": fit.derived if usable else np.nan,
        "bracket_lo": fit.lo if np.isfinite(fit.lo) else np.nan,
        "bracket_hi": fit.hi if np.isfinite(fit.hi) else np.nan,
        "ci_lo": ci[0],
        "ci_hi": ci[1],
        "n_resamples": int(len(boot.lo)),
        "p_switch": float(boot.interior.mean()) if len(boot.lo) else np.nan,
        "p_reversed": float(boot_rev.mean()) if len(boot.lo) else np.nan,
        # votes a re-run could reverse, as the noise model estimates (0 without one)
        "noise_votes": float(votes[P_FLIP].sum()) if P_FLIP in votes and len(votes) else 0.0,
        "status": status,
        "n_points": c.n,
        "n_axis_points": int(len(c.u)),
        "axis_min": axis_range[0],
        "axis_max": axis_range[1],
        "n_misclassified": int(fit.errors),
        "accuracy": fit.accuracy,
        "accuracy_published": acc_pub,
        **loo,
        "verdict": v,
        "verdict_reason": why,
    }


def loo_unit(votes: pd.DataFrame) -> str | None:
    """The held-out unit of a slice: model when it holds two or more, else hardware when
    it holds two or more, else None."""
    for col in (C.MODEL, C.HARDWARE):
        if col in votes and votes[col].nunique(dropna=True) >= 2:
            return col
    return None


def leave_one_out(
    votes: pd.DataFrame, published: float, x_above: bool, min_points: int = 3
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(one row per held-out unit, summary fields ``loo_*``); see the module docstring.
    Rows: held_out_by, held_out, n_points, train_points, fitted (threshold used),
    fitted_from ("derived"/"published"), accuracy_derived, accuracy_published."""
    unit = loo_unit(votes)
    summary: dict[str, Any] = {
        "loo_unit": unit,
        "loo_n": 0,
        "loo_accuracy_derived": np.nan,
        "loo_accuracy_published": np.nan,
        "loo_n_worse": 0,
        "loo_helps": False,
    }
    if unit is None:
        return pd.DataFrame(), summary
    rows, right_d, right_p, total = [], 0, 0, 0
    labels = votes[unit].astype(object).to_numpy()
    x, is_x = votes[AXIS_VALUE].to_numpy(float), votes[IS_X].to_numpy(bool)
    for held in sorted({v for v in labels if not pd.isna(v)}, key=str):
        out = labels == held
        train = count_votes(x[~out], is_x[~out])
        if out.sum() < min_points or train.n < min_points or len(train.u) < 2:
            continue
        fit = fit_counts(train, x_above)
        t = fit.derived if fit.interior else published
        d = int((predict_x(x[out], t, x_above) == is_x[out]).sum())
        p = int((predict_x(x[out], published, x_above) == is_x[out]).sum())
        n = int(out.sum())
        right_d, right_p, total = right_d + d, right_p + p, total + n
        rows.append(
            {
                "held_out_by": unit,
                "held_out": held,
                "n_points": n,
                "train_points": train.n,
                "fitted": t,
                "fitted_from": "derived" if fit.interior else "published",
                "accuracy_derived": d / n,
                "accuracy_published": p / n,
            }
        )
    table = pd.DataFrame(rows)
    if rows:
        worse = int((table["accuracy_derived"] < table["accuracy_published"]).sum())
        summary.update(
            loo_n=len(rows),
            loo_accuracy_derived=right_d / total,
            loo_accuracy_published=right_p / total,
            loo_n_worse=worse,
            loo_helps=bool(len(rows) >= 2 and right_d > right_p and worse == 0),
        )
    return table, summary
