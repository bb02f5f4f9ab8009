"""How often the guide's tree picks what the measurements say is best, over a scope.

The agreement API and the Recommend page's "the data agrees" both read
:func:`agreement_table` (the page through :func:`workload_agreement`, one row of it), so
they compare the same thing: backend **and** comm, on configurations (repeats
combined per ``repeats``) of one routing pattern (``service.scope.routed_frame``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis.agreement import agreement_report
from analysis.identity import Repeats
from analysis.tables import plain_value
from service.capabilities import mnnvl_proven
from service.frames import DashData
from service.scope import Routing, Scope, provenance, routed_frame
from service.thresholds import ThresholdSource, tree_thresholds


@dataclass(frozen=True)
class AgreementTable:
    """``items``: one row per workload (``detail``) or per model x hardware x phase
    (summary); ``provenance``: the runs it was computed from; ``routing``: the routing
    pattern compared; ``repeats``: how repeat runs were combined."""

    items: pd.DataFrame
    detail: bool
    provenance: dict[str, Any]
    routing: Routing | None = None
    repeats: str = "median"


def _report(
    data: DashData, scope: Scope, thresholds: ThresholdSource, repeats: Repeats
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, Routing]:
    mnnvl = mnnvl_proven(data)

    def compute() -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, Routing]:
        # the whole answer is cached: the scope's rows are masked once per version
        df, routing = routed_frame(data, scope)
        if df.empty:
            return provenance(df), pd.DataFrame(), pd.DataFrame(), routing
        th = None if thresholds == "published" else tree_thresholds(data, thresholds)
        detail, summary = agreement_report(df, th, repeats=repeats, mnnvl=mnnvl)
        return provenance(df), detail, summary, routing

    # derived or validated thresholds come from every cell: keyed on the whole store
    where = scope.filters() if thresholds == "published" else None
    # MNNVL proven anywhere in the store walks the tree: part of the key
    key = ("agreement", scope.key(), thresholds, repeats, tuple(sorted(mnnvl.items())))
    return data.cached(key, compute, where=where)


def agreement_table(
    data: DashData,
    scope: Scope,
    detail: bool = False,
    thresholds: ThresholdSource = "published",
    repeats: Repeats = "median",
) -> AgreementTable:
    """``analysis.agreement.agreement_report`` over the scope's successful candidates of
    one routing pattern, the tree walked with published, derived or validated
    thresholds. Empty scope: an empty table. Cached per scope and store version."""
    prov, rows, summary, routing = _report(data, scope, thresholds, repeats)
    return AgreementTable(rows if detail else summary, detail, prov, routing, repeats)


def workload_agreement(
    data: DashData,
    scope: Scope,
    num_tokens: int,
    thresholds: ThresholdSource = "published",
    repeats: Repeats = "median",
) -> dict[str, Any] | None:
    """The :func:`agreement_table` detail row of the workload at ``num_tokens`` in
    ``scope`` (one model, hardware, quant, world size, attention, phase and routing
    pattern) as plain values; None when that workload has no row."""
    _, rows, _, _ = _report(data, scope, thresholds, repeats)
    if rows.empty:
        return None
    hit = rows[rows[C.NUM_TOKENS].to_numpy(dtype=float) == num_tokens]
    if hit.empty:
        return None
    return {k: plain_value(v) for k, v in hit.iloc[0].to_dict().items()}
