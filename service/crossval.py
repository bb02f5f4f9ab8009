"""Cross-validation reads: deployed serving configs against the bench_moe ranking.

The ledger (``analysis.crossval.ledger``) of every stored workload is computed once per
input version - the stored runs (count, newest id), the serving-config imports (count,
newest id) and the token tolerance - and stored (``store.crossval.store_ledger``): at
``import-serving`` time, in the background after a sweep upload
(``service.crossval_refresh``), else on the first read. Every read (API, page, CLI) goes
through :func:`compute_ledger`, which filters that stored ledger, then applies a match
rule (``analysis.crossval_rules``). ``GET /api/v1/crossval/ledger`` and ``/summary`` call
:func:`compute_ledger` and :func:`summary_table`; the /crossval page calls
``service.crossval_page.crossval_view``, the same functions over the same stored ledger
(the page may show the previous one, marked, while a refresh runs).
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis.crossval import DEFAULT_TOKEN_TOLERANCE, ledger, outcomes_frame
from analysis.crossval import summary as summary_of
from analysis.crossval_fit import GuideFit, guide_fit
from analysis.crossval_guide import compare
from analysis.crossval_rules import DEFAULT_NOISE_PCT, DEFAULT_RULE, RULES, apply_rule, match_flags
from analysis.crossval_sweeps import row_command
from db.crossval_records import iter_outcome_records
from db.dialects import plain_scalar
from db.store import Store
from service import foreground
from service.lru import LRU

PHASES: tuple[str, ...] = ("prefill", "decode")
STATUSES: tuple[str, ...] = (cc.MATCH, cc.MISMATCH, cc.NO_DATA, cc.NOT_MAPPABLE)
# Accepted ranges, for the API's query parameters and the page's inputs alike.
TOL_RANGE: tuple[float, float] = (1.0, 1024.0)  # nearest num_tokens within this factor
BAND_RANGE: tuple[float, float] = (0.0, 100.0)  # ±band (%) within which an outcome is Flat
NOISE_RANGE: tuple[float, float] = (0.0, 100.0)  # rule within_noise: gap (%) still a Match

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
    cc.TPS_DEPLOYED_PR,
)
LEDGER_VIEW_COLUMNS: tuple[str, ...] = (*cc.LEDGER_COLUMNS, *cc.RULED_COLUMNS, *OUTCOME_EXTRA)
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
    store: Store,
    filters: dict[str, Any],
    token_tolerance: float = DEFAULT_TOKEN_TOLERANCE,
    rule: str = DEFAULT_RULE,
    noise_pct: float = DEFAULT_NOISE_PCT,
    base: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The stored ledger (:func:`full_ledger`, or ``base`` when the caller holds it)
    narrowed to ``filters`` (model, hardware, phase, mappable), with ``rule`` applied
    (``apply_rule``: status, cause, reason and the bench_moe command of every "no data"
    row). Ledger order = workload order."""
    led = full_ledger(store, token_tolerance) if base is None else base
    return apply_rule(narrow_filters(led, filters), rule, noise_pct, row_command)


def narrow_filters(led: pd.DataFrame, filters: dict[str, Any]) -> pd.DataFrame:
    """Rows of ``led`` matching ``workload_filters`` output (None = any)."""
    keep = pd.Series(True, index=led.index)
    for col in (C.MODEL, C.HARDWARE, cc.PHASE):
        if filters.get(col) is not None:
            keep &= led[col].astype("string").fillna("") == str(filters[col])
    if filters.get(cc.MAPPABLE) is not None:
        keep &= (led[cc.STATUS] != cc.NOT_MAPPABLE) == bool(filters[cc.MAPPABLE])
    return led[keep].reset_index(drop=True)


def ledger_key(store: Store, token_tolerance: float) -> str:
    """The stored ledger's input version: runs (count, newest id), serving imports
    (count, newest id), token tolerance."""
    page = store.list_runs(limit=1)
    newest = int(page.items[C.RUN_ID].iloc[0]) if len(page.items) else 0
    imports = store.crossval.serving_imports()
    latest = int(imports["import_id"].max()) if len(imports) else 0
    return key_for((page.total, newest), (len(imports), latest), token_tolerance)


def key_for(runs: tuple[int, int], imports: tuple[int, int], token_tolerance: float) -> str:
    """:func:`ledger_key` from (runs, newest run id) and (imports, newest import id)."""
    return f"runs={runs[0]}:{runs[1]}|imports={imports[0]}:{imports[1]}" + tol_suffix(
        token_tolerance
    )


def tol_suffix(token_tolerance: float) -> str:
    """How every ledger key of one token tolerance ends."""
    return f"|tol={token_tolerance!r}"


# Ledgers of other token tolerances than the default: computed for the asker, kept in
# this process only (a few), never written -- an anonymous read must not cost the shared
# database a ~10 MB write per new value it sends.
_UNSTORED: weakref.WeakKeyDictionary[Store, LRU] = weakref.WeakKeyDictionary()


def full_ledger(store: Store, token_tolerance: float = DEFAULT_TOKEN_TOLERANCE) -> pd.DataFrame:
    """The exact-rule ledger of every stored workload: read from the store when stored
    for the current :func:`ledger_key`, else computed (:func:`build_ledger`). The
    default tolerance's is then stored (the one ledger every replica and the background
    refresh share); another tolerance's is kept in this process, not stored."""
    key = ledger_key(store, token_tolerance)
    rows = store.crossval.stored_ledger(key)
    if rows is not None:
        return ledger_frame(rows)
    if token_tolerance != DEFAULT_TOKEN_TOLERANCE:
        kept = _UNSTORED.setdefault(store, LRU(4))
        return kept.get(key, lambda: build_ledger(store, {}, token_tolerance))
    return refresh_ledger(store, token_tolerance)


def refresh_ledger(store: Store, token_tolerance: float = DEFAULT_TOKEN_TOLERANCE) -> pd.DataFrame:
    """Compute the ledger of every stored workload and store it under the current key."""
    key = ledger_key(store, token_tolerance)
    start = time.perf_counter()
    led = build_ledger(store, {}, token_tolerance)
    ms = (time.perf_counter() - start) * 1000
    foreground.step_aside()  # in the background refresh: a page view first
    # other tolerances' ledgers stay (a few): a page with a custom tolerance does not
    # push the default one out
    store.crossval.store_ledger(
        key, ledger_records(led), ms, supersedes=tol_suffix(token_tolerance)
    )
    return led


def ledger_records(led: pd.DataFrame) -> list[dict[str, Any]]:
    """Ledger rows as JSON-safe records (NA -> None, numpy scalars -> Python)."""
    return [{k: plain_scalar(v) for k, v in r.items()} for r in led.to_dict("records")]


def ledger_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Stored records back to a ledger typed exactly like ``analysis.crossval.ledger``."""
    empty = ledger(pd.DataFrame(columns=list(cc.WORKLOAD_COLUMNS)), pd.DataFrame())
    frame = pd.DataFrame(rows, columns=list(cc.LEDGER_COLUMNS))
    return frame.astype({str(k): str(v) for k, v in empty.dtypes.items() if str(v) != "object"})


def build_ledger(
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
    foreground.step_aside()  # in the background refresh: a page view first
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
    for col in (cc.CHANGE_PCT, cc.TPS_DEPLOYED, cc.TPS_CANDIDATE, cc.TPS_CANDIDATE_PR,
                cc.TPS_DEPLOYED_PR):  # fmt: skip
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


# ------------------------------------------------------------------ shared by the page
def rules_side_by_side(exact: pd.DataFrame, noise: float = DEFAULT_NOISE_PCT) -> pd.DataFrame:
    """Per (Model, Hardware) with compared workloads: the summary's Match cell under each
    rule (columns Model, Hardware, then one per rule in ``RULES`` order), from the
    exact-rule ledger ``exact`` and ``match_flags`` (no reasons rebuilt)."""
    flags = match_flags(exact, noise)
    compared = exact[cc.STATUS].isin([cc.MATCH, cc.MISMATCH])
    out: pd.DataFrame | None = None
    for rule in RULES:
        led = exact[[C.MODEL, C.HARDWARE, cc.PHASE, cc.WORKLOAD_ID, cc.STATUS]].copy()
        led.loc[compared, cc.STATUS] = flags[rule][compared].map(
            {True: cc.MATCH, False: cc.MISMATCH}
        )
        s = summary_of(led, ())[[cc.S_MODEL, cc.S_HARDWARE, cc.S_MATCH, cc.N_COMPARED]]
        s = s[s[cc.N_COMPARED] > 0].drop(columns=[cc.N_COMPARED]).rename(columns={cc.S_MATCH: rule})
        out = s if out is None else out.merge(s, on=[cc.S_MODEL, cc.S_HARDWARE], how="outer")
    assert out is not None
    return out.reset_index(drop=True)


def visible_summary(table: pd.DataFrame, show_empty: bool) -> pd.DataFrame:
    """Summary rows with at least one compared workload (all rows when ``show_empty``),
    rows with compared workloads first (stable)."""
    if show_empty:
        order = (table[cc.N_COMPARED] == 0).astype(int).sort_values(kind="mergesort").index
        return table.loc[order].reset_index(drop=True)
    return table[table[cc.N_COMPARED] > 0].reset_index(drop=True)


def mappable_first(view: pd.DataFrame) -> pd.DataFrame:
    """``view`` stably sorted: Match, Mismatch, no data, then not mappable."""
    rank = view[cc.STATUS].map({s: i for i, s in enumerate(STATUSES)}).fillna(len(STATUSES))
    return view.loc[rank.sort_values(kind="mergesort").index].reset_index(drop=True)


def guide_compare(
    store: Store, filters: dict[str, Any], tol: float, rule: str, noise: float
) -> pd.DataFrame:
    """The guide's table beside ours (``analysis.crossval_guide.compare``): our Match
    count under ``rule``, causes from the exact-rule ledger of ``filters``."""
    return compare(compute_ledger(store, filters, tol, "exact", noise), rule, noise)


def guide_fit_answer(store: Store, tol: float, noise: float, fixed_only: bool = True) -> GuideFit:
    """Which rule reproduces each row of the guide's table
    (``analysis.crossval_fit.guide_fit``) over every imported workload's exact-rule
    ledger; ``fixed_only`` leaves the agentic-coding traces out, as the guide does."""
    return guide_fit(compute_ledger(store, {}, tol, "exact", noise), fixed_only)
