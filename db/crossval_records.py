"""What the cross-validation repository takes and returns: import results, outcome
records and the per-record result of an outcome write, plus the column lists callers
may rely on. No SQL here; :mod:`db.crossval` is the repository."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import pandas as pd

from analysis import crossval_columns as cc
from db.dialects import plain_scalar as _plain
from db.errors import Conflict
from db.schema_crossval import WORKLOAD_KEY_COLUMNS

# Columns of CrossvalRepository.outcomes(): the E2E values plus provenance.
OUTCOME_STORE_COLUMNS: tuple[str, ...] = (
    cc.WORKLOAD_ID,
    cc.TPS_DEPLOYED,
    cc.TPS_CANDIDATE,
    cc.TPS_CANDIDATE_PR,
    cc.TPS_DEPLOYED_PR,
    "source",
    "notes",
    "created_at",
    "updated_at",
)
# Columns a serving_workloads filter may name.
WORKLOAD_FILTER_COLUMNS: frozenset[str] = frozenset({cc.WORKLOAD_ID, *WORKLOAD_KEY_COLUMNS})

TPS_FIELDS = (cc.TPS_DEPLOYED, cc.TPS_CANDIDATE, cc.TPS_CANDIDATE_PR, cc.TPS_DEPLOYED_PR)


@dataclasses.dataclass(frozen=True)
class ServingImportResult:
    """What one ``import_serving`` call did.

    Counts describe the imported configs (entries = distinct (master file, entry),
    points, workloads = points x 2 phases, mappable workloads); ``n_new_workloads`` and
    ``n_updated_workloads`` count this call's writes (both 0 when ``already_existed``).
    """

    import_id: int
    content_hash: str
    source: str | None
    imported_at: dt.datetime
    already_existed: bool
    n_entries: int
    n_points: int
    n_workloads: int
    n_mappable: int
    n_new_workloads: int
    n_updated_workloads: int

    @property
    def n_unmappable(self) -> int:
        return self.n_workloads - self.n_mappable

    @property
    def n_existing_workloads(self) -> int:
        """Workloads of these configs that were already stored before this call."""
        return self.n_workloads - self.n_new_workloads


@dataclasses.dataclass(frozen=True)
class OutcomeRecord:
    """One end-to-end measurement of a Mismatch (see ``analysis.crossval.E2EOutcome``):
    tokens/s/user served with the deployed config and with the bench_moe candidate, each
    optionally re-run under perfect routing (the pair is compared like for like)."""

    workload_id: str
    tps_per_user_deployed: float
    tps_per_user_candidate: float
    tps_per_user_candidate_perfect_routing: float | None = None
    tps_per_user_deployed_perfect_routing: float | None = None
    source: str | None = None
    notes: str | None = None


OutcomeState = Literal["created", "already existed", "replaced"]


@dataclasses.dataclass(frozen=True)
class OutcomeWrite:
    workload_id: str
    state: OutcomeState


@dataclasses.dataclass(frozen=True)
class OutcomesResult:
    """Per record, in input order, what ``add_outcomes`` did."""

    items: tuple[OutcomeWrite, ...]

    def count(self, state: OutcomeState) -> int:
        return sum(1 for i in self.items if i.state == state)


class OutcomeConflict(Conflict):
    """An outcome for ``workload_id`` is stored with other values (``field`` differs)."""

    def __init__(self, workload_id: str, field: str, problem: str) -> None:
        super().__init__(field, problem)
        self.workload_id = workload_id


def import_result(row: Mapping[str, Any], *, already_existed: bool) -> ServingImportResult:
    """A ``serving_imports`` row as a result; a repeat reports no writes of its own."""
    return ServingImportResult(
        import_id=int(row["import_id"]),
        content_hash=str(row["content_hash"]),
        source=row["source"],
        imported_at=row["imported_at"],
        already_existed=already_existed,
        n_entries=int(row["n_entries"]),
        n_points=int(row["n_points"]),
        n_workloads=int(row["n_workloads"]),
        n_mappable=int(row["n_mappable"]),
        n_new_workloads=0 if already_existed else int(row["n_new_workloads"]),
        n_updated_workloads=0 if already_existed else int(row["n_updated_workloads"]),
    )


def iter_outcome_records(frame: pd.DataFrame) -> Iterable[dict[str, Any]]:
    """``CrossvalRepository.outcomes()`` rows as ``analysis.crossval.validate_outcome``
    input (plain Python scalars, NA as None)."""
    for rec in frame[[cc.WORKLOAD_ID, *TPS_FIELDS]].to_dict("records"):
        yield {k: _plain(v) for k, v in rec.items()}
