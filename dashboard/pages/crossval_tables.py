"""The /crossval small tables: the summary in the guide's format, every rule's Match side
by side, the guide's table beside ours, the sweeps to run next and the coverage map.
Read-only HTML tables rendered on the server (dashboard.static_html.data_table: one
component each, escaped text, long cells wrapped - never clipped); the ledger, which
people sort and filter, stays a grid (crossval_grids)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis import crossval_guide as G
from analysis import crossval_sweeps as S
from analysis.crossval_rules import RULE_DEFINITIONS, RULES
from dashboard import components as ui
from dashboard.pages.crossval_grids import SUMMARY_GRID_COLUMNS, SUMMARY_HEADERS, SUMMARY_TIPS
from dashboard.static_html import data_table

GUIDE_HEADERS: dict[str, str] = {
    cc.S_MODEL: "model", C.HARDWARE: "hardware", cc.PHASE: "phase",
    G.G_MATCH: "guide: Match (workloads)", G.G_N: "guide: compared (workloads)",
    G.O_MATCH: "ours: Match (workloads)", G.O_N: "ours: compared (workloads)",
    G.DELTA: "guide − ours Match (workloads)", G.N_NO_DATA: "no data (workloads)",
    G.N_RULE: "rule: other layout wins (workloads)",
    G.N_TIE: "tie within noise (workloads)", G.N_WINNER: "different winner (workloads)",
}  # fmt: skip
GUIDE_TIPS: dict[str, str] = {
    G.N_NO_DATA: "mappable workloads with no bench_moe candidate of their shape",
    G.N_RULE: "exact-rule Mismatches that are Matches within the deployed layout family "
    "(only another layout, e.g. hybrid TPxEP, wins; the guide's tree always deploys EP)",
    G.N_TIE: "exact-rule Mismatches where the deployed config is within the noise band of the best",
    G.N_WINNER: "exact-rule Mismatches where another config of the deployed layout family "
    "wins by more than the noise band, or the deployed config was not measured",
}
PLAN_HEADERS: dict[str, str] = {
    C.HARDWARE: "hardware", C.MODEL: "model", C.QUANT: "quant",
    C.WORLD_SIZE: "world size (GPUs)", C.ATTENTION_DP: "attention DP",
    C.CUDA_GRAPH: "CUDA graph", S.PARALLEL_MODES: "--parallel_mode",
    S.TOKENS: "--balanced_total_num_tokens (tokens)", S.N_ROWS: "fills (workloads)",
    S.OUTPUT_FILE: "output file", S.COMMAND: "command",
}  # fmt: skip
COVERAGE_HEADERS: dict[str, str] = {
    **{k: v for k, v in PLAN_HEADERS.items() if k in S.SWEEP_KEY},
    S.N_WORKLOADS: "workloads", S.N_COVERED: "measured (workloads)",
    S.NEEDED: "needed num_tokens (tokens)", S.MEASURED: "measured num_tokens used (tokens)",
    S.MISSING: "missing num_tokens (tokens)",
}  # fmt: skip
_WRAP = {S.COMMAND, S.TOKENS, S.NEEDED, S.MEASURED, S.MISSING, *RULES, cc.S_MATCH}


def small_grid(
    grid_id: str,
    frame: pd.DataFrame,
    columns: tuple[str, ...],
    headers: dict[str, str],
    tips: dict[str, str] | None = None,
    widths: dict[str, int] | None = None,
) -> Any:
    """A table over ``frame[columns]``: headers from ``headers`` (else the column name),
    long text columns wrapped, ``widths`` as minimum widths."""
    fields = [c for c in columns if c in frame]
    return data_table(
        grid_id,
        ui.records(frame, fields),
        fields,
        {c: headers.get(c, c) for c in fields},
        tips,
        wrap=[c for c in fields if c in _WRAP],
        widths=widths,
    )


def summary_grid(table: pd.DataFrame) -> Any:
    """The guide's table: one row per model and hardware; the Match cell wraps."""
    fields = [c for c in SUMMARY_GRID_COLUMNS if c in table]
    headers = {c: SUMMARY_HEADERS.get(c, ui.label(c)) for c in fields}
    widths = {cc.S_MODEL: 150, cc.S_HARDWARE: 90, cc.S_MATCH: 260}
    return data_table(
        "cv-summary-grid",
        ui.records(table, fields),
        fields,
        headers,
        SUMMARY_TIPS,
        wrap=[cc.S_MATCH],
        widths=widths,
    )


def rules_grid(table: pd.DataFrame) -> Any:
    """Model, hardware, then the Match cell under each rule."""
    headers = {cc.S_MODEL: "model", cc.S_HARDWARE: "hardware"} | {r: f"Match: {r}" for r in RULES}
    return small_grid(
        "cv-rules-grid",
        table,
        (cc.S_MODEL, cc.S_HARDWARE, *RULES),
        headers,
        tips=dict(RULE_DEFINITIONS),
        widths={cc.S_MODEL: 170, cc.S_HARDWARE: 100},
    )


def guide_grid(table: pd.DataFrame) -> Any:
    """The guide's rows with ours and the causes beside them."""
    cols = tuple(col for col in G.GUIDE_COMPARE_COLUMNS if col != C.MODEL)
    return small_grid("cv-guide-grid", table, cols, GUIDE_HEADERS, GUIDE_TIPS, {cc.S_MODEL: 170})


def published_grid(table: pd.DataFrame) -> Any:
    """The guide's table as published (display strings)."""
    cols = tuple(table.columns)
    return small_grid("cv-published-grid", table, cols, {}, widths={cc.S_MODEL: 170})


def plan_grid(plan: pd.DataFrame) -> Any:
    """One row per bench_moe command."""
    # --parallel_mode and the output file are in the command itself
    cols = tuple(col for col in S.PLAN_COLUMNS if col not in (S.OUTPUT_FILE, S.PARALLEL_MODES))
    widths = {S.COMMAND: 560, S.TOKENS: 200}
    return small_grid("cv-sweeps-grid", plan, cols, PLAN_HEADERS, widths=widths)


def coverage_grid(cov: pd.DataFrame) -> Any:
    """Needed vs measured num_tokens per sweep group."""
    widths = {S.NEEDED: 220, S.MEASURED: 220, S.MISSING: 220}
    return small_grid("cv-coverage-grid", cov, S.COVERAGE_COLUMNS, COVERAGE_HEADERS, widths=widths)
