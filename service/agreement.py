"""How often the guide's tree picks what the measurements say is best, over a scope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.agreement import agreement_report
from service.frames import DashData
from service.scope import Scope, provenance, scoped_frame
from service.thresholds import ThresholdSource, derived_thresholds


@dataclass(frozen=True)
class AgreementTable:
    """``items``: one row per workload (``detail``) or per model x hardware x phase
    (summary); ``provenance``: the runs it was computed from."""

    items: pd.DataFrame
    detail: bool
    provenance: dict[str, Any]


def agreement_table(
    data: DashData,
    scope: Scope,
    detail: bool = False,
    thresholds: ThresholdSource = "published",
) -> AgreementTable:
    """``analysis.agreement.agreement_report`` over the scope's successful candidates,
    the tree walked with published or store-derived thresholds. Empty scope: an empty
    table."""
    df = scoped_frame(data, scope)
    if df.empty:
        return AgreementTable(pd.DataFrame(), detail, provenance(df))
    th = derived_thresholds(data) if thresholds == "derived" else None
    rows, summary = agreement_report(df, th)
    return AgreementTable(rows if detail else summary, detail, provenance(df))
