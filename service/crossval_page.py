"""The /crossval page's read path: which stored ledger it shows, and what it derives from
that ledger, cached in memory under the stored ledger's key (not the store version).

A page view never waits for the ledger when one is stored for its token tolerance:

* the ledger stored for the current inputs (``service.crossval.ledger_key``): shown;
* else the newest stored ledger of the same token tolerance - sweeps were uploaded since
  and the background refresh (``service.crossval_refresh``) is computing the new one:
  shown, with :attr:`LedgerState.stale` set, so the page says so and polls until the new
  ledger is stored. A refresh is also requested here (once per input version), in case
  none runs in this process (another replica took the upload, or a refresh failed);
* else (nothing stored for this tolerance: a custom tolerance's first view, or a
  database from before ledgers were stored): computed and stored, as the API does.

Every result derived from the ledger (the ruled ledger per scope and rule, the rules side
by side, the guide's table, the sweeps, the status figure) is cached per stored ledger
key and parameters: an upload does not throw them away while the previous ledger is
still the one shown. Outcomes are read on every view (small, replaceable in place).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

import pandas as pd

from analysis import crossval_columns as cc
from analysis.crossval import DEFAULT_BAND_PCT, DEFAULT_TOKEN_TOLERANCE
from analysis.crossval import summary as summary_of
from analysis.crossval_fit import GuideFit, guide_fit
from analysis.crossval_guide import compare
from analysis.crossval_rules import DEFAULT_NOISE_PCT, DEFAULT_RULE
from service.crossval import (
    compute_ledger,
    full_ledger,
    key_for,
    ledger_frame,
    ledger_view,
    mappable_first,
    outcome_table,
    rules_side_by_side,
    tol_suffix,
    visible_summary,
    workload_filters,
)
from service.crossval_refresh import LedgerRefresher, refresher_for
from service.frames import DashData
from service.lru import LRU

T = TypeVar("T")
# Derived results kept per DashData: ledgers of two keys (the one shown and the next)
# times a few scopes and rules.
CACHE_SIZE = 48


class _PageCache:
    """The page's results of one DashData, and the refresher it asks."""

    def __init__(self, data: DashData) -> None:
        self.results = LRU(CACHE_SIZE)
        self.refresher: LedgerRefresher = refresher_for(data.store)


_CACHES: weakref.WeakKeyDictionary[DashData, _PageCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def _cache(data: DashData) -> _PageCache:
    with _CACHES_LOCK:
        found = _CACHES.get(data)
        if found is None:
            found = _CACHES[data] = _PageCache(data)
        return found


def page_cached(data: DashData, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()`` cached for ``data`` under ``key`` (which must name the stored ledger
    key it derives from); computed once when several threads ask at once."""
    return _cache(data).results.get(key, compute)


# ------------------------------------------------------------------ which ledger
def import_key(data: DashData) -> tuple[int, int]:
    """(imports, newest import id): changes with every serving-config import."""
    imports = data.store.crossval.serving_imports()
    newest = int(imports["import_id"].max()) if len(imports) else 0
    return len(imports), newest


def current_key(data: DashData, tol: float) -> str:
    """``ledger_key`` of the store's inputs now (the store version, re-read at most once
    per ``data.version_ttl``)."""
    return key_for(data.version(), import_key(data), tol)


@dataclass(frozen=True)
class LedgerState:
    """The exact-rule ledger the page shows and how current it is."""

    ledger: pd.DataFrame  # every stored workload (service.crossval.full_ledger)
    key: str  # the stored key it was read under
    current: str  # the key of the store's inputs now
    refreshing: bool  # a refresh runs in this process
    failed: bool  # this process's last refresh raised (logged)

    @property
    def stale(self) -> bool:
        """True when the ledger shown predates the newest sweeps or serving configs."""
        return self.key != self.current


def ledger_state(data: DashData, tol: float = DEFAULT_TOKEN_TOLERANCE) -> LedgerState:
    """The ledger to show for token tolerance ``tol`` (see the module docstring)."""
    cur = current_key(data, tol)
    cache = _cache(data)
    keys = [str(k) for k in data.store.crossval.stored_ledger_keys()["ledger_key"]]
    if cur not in keys:  # the version may be up to version_ttl old: ask once more
        data.invalidate()
        cur = current_key(data, tol)
    previous = [k for k in keys if k.endswith(tol_suffix(tol))]  # newest first
    if cur in keys or not previous:
        led = cache.results.get(("ledger", cur), lambda: full_ledger(data.store, tol))
        return LedgerState(led, cur, cur, False, False)
    use = previous[0]
    cache.refresher.ensure(cur)

    def read() -> pd.DataFrame:
        rows = data.store.crossval.stored_ledger(use)
        # superseded in between: the new one is stored (or computed here)
        return ledger_frame(rows) if rows is not None else full_ledger(data.store, tol)

    led = cache.results.get(("ledger", use), read)
    return LedgerState(led, use, cur, cache.refresher.running, cache.refresher.failed)


# ------------------------------------------------------------------ the page's reads
def has_workloads(data: DashData) -> bool:
    """True once any serving workload is stored."""
    return data.store.crossval.serving_workload_count() > 0


def choices(data: DashData) -> tuple[list[str], list[str]]:
    """(models, hardware) of the stored workloads, sorted (unknown models left out)."""
    return data.cached(("crossval-choices", import_key(data)), data.store.crossval.serving_choices)


def cached_ledger(
    data: DashData,
    model: str | None,
    hardware: str | None,
    tol: float,
    rule: str = DEFAULT_RULE,
    noise: float = DEFAULT_NOISE_PCT,
    state: LedgerState | None = None,
) -> pd.DataFrame:
    """:func:`compute_ledger` of the shown ledger (``state``, else :func:`ledger_state`)
    narrowed to one model and hardware (None: all; every phase), under ``rule``."""
    st = state if state is not None else ledger_state(data, tol)
    filters = workload_filters(model, hardware, None)
    return page_cached(
        data,
        ("ruled", st.key, model, hardware, tol, rule, noise),
        lambda: compute_ledger(data.store, filters, tol, rule, noise, st.ledger),
    )


@dataclass(frozen=True)
class CrossvalView:
    """What the /crossval page shows for one set of filters."""

    ledger: pd.DataFrame  # model/hardware scope, all phases and statuses, rule applied
    view: pd.DataFrame  # ledger_view: the ledger grid's rows
    summary: pd.DataFrame  # SUMMARY_COLUMNS (rows without compared workloads hidden unless asked)
    rules: pd.DataFrame  # rules_side_by_side
    guide: pd.DataFrame  # analysis.crossval_guide.compare under the chosen rule
    state: LedgerState | None = None  # which stored ledger (None: built by hand, tests)
    fit: GuideFit | None = None  # analysis.crossval_fit.guide_fit (fixed ISL/OSL by default)


def crossval_view(
    data: DashData,
    model: str | None = None,
    hardware: str | None = None,
    phase: str | None = None,
    status: str | None = None,
    tol: float = DEFAULT_TOKEN_TOLERANCE,
    band: float = DEFAULT_BAND_PCT,
    rule: str = DEFAULT_RULE,
    noise: float = DEFAULT_NOISE_PCT,
    show_empty: bool = False,
    state: LedgerState | None = None,
    fixed_only: bool = True,
) -> CrossvalView:
    """Ledger (under ``rule``), narrowed view, summary, every rule's Match side by side
    and the guide's table beside ours, for one model and hardware, from the shown ledger
    (``state``, else :func:`ledger_state`). Phase and status narrow the view only; the
    summary always splits prefill and decode (``summary_table``'s function). Without
    ``show_empty``, not-mappable rows and summary rows with nothing compared are hidden.
    The view lists mappable rows first. ``fixed_only``: the guide fit leaves the
    agentic-coding traces out, as the guide's table does."""
    st = state if state is not None else ledger_state(data, tol)
    led = cached_ledger(data, model, hardware, tol, rule, noise, st)
    outcomes = outcome_table(data.store, band)
    view = mappable_first(ledger_view(led, outcomes, phase, status))
    if not show_empty:
        view = view[view[cc.STATUS] != cc.NOT_MAPPABLE].reset_index(drop=True)
    table = visible_summary(summary_of(led, outcomes, band), show_empty)

    def tables() -> tuple[pd.DataFrame, pd.DataFrame, GuideFit]:
        # the guide's rows span models and hardware: every imported workload, as GET /guide
        exact = cached_ledger(data, model, hardware, tol, "exact", noise, st)
        everything = cached_ledger(data, None, None, tol, "exact", noise, st)
        fit = guide_fit(everything, fixed_only=fixed_only)
        return rules_side_by_side(exact, noise), compare(everything, rule, noise), fit

    rules, guide, fit = page_cached(
        data, ("tables", st.key, model, hardware, tol, rule, noise, fixed_only), tables
    )
    return CrossvalView(led, view, table, rules, guide, st, fit)
