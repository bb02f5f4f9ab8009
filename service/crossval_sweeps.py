"""Sweeps to run next and the coverage map, for one slice of the ledger.

``GET /api/v1/crossval/sweeps`` (JSON, or the shell script with ``format=sh``) and the
/crossval page's "Sweeps to run next" section both call :func:`sweep_report` on a ledger
from ``service.crossval`` (the API's ``compute_ledger``, the page's cached one from
``service.crossval_page``: the same stored ledger), so the commands are the same on every surface.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import crossval_columns as cc
from analysis.crossval_sweeps import (
    coverage,
    script_name,
    sweep_plan,
    sweep_script,
    unfillable,
)
from service.crossval_page import LedgerState, cached_ledger, ledger_state, page_cached
from service.frames import DashData


@dataclass(frozen=True)
class SweepReport:
    """The plan (``crossval_sweeps.PLAN_COLUMNS``), the coverage map
    (``COVERAGE_COLUMNS``), the shell script and its download name."""

    plan: pd.DataFrame
    coverage: pd.DataFrame
    script: str
    filename: str
    cannot: pd.DataFrame | None = None  # crossval_sweeps.unfillable: no command, a reason


def sweep_report(
    ledger_df: pd.DataFrame, model: str | None, hardware: str | None, phase: str | None
) -> SweepReport:
    """Sweeps covering every "no data" row of ``ledger_df`` narrowed to ``phase`` (the
    ledger is already narrowed to model and hardware; they name the slice)."""
    lg = ledger_df if not phase else ledger_df[ledger_df[cc.PHASE] == phase]
    plan = sweep_plan(lg)
    cannot = unfillable(lg)
    name = script_name(model, hardware, phase)
    label = name.removeprefix("crossval-sweeps-").removesuffix(".sh")
    return SweepReport(plan, coverage(lg), sweep_script(plan, label, cannot), name, cannot)


def cached_sweep_report(
    data: DashData,
    model: str | None,
    hardware: str | None,
    phase: str | None,
    tol: float,
    state: LedgerState | None = None,
) -> SweepReport:
    """:func:`sweep_report` of the page's exact-rule ledger (the "no data" rows do not
    depend on the rule) of the shown stored ledger (``state``, else
    ``ledger_state``), cached under its key."""
    st = state if state is not None else ledger_state(data, tol)

    def load() -> SweepReport:
        led = cached_ledger(data, model, hardware, tol, state=st)
        return sweep_report(led, model, hardware, phase)

    return page_cached(data, ("sweeps", st.key, model, hardware, phase, tol), load)
