"""Cross-validation reads: deployed serving configs against the bench_moe ranking.

The ledger (``analysis.crossval.ledger``) and the guide's summary table are computed on
request from the stored serving workloads and the stored successful candidates of the
same models and hardware, so they always reflect the latest uploads. ``GET
/api/v1/crossval/ledger`` and ``/summary`` call :func:`compute_ledger` and
:func:`summary_table`; the /crossval page calls :func:`crossval_view`, which is the same
two functions with the ledger cached per store version and serving-config import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis.crossval import DEFAULT_BAND_PCT, DEFAULT_TOKEN_TOLERANCE, ledger, outcomes_frame
from analysis.crossval import summary as summary_of
from db.crossval_records import iter_outcome_records
from db.store import Store
from service.frames import DashData

PHASES: tuple[str, ...] = ("prefill", "decode")
STATUSES: tuple[str, ...] = (cc.MATCH, cc.MISMATCH, cc.NO_DATA, cc.NOT_MAPPABLE)
# Accepted ranges, for the API's query parameters and the page's inputs alike.
TOL_RANGE: tuple[float, float] = (1.0, 1024.0)  # nearest num_tokens within this factor
BAND_RANGE: tuple[float, float] = (0.0, 100.0)  # ±band (%) within which an outcome is Flat

# Candidate columns the ledger reads (run columns always come with candidate_frame).
LEDGER_CANDIDATE_COLUMNS: tuple[str, ...] = (
    C.NUM_TOKENS, C.PARALLEL_MODE, C.ATTENTION_DP, C.CUDA_GRAPH, C.BACKEND,
    C.MOE_EP_SIZE, C.MOE_TP_SIZE, C.COMM, C.STATUS, C.SCORE_MS,
)  # fmt: skip
# Outcome columns joined onto the ledger (the stored end-to-end result, if any).
OUTCOME_EXTRA: tuple[str, ...] = (
    cc.OUTCOME,
    cc.CHANGE_PCT,
    cc.TPS_DEPLOYED,
    cc.TPS_CANDIDATE,
    cc.TPS_CANDIDATE_PR,
)
LEDGER_VIEW_COLUMNS: tuple[str, ...] = (*cc.LEDGER_COLUMNS, *OUTCOME_EXTRA)
_OUTCOME_PROVENANCE = ("source", "notes", "created_at", "updated_at")


# ------------------------------------------------------------------ store reads
def workload_filters(
    model: str | None, hardware: str | None, phase: str | None, mappable: bool | None = None
) -> dict[str, Any]:
    """Store filters for serving workloads (hardware upper-cased; None = any)."""
    return {
        C.MODEL: model,
        C.HARDWARE: hardware.upper() if hardware else None,
        cc.PHASE: phase,
        cc.MAPPABLE: mappable,
    }


@dataclass(frozen=True)
class WorkloadPage:
    """One page of stored workloads and how many match in all."""

    total: int
    items: pd.DataFrame


def workloads_page(store: Store, filters: dict[str, Any], limit: int, offset: int) -> WorkloadPage:
    """Stored serving workloads matching ``filters``, ``limit`` from ``offset`` (the
    store's order), with the total count."""
    total = store.crossval.serving_workload_count(filters)
    return WorkloadPage(
        total, store.crossval.serving_workloads(filters, limit=limit, offset=offset)
    )


def serving_imports(store: Store) -> pd.DataFrame:
    """Serving-config imports, newest first."""
    return store.crossval.serving_imports()


def compute_ledger(
    store: Store, filters: dict[str, Any], token_tolerance: float = DEFAULT_TOKEN_TOLERANCE
) -> pd.DataFrame:
    """``analysis.crossval.ledger`` over the stored workloads matching ``filters`` and the
    stored successful candidates of their models and hardware (no candidates read when
    no workload is mappable)."""
    workloads = store.crossval.serving_workloads(filters)
    ok = workloads[workloads[cc.MAPPABLE].fillna(False).astype(bool)]
    models = sorted({str(m) for m in ok[C.MODEL].dropna()})
    hardware = sorted({str(h) for h in ok[C.HARDWARE].dropna()})
    if models and hardware:
        candidates = store.candidate_frame(
            filters={C.MODEL: models, C.HARDWARE: hardware},
            success_only=True,
            columns=list(LEDGER_CANDIDATE_COLUMNS),
        )
    else:
        candidates = pd.DataFrame()
    return ledger(workloads, candidates, token_tolerance)


def outcome_table(store: Store, band_pct: float) -> pd.DataFrame:
    """Stored outcomes classified at ``band_pct`` (OUTCOME_COLUMNS + provenance)."""
    stored = store.crossval.outcomes()
    classified = outcomes_frame(iter_outcome_records(stored), band_pct)
    extra = stored[[cc.WORKLOAD_ID, *_OUTCOME_PROVENANCE]]
    return classified.merge(extra, on=cc.WORKLOAD_ID, how="left")


def summary_table(store: Store, ledger_df: pd.DataFrame, band_pct: float) -> pd.DataFrame:
    """The guide's table (``SUMMARY_COLUMNS``) of ``ledger_df`` with the stored outcomes
    classified at ``band_pct``."""
    return summary_of(ledger_df, outcome_table(store, band_pct), band_pct)


# ------------------------------------------------------------------ ledger views
def narrow(ledger_df: pd.DataFrame, phase: str | None, status: str | None) -> pd.DataFrame:
    """The ledger rows of one phase and one status (None: all), in ledger order."""
    out = ledger_df
    if phase:
        out = out[out[cc.PHASE] == phase]
    if status:
        out = out[out[cc.STATUS] == status]
    return out.reset_index(drop=True)


def ledger_view(
    ledger_df: pd.DataFrame, outcomes: pd.DataFrame, phase: str | None, status: str | None
) -> pd.DataFrame:
    """The ledger narrowed by phase and status, with the stored outcome (if any) of each
    workload joined on (``LEDGER_VIEW_COLUMNS``; outcome columns empty without one), in
    ledger order."""
    lg = narrow(ledger_df, phase, status)
    extra = (
        outcomes[[cc.WORKLOAD_ID, *OUTCOME_EXTRA]]
        if len(outcomes)
        else pd.DataFrame(columns=[cc.WORKLOAD_ID, *OUTCOME_EXTRA])
    )
    out = lg.merge(extra, on=cc.WORKLOAD_ID, how="left")
    for col in (cc.CHANGE_PCT, cc.TPS_DEPLOYED, cc.TPS_CANDIDATE, cc.TPS_CANDIDATE_PR):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("Float64")
    out[cc.OUTCOME] = out[cc.OUTCOME].astype(object)
    return out[list(LEDGER_VIEW_COLUMNS)].reset_index(drop=True)


@dataclass(frozen=True)
class ViewCounts:
    """What a ledger view holds: workloads, per status (``STATUSES`` order, zeros left
    out), how many use the nearest measured num_tokens and how many have an outcome."""

    total: int
    by_status: dict[str, int]
    nearest: int
    with_outcome: int


def view_counts(view: pd.DataFrame) -> ViewCounts:
    """:class:`ViewCounts` of a :func:`ledger_view` frame."""
    counts = view[cc.STATUS].value_counts()
    by_status = {s: int(counts.get(s, 0)) for s in STATUSES if counts.get(s, 0)}
    nearest = int(view[cc.NEAREST_TOKENS_USED].fillna(False).astype(bool).sum())
    return ViewCounts(len(view), by_status, nearest, int(view[cc.OUTCOME].notna().sum()))


# ------------------------------------------------------------------ the page's cached reads
def import_key(data: DashData) -> tuple[int, int]:
    """(imports, newest import id): changes with every serving-config import."""
    imports = data.store.crossval.serving_imports()
    newest = int(imports["import_id"].max()) if len(imports) else 0
    return len(imports), newest


def has_workloads(data: DashData) -> bool:
    """True once any serving workload is stored."""
    return data.store.crossval.serving_workload_count() > 0


def choices(data: DashData) -> tuple[list[str], list[str]]:
    """(models, hardware) of the stored workloads, sorted (unknown models left out)."""

    def load() -> tuple[list[str], list[str]]:
        w = data.store.crossval.serving_workloads()
        models = sorted({str(m) for m in w[C.MODEL].dropna()}) if len(w) else []
        hardware = sorted({str(h) for h in w[C.HARDWARE].dropna()}) if len(w) else []
        return models, hardware

    return data.cached(("crossval-choices", import_key(data)), load)


def cached_ledger(
    data: DashData, model: str | None, hardware: str | None, tol: float
) -> pd.DataFrame:
    """:func:`compute_ledger` of every stored workload of one model and hardware (None:
    all; every phase), cached per store version and serving-config import."""

    def load() -> pd.DataFrame:
        return compute_ledger(data.store, workload_filters(model, hardware, None), tol)

    return data.cached(("crossval-ledger", model, hardware, tol, import_key(data)), load)


@dataclass(frozen=True)
class CrossvalView:
    """What the /crossval page shows for one set of filters."""

    ledger: pd.DataFrame  # model/hardware scope, all phases and statuses
    view: pd.DataFrame  # ledger_view: the ledger grid's rows
    summary: pd.DataFrame  # SUMMARY_COLUMNS


def crossval_view(
    data: DashData,
    model: str | None = None,
    hardware: str | None = None,
    phase: str | None = None,
    status: str | None = None,
    tol: float = DEFAULT_TOKEN_TOLERANCE,
    band: float = DEFAULT_BAND_PCT,
) -> CrossvalView:
    """Ledger, narrowed view and summary of one model and hardware. Phase and status
    narrow the view only; the summary always splits prefill and decode. Outcomes are
    read every time (they are small and can be replaced in place)."""
    led = cached_ledger(data, model, hardware, tol)
    outcomes = outcome_table(data.store, band)
    view = ledger_view(led, outcomes, phase, status)
    return CrossvalView(led, view, summary_table(data.store, led, band))
