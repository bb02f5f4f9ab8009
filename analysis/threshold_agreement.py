"""The tree with published, derived and validated thresholds, side by side.

Three threshold sets are compared on the same workloads with
``analysis.agreement.agreement_report`` (agreement % and regret per model x hardware x
phase):

* ``published``: the guide's values;
* ``derived``: every value the data locate (``thresholds.thresholds_from_check``);
* ``validated``: derived only where validation says it helps, published elsewhere.

A threshold is a *candidate* for the validated set when its verdict is "published is
conservative" or "published is aggressive" (the data reject the published value), the
leave-one-out check says the derived value predicts held-out models better
(``loo_helps``) and a derived value exists. Candidates are tried one at a time in the
guide's order; one is kept only if, with it (and the ones kept before), no model x
hardware x phase group's agreement % falls below its value under the published
thresholds. So the validated tree is never worse than the published one on any group of
the data it was checked on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.agreement import agreement_report, agreement_summary, workload_configs
from analysis.capabilities import measured_capabilities, measured_mnnvl
from analysis.derived import add_derived
from analysis.threshold_validation import AGGRESSIVE, CONSERVATIVE
from analysis.thresholds import GuideCheck, thresholds_from_check
from analysis.tree import Thresholds

SETS: tuple[str, ...] = ("published", "derived", "validated")
GROUP_COLS: tuple[str, ...] = (C.MODEL, C.HARDWARE, C.PHASE)
_METRICS: tuple[str, ...] = ("n_agree", "agreement_pct", "median_regret_pct", "mean_regret_pct")


@dataclass(frozen=True)
class TreeComparison:
    """``thresholds``: the three sets by name; ``summary``: one row per model x hardware x
    phase with n_workloads and, per set s, n_agree_s, agreement_pct_s (of measured
    picks), median_regret_pct_s, mean_regret_pct_s (regret in %); ``overall``: one row per set
    over all workloads; ``decisions``: one row per threshold (name, published, derived,
    verdict, loo_helps, candidate, used, reason)."""

    thresholds: dict[str, Thresholds]
    summary: pd.DataFrame
    overall: pd.DataFrame
    decisions: pd.DataFrame


def _summary(
    cfg: pd.DataFrame, th: Thresholds, mnnvl: Mapping[str, int]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    detail, summary = agreement_report(cfg, th, GROUP_COLS, mnnvl=mnnvl)
    return summary, _overall(detail)


def _overall(detail: pd.DataFrame) -> pd.DataFrame:
    # the same definitions as analysis.agreement.agreement_summary (one overall row)
    overall = agreement_summary(detail, ())
    return overall[["n_workloads", *_METRICS]]


def _worst_drop(base: pd.DataFrame, trial: pd.DataFrame) -> tuple[float, str]:
    """Largest agreement-% fall of any group from ``base`` to ``trial`` and its name."""
    keys = list(GROUP_COLS)
    m = base[[*keys, "agreement_pct"]].merge(
        trial[[*keys, "agreement_pct"]], on=keys, suffixes=("_base", "_trial")
    )
    if m.empty:
        return 0.0, ""
    drop = (m["agreement_pct_base"] - m["agreement_pct_trial"]).to_numpy(float)
    i = int(np.nanargmax(drop))
    r = m.iloc[i]
    where = (
        f"{r[C.MODEL]} x {r[C.HARDWARE]} x {r[C.PHASE]} "
        f"({r['agreement_pct_base']:.1f} % -> {r['agreement_pct_trial']:.1f} %)"
    )
    return float(drop[i]), where


def _reason(row: dict[str, Any]) -> str:
    if row["verdict"] not in (CONSERVATIVE, AGGRESSIVE):
        return f"kept published: verdict {row['verdict']}"
    if not row["loo_helps"]:
        return "kept published: the leave-one-out check does not show the derived value helping"
    return "kept published: no derived value inside the measured range"


def compare_trees(
    df: pd.DataFrame, check: GuideCheck, base: Thresholds | None = None
) -> TreeComparison:
    """The three threshold sets for ``check`` and their agreement on ``df`` (the
    candidates ``check`` was derived from); see the module docstring."""
    published = base or Thresholds()
    derived = thresholds_from_check(check, published)
    # every tree is compared on the same configurations: repeats pooled once, and the
    # MNNVL the slice's own measurements prove (what agreement_report of df derives)
    df = add_derived(df) if C.PHASE not in df else df
    mnnvl = measured_mnnvl(measured_capabilities(df))
    cfg = workload_configs(df)
    pub_summary, pub_overall = _summary(cfg, published, mnnvl)
    validated, decisions = published, []
    val_summary, val_overall = pub_summary, pub_overall
    for row in check.table.to_dict("records"):
        one = thresholds_from_check(check.table[check.table["name"] == row["name"]], published)
        has_value = getattr(one, row["field"]) != getattr(published, row["field"])
        candidate = bool(
            row["verdict"] in (CONSERVATIVE, AGGRESSIVE) and row["loo_helps"] and has_value
        )
        used, reason = False, _reason(row)
        if candidate:
            trial = thresholds_from_check(
                check.table[check.table["name"] == row["name"]], validated
            )
            summary, overall = _summary(cfg, trial, mnnvl)
            drop, where = _worst_drop(pub_summary, summary)
            if drop > 1e-9:
                reason = f"kept published: the derived value lowers agreement on {where}"
            else:
                used, reason = (
                    True,
                    "derived: the data reject the published value and it generalises",
                )
                validated, val_summary, val_overall = trial, summary, overall
        decisions.append(
            {
                "name": row["name"],
                "published": row["published"],
                "derived": row["derived"],
                "verdict": row["verdict"],
                "loo_helps": bool(row["loo_helps"]),
                "candidate": candidate,
                "used": used,
                "reason": reason,
            }
        )
    der_summary, der_overall = _summary(cfg, derived, mnnvl)
    keys = list(GROUP_COLS)
    merged = pub_summary[[*keys, "n_workloads"]]
    overall = []
    for name, summary, total in (
        ("published", pub_summary, pub_overall),
        ("derived", der_summary, der_overall),
        ("validated", val_summary, val_overall),
    ):
        part = summary[[*keys, *_METRICS]].rename(columns={m: f"{m}_{name}" for m in _METRICS})
        merged = merged.merge(part, on=keys, how="left")
        overall.append(total.assign(thresholds=name))
    return TreeComparison(
        {"published": published, "derived": derived, "validated": validated},
        merged,
        pd.concat(overall, ignore_index=True)[
            [
                "thresholds",
                "n_workloads",
                "n_agree",
                "agreement_pct",
                "median_regret_pct",
                "mean_regret_pct",
            ]
        ],
        pd.DataFrame(decisions),
    )
