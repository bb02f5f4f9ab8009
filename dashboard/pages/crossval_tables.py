"""The /crossval small tables: every rule's Match side by side, the guide's table beside
ours, the sweeps to run next and the coverage map. Plain AG Grids (no cell renderers:
user strings stay text), as tall as their rows, long cells wrapped - never clipped."""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
import pandas as pd

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis import crossval_guide as G
from analysis import crossval_sweeps as S
from analysis.crossval_rules import RULE_DEFINITIONS, RULES
from dashboard import components as ui
from dashboard.pages.crossval_grids import WRAPPED_STYLE

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
_BOOLS = (C.ATTENTION_DP, C.CUDA_GRAPH)
PAGE_ROWS = 12
_CHAR_PX, _PAD_PX = 10, 36  # ag-theme-alpine 14px font (caps are wide); padding + icon


def _fit(frame: pd.DataFrame, col: str, header: str) -> int:
    """Pixels for the header's longest word and the column's longest value (<= 40
    characters; longer text wraps), at least 90."""
    longest = max((len(w) for w in header.split()), default=4)
    if col in frame and len(frame):
        vals = frame[col].dropna().astype(str)
        if len(vals):
            longest = max(longest, min(40, int(vals.str.len().max())))
    return max(90, longest * _CHAR_PX + _PAD_PX)


_WRAP = {S.COMMAND, S.TOKENS, S.NEEDED, S.MEASURED, S.MISSING, *RULES, cc.S_MATCH}


def small_grid(
    grid_id: str,
    frame: pd.DataFrame,
    columns: tuple[str, ...],
    headers: dict[str, str],
    tips: dict[str, str] | None = None,
    widths: dict[str, int] | None = None,
) -> Any:
    """A grid over ``frame[columns]`` (auto height, sortable, long text wrapped)."""
    over: dict[str, dict[str, Any]] = {}
    for col in columns:
        o: dict[str, Any] = {"headerName": headers.get(col, col)}
        # never narrower than the header's longest word or the longest value (short cols)
        o["minWidth"] = _fit(frame, col, o["headerName"])
        if tips and col in tips:
            o["headerTooltip"] = tips[col]
        if col in _WRAP:
            o.update(
                wrapText=True,
                autoHeight=True,
                cellStyle=WRAPPED_STYLE,
                minWidth=(widths or {}).get(col, 260),
            )
        elif widths and col in widths:
            o["minWidth"] = max(widths[col], o["minWidth"])
        if col in _BOOLS:
            o.update(
                cellDataType="text",
                valueFormatter={
                    "function": "params.value == null ? '' : (params.value ? 'on' : 'off')"
                },
            )
        over[col] = o
    defs = [{**d, "filter": False} for d in ui.column_defs(frame, columns, over)]
    return dag.AgGrid(
        id=grid_id,
        rowData=ui.records(frame, columns),
        columnDefs=defs,
        defaultColDef={
            "sortable": True,
            "resizable": True,
            "minWidth": 90,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        dashGridOptions={
            "domLayout": "autoHeight",
            "enableCellTextSelection": True,
            "tooltipShowDelay": 300,
            # autoHeight renders every row: long tables are paged so only a page is drawn
            **(
                {"pagination": True, "paginationPageSize": PAGE_ROWS}
                if len(frame) > PAGE_ROWS
                else {}
            ),
        },
        columnSize="responsiveSizeToFit",
        style={"height": None},
        className="ag-theme-alpine",
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
