"""Pairwise crossover finding: where along an axis does option B start beating option A?

The guide's own thresholds are re-derived differently (``analysis.thresholds``: "rank 1
is X vs not X", which needs no point where both options were measured); this pairwise
fit stays for questions about two named options.

``find_crossovers`` is general. An *option* is a mapping column -> value (or a
list/tuple/set of accepted values), e.g. ``{"backend": "TRTLLM"}``. A *comparison point*
is one workload (``workload_cols`` plus the axis value); at each point the option's
score is the lowest score_ms among its rankable rows, and the point counts only when
both options were measured there. The winner has the lower score (exactly equal scores
are "tie" and do not vote); ``margin_pct`` = (loser - winner) / winner * 100.

Per group the winners, ordered by axis, are fitted with one split ("one option wins at
or below the split, the other above"): the split minimising misclassified points, over
both orientations (A-below is preferred on equal error). Several workloads may share an
axis value (models pooled); a split falls between distinct axis values. Ties between
equally good splits pick the middle one (lower middle). A crossover is reported only
when the best split beats "no switch" (one option everywhere) strictly. Status:
``crossover``; ``noisy`` (crossover whose accuracy = 1 - misclassified / n is below
``min_accuracy``); ``no_crossover`` (``dominant`` says who won); ``insufficient`` (fewer
than ``min_points`` voting points or one distinct axis value).

``bracket_lo``/``bracket_hi`` are the last axis value on the low side and the first on
the high side of the split; ``crossover`` is their geometric mean when ``log_axis``
(sweeps are powers of two, so the midpoint in log space) and both are > 0, else the
arithmetic mean. Consistency: the same fit per ``consistency_col`` value (model);
a model agrees with the pooled fit when both switch in the same orientation and the
crossovers are within a factor ``agree_factor`` (log axis) or within one pooled bracket
width (linear), or when neither switches and the same option dominates.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import as_float, rankable_mask

DEFAULT_WORKLOAD_COLS: tuple[str, ...] = C.WORKLOAD_KEYS
Option = Mapping[str, object]


@dataclass(frozen=True)
class CrossoverResult:
    """``crossovers``: one row per group (see ``find_crossovers``); ``evidence``: one row
    per comparison point: group + workload cols, ``axis_value``, ``a_score_ms``,
    ``b_score_ms``, ``winner`` (label or "tie"), ``margin_pct``."""

    crossovers: pd.DataFrame
    evidence: pd.DataFrame


def option_label(option: Option) -> str:
    """ "col=value" pairs joined by ", " (list values joined by "|")."""

    def fmt(v: object) -> str:
        return "|".join(map(str, v)) if isinstance(v, list | tuple | set | frozenset) else str(v)

    return ", ".join(f"{k}={fmt(v)}" for k, v in option.items())


def _option_mask(df: pd.DataFrame, option: Option) -> np.ndarray:
    m = np.ones(len(df), dtype=bool)
    for col, val in option.items():
        s = df[col]
        vals = list(val) if isinstance(val, list | tuple | set | frozenset) else [val]
        m &= s.isin(vals).fillna(False).to_numpy(dtype=bool)
    return m


def compare_options(
    df: pd.DataFrame,
    option_a: Option,
    option_b: Option,
    axis: str,
    group_cols: Sequence[str] = (),
    workload_cols: Sequence[str] = DEFAULT_WORKLOAD_COLS,
    labels: tuple[str, str] | None = None,
) -> pd.DataFrame:
    """Evidence frame (see ``CrossoverResult``), sorted by group, axis, workload."""
    la, lb = labels or (option_label(option_a), option_label(option_b))
    keys = list(dict.fromkeys([*group_cols, *workload_cols]))
    ok = rankable_mask(df) & np.isfinite(as_float(df[axis]))
    base = df.loc[ok, list(dict.fromkeys([*keys, C.SCORE_MS]))]
    base = base.assign(axis_value=as_float(df.loc[ok, axis]))
    gk = [*keys, "axis_value"]
    a = (
        base[_option_mask(df.loc[ok], option_a)]
        .groupby(gk, dropna=False, observed=True)[C.SCORE_MS]
        .min()
        .rename("a_score_ms")
    )
    b = (
        base[_option_mask(df.loc[ok], option_b)]
        .groupby(gk, dropna=False, observed=True)[C.SCORE_MS]
        .min()
        .rename("b_score_ms")
    )
    ev = pd.concat([a, b], axis=1, join="inner").reset_index()
    sa, sb = ev["a_score_ms"].to_numpy(float), ev["b_score_ms"].to_numpy(float)
    ev["winner"] = np.where(sa < sb, la, np.where(sb < sa, lb, "tie"))
    ev["margin_pct"] = np.abs(sa - sb) / np.minimum(sa, sb) * 100.0
    return ev.sort_values(
        [*group_cols, "axis_value", *workload_cols], kind="mergesort", na_position="last"
    ).reset_index(drop=True)


def fit_split(
    axis_values: np.ndarray,
    a_wins: np.ndarray,
    log_axis: bool = True,
    min_points: int = 3,
    min_accuracy: float = 0.75,
) -> dict[str, object]:
    """Fit one split to voting points (``a_wins`` True = A won). Returns status,
    orientation ("a_below"/"b_below"/None), dominant ("A"/"B"/None), bracket_lo,
    bracket_hi, crossover, n_points, n_axis_points, n_misclassified, accuracy,
    axis_min, axis_max. See the module docstring for the rule."""
    x = np.asarray(axis_values, dtype=float)
    w = np.asarray(a_wins, dtype=bool)
    u, inv = np.unique(x, return_inverse=True)
    n_a = np.bincount(inv, weights=w, minlength=len(u))
    n_b = np.bincount(inv, weights=~w, minlength=len(u))
    res: dict[str, object] = {
        "status": "insufficient",
        "orientation": None,
        "dominant": None,
        "bracket_lo": np.nan,
        "bracket_hi": np.nan,
        "crossover": np.nan,
        "n_points": int(len(x)),
        "n_axis_points": int(len(u)),
        "n_misclassified": 0,
        "accuracy": np.nan,
        "axis_min": float(u[0]) if len(u) else np.nan,
        "axis_max": float(u[-1]) if len(u) else np.nan,
    }
    if len(x) < min_points or len(u) < 2:
        return res
    ca, cb = np.cumsum(n_a), np.cumsum(n_b)
    ta, tb = ca[-1], cb[-1]
    k = np.arange(1, len(u))  # split after u[k-1]
    err_ab = cb[k - 1] + (ta - ca[k - 1])  # A below, B above
    err_ba = ca[k - 1] + (tb - cb[k - 1])  # B below, A above
    flat = min(ta, tb)
    best_ab, best_ba = err_ab.min(), err_ba.min()
    if min(best_ab, best_ba) >= flat:
        res.update(
            status="no_crossover",
            dominant="A" if ta >= tb else "B",
            n_misclassified=int(flat),
            accuracy=1 - flat / len(x),
        )
        return res
    orient, errs = ("a_below", err_ab) if best_ab <= best_ba else ("b_below", err_ba)
    tied = k[errs == errs.min()]
    split = int(tied[(len(tied) - 1) // 2])
    lo, hi = float(u[split - 1]), float(u[split])
    est = float(np.sqrt(lo * hi)) if log_axis and lo > 0 else (lo + hi) / 2
    acc = 1 - float(errs.min()) / len(x)
    res.update(
        status="crossover" if acc >= min_accuracy else "noisy",
        orientation=orient,
        bracket_lo=lo,
        bracket_hi=hi,
        crossover=est,
        n_misclassified=int(errs.min()),
        accuracy=acc,
    )
    return res


def _agrees(
    pooled: Mapping[str, object], model: Mapping[str, object], log_axis: bool, agree_factor: float
) -> bool:
    if pooled["status"] == "no_crossover" or model["status"] == "no_crossover":
        return bool(
            pooled["status"] == model["status"] == "no_crossover"
            and pooled["dominant"] == model["dominant"]
        )
    if pooled["orientation"] is None or pooled["orientation"] != model["orientation"]:
        return False
    p, m = float(pooled["crossover"]), float(model["crossover"])  # type: ignore[arg-type]
    if log_axis and p > 0 and m > 0:
        return bool(max(p, m) / min(p, m) <= agree_factor)
    width = float(pooled["bracket_hi"]) - float(pooled["bracket_lo"])  # type: ignore[arg-type]
    return abs(p - m) <= width


def find_crossovers(
    df: pd.DataFrame,
    option_a: Option,
    option_b: Option,
    axis: str,
    group_cols: Sequence[str] = (),
    workload_cols: Sequence[str] = DEFAULT_WORKLOAD_COLS,
    consistency_col: str | None = C.MODEL,
    log_axis: bool = True,
    min_points: int = 3,
    min_accuracy: float = 0.75,
    agree_factor: float = 2.0,
    labels: tuple[str, str] | None = None,
) -> CrossoverResult:
    """Crossover of option_a vs option_b along ``axis`` per ``group_cols``.

    ``crossovers`` columns: group_cols, option_a, option_b (labels), the ``fit_split``
    fields, label_below / label_above (who wins each side; None without a crossover),
    n_workloads (voting points), n_ties, n_models, n_models_crossover,
    model_crossover_min, model_crossover_max, model_spread (max/min ratio for log axes,
    max-min otherwise; NaN with < 2 per-model crossovers), frac_models_agree (over models
    with a non-insufficient fit; NaN when none). Order-independent.
    """
    la, lb = labels or (option_label(option_a), option_label(option_b))
    ev = compare_options(df, option_a, option_b, axis, group_cols, workload_cols, (la, lb))
    rows = []
    groups: list[tuple[tuple[Hashable, ...], pd.DataFrame]]
    if group_cols:
        groups = [
            (k if isinstance(k, tuple) else (k,), g)
            for k, g in ev.groupby(list(group_cols), sort=True, dropna=False)
        ]
    else:
        groups = [((), ev)]
    for key, g in groups:
        vote = g[g["winner"] != "tie"]
        pooled = fit_split(
            vote["axis_value"].to_numpy(),
            (vote["winner"] == la).to_numpy(),
            log_axis,
            min_points,
            min_accuracy,
        )
        row: dict[str, object] = dict(zip(group_cols, key, strict=True))
        row.update(option_a=la, option_b=lb, **pooled)
        below_a = pooled["orientation"] == "a_below"
        has = pooled["orientation"] is not None
        row["label_below"] = (la if below_a else lb) if has else None
        row["label_above"] = (lb if below_a else la) if has else None
        row["n_workloads"] = int(len(vote))
        row["n_ties"] = int(len(g) - len(vote))
        row.update(
            _consistency(
                vote, la, pooled, consistency_col, log_axis, min_points, min_accuracy, agree_factor
            )
        )
        rows.append(row)
    return CrossoverResult(pd.DataFrame(rows), ev)


def _consistency(
    vote: pd.DataFrame,
    la: str,
    pooled: Mapping[str, object],
    col: str | None,
    log_axis: bool,
    min_points: int,
    min_accuracy: float,
    agree_factor: float,
) -> dict[str, object]:
    out: dict[str, object] = {
        "n_models": 0,
        "n_models_crossover": 0,
        "model_crossover_min": np.nan,
        "model_crossover_max": np.nan,
        "model_spread": np.nan,
        "frac_models_agree": np.nan,
    }
    if col is None or col not in vote:
        return out
    fits = [
        fit_split(
            g["axis_value"].to_numpy(),
            (g["winner"] == la).to_numpy(),
            log_axis,
            min_points,
            min_accuracy,
        )
        for _, g in vote.groupby(col, sort=True, dropna=False)
    ]
    out["n_models"] = len(fits)
    xs = [float(f["crossover"]) for f in fits if f["status"] == "crossover"]  # type: ignore[arg-type]
    out["n_models_crossover"] = len(xs)
    if xs:
        out["model_crossover_min"], out["model_crossover_max"] = min(xs), max(xs)
        if len(xs) >= 2:
            out["model_spread"] = (
                max(xs) / min(xs) if log_axis and min(xs) > 0 else max(xs) - min(xs)
            )
    judged = [f for f in fits if f["status"] != "insufficient"]
    if judged and pooled["status"] in ("crossover", "no_crossover", "noisy"):
        out["frac_models_agree"] = sum(
            _agrees(pooled, f, log_axis, agree_factor) for f in judged
        ) / len(judged)
    return out
