"""Transitional: the cross-validation names under their old module path. The repository
is :class:`db.crossval.CrossvalRepository` (``store.crossval``), its records live in
:mod:`db.crossval_records`; import from there. The lead removes this module once no
call site uses it."""

from __future__ import annotations

from db.crossval import CrossvalRepository
from db.crossval_records import (
    OUTCOME_STORE_COLUMNS,
    WORKLOAD_FILTER_COLUMNS,
    OutcomeConflict,
    OutcomeRecord,
    OutcomesResult,
    OutcomeState,
    OutcomeWrite,
    ServingImportResult,
    iter_outcome_records,
)

__all__ = [
    "OUTCOME_STORE_COLUMNS",
    "WORKLOAD_FILTER_COLUMNS",
    "CrossvalRepository",
    "OutcomeConflict",
    "OutcomeRecord",
    "OutcomeState",
    "OutcomeWrite",
    "OutcomesResult",
    "ServingImportResult",
    "iter_outcome_records",
]
