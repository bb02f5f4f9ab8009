"""One run for the Run page: its metadata, its candidates and one candidate's fields.

Every function answers None for a run (or candidate) the store does not hold, so pages
need not know the store's error types.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import columns as C
from db.errors import NotFound
from service.frames import DashData


def run_detail(data: DashData, run_id: int) -> dict[str, Any] | None:
    """Every stored field of run ``run_id`` with its upload's metadata and decoded JSON
    blocks (``Store.get_run``); None when the run does not exist."""
    try:
        return data.store.get_run(run_id)
    except NotFound:
        return None


def run_candidates(
    data: DashData, run_id: int, status: str | None, limit: int
) -> tuple[pd.DataFrame, int] | None:
    """(the first ``limit`` candidates of the run by candidate_index, optionally of one
    ``status`` only; how many match in all); None when the run does not exist."""
    filters = {C.STATUS: status} if status else None
    try:
        page = data.store.list_candidates(run_id, filters=filters, limit=limit)
    except NotFound:
        return None
    return page.items, page.total


def candidate_fields(data: DashData, run_id: int, candidate_index: int) -> dict[str, Any] | None:
    """Every stored field of one candidate (JSON blobs as stored text); None when the run
    or the candidate does not exist."""
    try:
        page = data.store.list_candidates(
            run_id, filters={C.CANDIDATE_INDEX: candidate_index}, limit=1
        )
    except NotFound:
        return None
    if page.items.empty:
        return None
    fields: dict[str, Any] = page.items.iloc[0].to_dict()
    return fields
