"""The guide's thresholds re-derived from the stored data, cached per store version.

One :class:`~analysis.thresholds.GuideCheck` per :class:`~service.frames.DashData`
(that is, per store) and store version: an upload or a delete re-derives it on the next
question. The API's ``/thresholds`` table, the ``thresholds=derived`` recommendation and
agreement answers, and the Recommend page's threshold table all read this one value.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

from analysis.thresholds import GuideCheck, derive_guide_thresholds, thresholds_from_check
from analysis.tree import Thresholds
from service.frames import DashData

ThresholdSource = Literal["published", "derived"]


def guide_check(data: DashData) -> GuideCheck:
    """The five published thresholds re-derived from every stored candidate (rankable
    rows only; see ``analysis.thresholds.derive_guide_thresholds``)."""
    return data.cached("guide_check", lambda: derive_guide_thresholds(data.all_frame()))


def derived_thresholds(data: DashData) -> Thresholds:
    """Tree thresholds with each re-derived value in place of the published one (the
    published value stays where the data decides nothing)."""
    return data.cached("derived_thresholds", lambda: thresholds_from_check(guide_check(data)))


def tree_thresholds(data: DashData, source: ThresholdSource) -> Thresholds:
    """The thresholds a tree walk uses: the guide's published ones, or derived ones."""
    return derived_thresholds(data) if source == "derived" else Thresholds()


def threshold_table(data: DashData, evidence: bool = False) -> pd.DataFrame:
    """Published vs derived, one row per threshold; with ``evidence`` the comparison
    points behind each derivation instead."""
    check = guide_check(data)
    return check.evidence if evidence else check.table
