"""The agreement page's slice: every stored workload where the guide's tree picks
something other than the measured best, with the regret of following the tree.

The rows are exactly those of ``service.agreement.agreement_table(detail=True)`` -- the
answer of ``GET /api/v1/agreement?detail=true`` for the same scope -- filtered to
``agrees == False`` (or kept whole with ``show="all"``); nothing is recomputed here, so
page and API give the same numbers (a parity test checks).

Regret: ``regret_pct = (pick_score_ms / best_score_ms - 1) * 100``, where the tree's
pick is the fastest measured configuration with the tree's backend, pure EP and the
tree's comm (see ``analysis.agreement``); empty when that configuration was not measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis.derived import as_float
from analysis.identity import Repeats
from service.agreement import agreement_table
from service.filenames import file_part
from service.frames import DashData
from service.scope import Scope
from service.thresholds import ThresholdSource

Show = Literal["disagree", "all"]
REGRET_PCT = "regret_pct"
REGRET_DEFINITION = (
    "regret (%) = (score of the tree's pick / score of the measured best − 1) × 100; the "
    "tree's pick is the fastest measured configuration with the tree's backend, pure EP "
    "and the tree's comm; empty when no such configuration was measured"
)


@dataclass(frozen=True)
class AgreementView:
    """``rows``: the workloads shown (detail rows, ``regret_pct`` included), sorted by
    regret descending (unmeasured picks last); counts over the whole scope."""

    rows: pd.DataFrame
    n_workloads: int
    n_disagree: int
    n_pick_measured: int
    median_regret_pct: float
    show: Show
    provenance: dict[str, Any]
    n_compared: int = 0  # workloads whose tree pick was measured (compared)
    n_agree: int = 0  # of those, where the tree agrees with the measured best

    @property
    def agreement_pct(self) -> float:
        """% of compared workloads that agree; NaN (N/A) when nothing was compared --
        the agreement API's ``agreement_pct``."""
        return 100.0 * self.n_agree / self.n_compared if self.n_compared else float("nan")


def with_regret_pct(items: pd.DataFrame) -> pd.DataFrame:
    """``items`` with ``regret_pct`` (100 x ``regret``) when the table lacks it."""
    if REGRET_PCT in items or "regret" not in items:
        return items
    return items.assign(**{REGRET_PCT: as_float(items["regret"]) * 100.0})


def disagreements(
    data: DashData,
    scope: Scope,
    thresholds: ThresholdSource = "published",
    show: Show = "disagree",
    repeats: Repeats = "median",
) -> AgreementView:
    """The scope's workloads where the tree disagrees with the measured best
    (``show="all"``: every workload), with counts and the median regret (%) over the
    disagreements whose pick was measured (NaN when none). Raises the service's
    InvalidQuery for an unknown routing label (``scope.dispatch``)."""
    ans = agreement_table(data, scope, detail=True, thresholds=thresholds, repeats=repeats)
    items = with_regret_pct(ans.items)
    if items.empty or "agrees" not in items:
        return AgreementView(items, 0, 0, 0, float("nan"), show, ans.provenance)
    agrees = items["agrees"].astype("boolean").fillna(False).to_numpy(bool)
    off = items.loc[~agrees]
    compared = (
        items["pick_measured"].astype("boolean").fillna(False).to_numpy(bool)
        if "pick_measured" in items
        else np.ones(len(items), bool)
    )
    regret = as_float(off[REGRET_PCT])
    measured = regret[np.isfinite(regret)]
    rows = items if show == "all" else off
    order = np.lexsort(
        (np.arange(len(rows)), -np.nan_to_num(as_float(rows[REGRET_PCT]), nan=-np.inf))
    )
    return AgreementView(
        rows=rows.iloc[order].reset_index(drop=True),
        n_workloads=int(len(items)),
        n_disagree=int(len(off)),
        n_pick_measured=int(len(measured)),
        median_regret_pct=float(np.median(measured)) if len(measured) else float("nan"),
        show=show,
        provenance=ans.provenance,
        n_compared=int(compared.sum()),
        n_agree=int((compared & agrees).sum()),
    )


def slice_filename(scope: Scope, thresholds: str, show: Show, repeats: str = "median") -> str:
    """``agreement_<disagreements|all>_<model>_<hardware>_<quant>_<phase>_<dispatch>
    _<thresholds>-thresholds[_latest-run].csv``, "all-..." for an unset filter."""
    parts = (
        "agreement",
        "disagreements" if show == "disagree" else "all",
        scope.model or "all-models",
        scope.hardware or "all-hardware",
        scope.quant or "all-quant",
        scope.phase or "all-phases",
        getattr(scope, "dispatch", None) or "default-routing",
        f"{thresholds}-thresholds",
        *(("latest-run",) if repeats == "latest" else ()),
    )
    return "_".join(file_part(p) for p in parts) + ".csv"
