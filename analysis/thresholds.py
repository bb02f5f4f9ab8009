"""The guide's five thresholds re-derived from the data, in the guide's own terms.

Each threshold is a question about rank 1 ("is the fastest candidate a fused MEGAMOE
backend?"), asked of every workload the tree sends through it
(``analysis.threshold_checks``); one split is fitted to the answers along the tree's
axis, with a bootstrap interval, a verdict and a leave-one-model-out check
(``analysis.threshold_validation``). :func:`derive_guide_thresholds` does this for the
whole frame (pooled) and, when asked, per model, hardware or quant;
:func:`thresholds_from_check` turns a result into the tree's ``Thresholds``.

The pairwise crossover fit of two named options (``find_crossovers``) lives in
``analysis.threshold_pairwise`` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import noise as N
from analysis.derived import ensure_derived
from analysis.identity import Repeats, configuration_frame
from analysis.threshold_checks import (
    GUIDE_THRESHOLDS,
    TIE,
    GuideThreshold,
    threshold_points,
    workload_table,
)
from analysis.threshold_fit import DEFAULT_ALPHA, DEFAULT_RESAMPLES, DEFAULT_SEED
from analysis.threshold_pairwise import (
    DEFAULT_WORKLOAD_COLS,
    CrossoverResult,
    compare_options,
    find_crossovers,
    fit_split,
    option_label,
)
from analysis.threshold_validation import (
    AGREES,
    NOT_ENOUGH,
    VERDICTS,
    assess,
    interval_text,
)
from analysis.tree import Thresholds

__all__ = [
    "DEFAULT_WORKLOAD_COLS",
    "BREAKDOWNS",
    "CrossoverResult",
    "GuideCheck",
    "VERDICTS",
    "compare_options",
    "derive_guide_thresholds",
    "find_crossovers",
    "fit_split",
    "option_label",
    "thresholds_from_check",
]

BREAKDOWNS: tuple[str, ...] = (C.MODEL, C.HARDWARE, C.QUANT)


@dataclass(frozen=True)
class GuideCheck:
    """``table``: one row per threshold over the whole frame (columns: see
    :func:`derive_guide_thresholds`); ``groups``: the same fields per value of each
    requested breakdown (plus ``by`` and ``group``); ``evidence``: the votes of every
    check with a ``name`` column (see ``threshold_checks.threshold_points``); ``loo``:
    the leave-one-out rows of the pooled checks with a ``name`` column."""

    table: pd.DataFrame
    groups: pd.DataFrame
    evidence: pd.DataFrame
    loo: pd.DataFrame


def _slice_row(
    spec: GuideThreshold, points: pd.DataFrame, params: dict[str, Any], consistency: bool
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Every field of one check over one slice of its votes (and its LOO rows)."""
    votes = points[~points[TIE].to_numpy(dtype=bool)] if len(points) else points
    per_model: list[tuple[str, str]] = []
    models = sorted({str(m) for m in votes[C.MODEL].dropna()}) if len(votes) else []
    if consistency and len(models) >= 2:
        for m in models:
            part = votes[votes[C.MODEL].astype(str) == m]
            verdict = assess(part, spec.published, spec.x_above, **params)[1]["verdict"]
            per_model.append((m, verdict))
    verdicts = [v for _, v in per_model]
    loo_rows, row = assess(votes, spec.published, spec.x_above, model_verdicts=verdicts, **params)
    judged = [v for _, v in per_model if v != NOT_ENOUGH]
    row.update(
        n_workloads=row["n_points"],
        n_ties=int(len(points) - len(votes)),
        interval=interval_text(row["ci_lo"], row["ci_hi"]),
        n_models=len(models),
        n_models_judged=len(judged),
        n_models_agree=judged.count(AGREES),
        frac_models_agree=judged.count(AGREES) / len(judged) if judged else np.nan,
        model_verdicts="; ".join(f"{m}: {v}" for m, v in per_model),
    )
    return row, loo_rows


def _head(spec: GuideThreshold, ci_level: float) -> dict[str, Any]:
    return {
        "name": spec.name,
        "field": spec.name,
        "description": spec.description,
        "axis": spec.axis,
        "x_label": spec.x_label,
        "x_side": "above" if spec.x_above else "below",
        "option_below": spec.option_below,
        "option_above": spec.option_above,
        "published": spec.published,
        "ci_level": ci_level,
    }


def derive_guide_thresholds(
    df: pd.DataFrame,
    decode_threshold: float = 512,
    min_points: int = 3,
    min_accuracy: float = 0.75,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    alpha: float = DEFAULT_ALPHA,
    by: Sequence[str] = (),
    specs: Sequence[GuideThreshold] = GUIDE_THRESHOLDS,
    repeats: Repeats = "median",
    noise: N.NoiseModel | None = None,
) -> GuideCheck:
    """Re-derive each threshold of ``specs`` from ``df`` (any candidate frame; derived
    columns are added when missing, non-rankable rows ignored).

    ``table`` columns: name, field, description, axis (column name; its unit is the
    column's), x_label, x_side ("above": X is the tree's pick above the threshold),
    option_below / option_above, published, derived (NaN unless a switch lies inside the
    measured range in the expected orientation), bracket_lo / bracket_hi (NaN = open),
    ci_lo / ci_hi (the ``1 - alpha`` bootstrap interval, +-inf = open), interval (the same
    as text), ci_level, n_resamples, p_switch, p_reversed, status, n_points (= n_workloads,
    the votes), n_ties, n_axis_points, axis_min, axis_max, n_misclassified, accuracy,
    accuracy_published, n_models, n_models_judged, n_models_agree, frac_models_agree,
    model_verdicts, loo_unit, loo_n, loo_accuracy_derived, loo_accuracy_published,
    loo_n_worse, loo_helps, verdict, verdict_reason. ``decode_threshold`` bounds the
    ``small_world_size`` check's workloads (activated_tokens_per_rank <= it). ``by``:
    breakdown columns out of :data:`BREAKDOWNS` for ``groups``. Repeat runs of one
    configuration are first pooled by ``analysis.identity.configuration_frame``
    (``repeats``: median score, or the latest run), as the tree-agreement check does, so
    rank 1 is the fastest configuration, not the luckiest repeat. ``noise``: the noise
    model of ``df``'s runs (``analysis.noise.estimate_noise``); each vote then carries
    the probability that measurement noise alone decided it
    (``threshold_checks.threshold_points``' ``p_flip``), the bootstrap flips votes at
    that rate (``threshold_fit.bootstrap_brackets``), and ``noise_votes`` sums it.
    Deterministic."""
    unknown = [b for b in by if b not in BREAKDOWNS]
    if unknown:
        raise ValueError(f"unknown breakdown {unknown}; use {list(BREAKDOWNS)}")
    params = {
        "min_points": min_points,
        "min_accuracy": min_accuracy,
        "resamples": resamples,
        "seed": seed,
        "alpha": alpha,
    }
    d = configuration_frame(ensure_derived(df), repeats)
    workloads, rows, gid = workload_table(d)
    table, groups, evidence, loo = [], [], [], []
    for spec in specs:
        points = threshold_points(spec, workloads, rows, gid, decode_threshold, noise)
        fields, loo_rows = _slice_row(spec, points, params, consistency=True)
        table.append({**_head(spec, 1 - alpha), **fields})
        evidence.append(points.assign(name=spec.name))
        if len(loo_rows):
            loo.append(loo_rows.assign(name=spec.name))
        for col in by:
            for value in sorted({v for v in points[col].dropna()}, key=str):
                part = points[points[col] == value]
                fields, _ = _slice_row(spec, part, params, consistency=True)
                groups.append({"by": col, "group": value, **_head(spec, 1 - alpha), **fields})
    ev = pd.concat(evidence, ignore_index=True) if evidence else pd.DataFrame()
    return GuideCheck(
        pd.DataFrame(table),
        pd.DataFrame(groups),
        ev,
        pd.concat(loo, ignore_index=True) if loo else pd.DataFrame(),
    )


def _usable(row: dict[str, Any]) -> bool:
    return bool(np.isfinite(float(row["derived"])) and row["status"] in ("crossover", "noisy"))


def thresholds_from_check(
    check: GuideCheck | pd.DataFrame,
    base: Thresholds | None = None,
    names: Sequence[str] | None = None,
) -> Thresholds:
    """``base`` (published defaults when None) with each threshold replaced by its
    derived value where the data locate a switch in the guide's orientation (status
    crossover or noisy); ``names`` restricts which may be replaced. A derived attention-TP
    value also turns on ``use_attention_tp_crossover`` (the published tree never
    switches under attention TP)."""
    table = check.table if isinstance(check, GuideCheck) else check
    th = base or Thresholds()
    values: dict[str, Any] = {}
    for row in table.to_dict("records"):
        if (names is None or row["name"] in names) and _usable(row):
            values[row["field"]] = float(row["derived"])
    if "attention_tp_cutedsl_tokens_per_rank" in values:
        values["use_attention_tp_crossover"] = True
    return replace(th, **values)
