"""Storing end-to-end outcomes: the one write path of the API and the CLI.

:func:`add_outcomes` refuses an empty batch, invalid values (NaN, Infinity, <= 0, not a
number: ``analysis.crossval_outcomes.validate_outcome``) and outcomes for workloads the
exact rule calls a Match (an outcome measures a Mismatch's candidate against the
deployed config; for a Match they are the same config) - all as ``ValueError`` naming
``records[i].<field>`` - before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis import crossval_columns as cc
from db.crossval_records import OutcomeRecord, OutcomesResult
from db.crossval_writes import outcome_record
from db.store import Store
from service.crossval import full_ledger


def add_outcomes(
    store: Store, records: Sequence[OutcomeRecord | Mapping[str, Any]], replace: bool = False
) -> OutcomesResult:
    """Validate and store a batch of outcomes (all or none; see the module doc). Other
    errors are those of ``store.crossval.add_outcomes`` (NotFound, OutcomeConflict)."""
    if not records:
        raise ValueError("records: at least one outcome is required, got an empty list")
    checked = [outcome_record(i, r) for i, r in enumerate(records)]
    led = full_ledger(store)
    status = dict(zip(led[cc.WORKLOAD_ID], led[cc.STATUS], strict=True))
    for i, r in enumerate(checked):
        if status.get(r.workload_id) == cc.MATCH:
            raise ValueError(
                f"records[{i}].workload_id: {r.workload_id!r} is a Match (exact rule): the "
                "deployed config is the bench_moe best, so there is no candidate to serve; "
                "outcomes are for Mismatch workloads"
            )
    return store.crossval.add_outcomes(checked, replace=replace)
