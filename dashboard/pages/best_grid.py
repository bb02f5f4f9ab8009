"""The Best page's grid: the decision first, the details one click away.

Leading columns (always shown): the workload, the winner, the margin, the runner-up
and the tie flag. Everything else (recipe parts, scores, repeats and spread, noise
band, derived quantities, run) sits in a "details" column group that is collapsed by
default (AG Grid ``columnGroupShow: "open"``; the best score stays visible while it
is closed) and opens with the group header's chevron. The CSV holds the columns in
the same order.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import columns as C
from analysis import confidence as CF
from analysis.best import (
    IS_TIE,
    MARGIN_PCT,
    N_CANDIDATES,
    NO_RUNNER_UP,
    NOISE_BAND_PCT,
    NOISE_SOURCE,
    TIE,
    TIE_STATE,
)
from dashboard import components as ui
from dashboard import grid_state as gs

WINNER = "winner"
RUNNER_UP = "runner_up"
DETAILS_GROUP = "details"
HEADERS = {
    WINNER: "winner",
    RUNNER_UP: "runner-up",
    "best_backend": "best backend",
    "best_comm": "best comm",
    "best_parallel_mode": "best parallel mode",
    "best_moe_ep_size": "EP",
    "best_moe_tp_size": "TP",
    "best_cuda_graph": "CUDA graph",
    "best_score_ms": "best score (ms)",
    "runner_up_backend": "runner-up backend",
    "runner_up_comm": "runner-up comm",
    "runner_up_parallel_mode": "runner-up mode",
    "runner_up_score_ms": "runner-up score (ms)",
    MARGIN_PCT: "margin (%)",
    NOISE_BAND_PCT: "noise band (%)",
    NOISE_SOURCE: "noise from",
    IS_TIE: "tie (within noise)",
    TIE_STATE: "tie (within noise)",
    CF.CONFIDENCE: "confidence",
    CF.EVIDENCE_VERSIONS: "TensorRT-LLM version(s)",
    CF.EVIDENCE_DATE: "run date",
    CF.TOP3_ONLY: "top 3 per workload only",
    CF.CONFIDENCE_NOTE: "why (confidence)",
    N_CANDIDATES: "configurations",
    "best_n_repeats": "best: runs",
    "best_spread_pct": "best spread (%)",
    "runner_up_n_repeats": "runner-up: runs",
    "runner_up_spread_pct": "runner-up spread (%)",
    C.DISPATCH_KB: "dispatch_KB (KiB)",
    "best_run_id": "run",
    C.RUN_ID: "run",
}
_DETAILS = (
    CF.CONFIDENCE,  # shown while the group is closed too: the verdict, its reason on hover
    "best_score_ms",
    "best_backend",
    "best_comm",
    "best_parallel_mode",
    "best_moe_ep_size",
    "best_moe_tp_size",
    "best_cuda_graph",
    "best_n_repeats",
    "best_spread_pct",
    C.TOKENS_PER_S_PER_GPU,
    C.ACTIVATED_TOKENS_PER_RANK,
    C.DISPATCH_KB,
    "runner_up_backend",
    "runner_up_comm",
    "runner_up_score_ms",
    "runner_up_n_repeats",
    NOISE_BAND_PCT,
    NOISE_SOURCE,
    CF.EVIDENCE_VERSIONS,
    CF.EVIDENCE_DATE,
    CF.TOP3_ONLY,
    CF.CONFIDENCE_NOTE,
    N_CANDIDATES,
    "best_run_id",
)


# Fixed widths (px) of the leading columns: together with the first detail column they
# fit a 1440 px screen (headers wrap); the hidden details are sized to their content.
WIDTHS: dict[str, int] = {
    C.NUM_TOKENS: 110,
    C.PARALLEL_MODE: 115,
    C.WORLD_SIZE: 110,
    C.ATTN: 105,
    C.PHASE: 95,
    C.RUN_ID: 90,
    WINNER: 240,
    MARGIN_PCT: 105,
    RUNNER_UP: 240,
    IS_TIE: 95,
    TIE_STATE: 110,
    CF.CONFIDENCE: 125,
    "best_score_ms": 150,
}


def workload_columns(grouping: str) -> list[str]:
    """The columns that name a workload (the routing pattern is one per table, so it
    is a detail)."""
    if grouping == "bench_moe":
        return [C.NUM_TOKENS, C.PARALLEL_MODE, C.WORLD_SIZE, C.PHASE, C.RUN_ID]
    return [C.NUM_TOKENS, C.WORLD_SIZE, C.ATTN, C.PHASE]


def lead_columns(grouping: str) -> list[str]:
    """Workload, winner, margin, runner-up, tie (the confidence verdict opens the
    details: it stays shown while they are collapsed)."""
    return [*workload_columns(grouping), WINNER, MARGIN_PCT, RUNNER_UP, TIE_STATE]


def detail_columns(grouping: str) -> list[str]:
    """The collapsed columns: the routing pattern (and, for the dashboard grouping, the
    CUDA graph key) then :data:`_DETAILS`."""
    keys = [C.DISPATCH] if grouping == "bench_moe" else [C.DISPATCH, C.CUDA_GRAPH]
    return [*_DETAILS[:1], *keys, *_DETAILS[1:]]


def display_columns(grouping: str) -> list[str]:
    """Every column of the grid and the CSV, in order."""
    return [*lead_columns(grouping), *detail_columns(grouping)]


def _side(table: pd.DataFrame, prefix: str, with_mode: bool) -> pd.Series:
    parts = ["backend", "comm", *(["parallel_mode"] if with_mode else [])]
    cols = [f"{prefix}{p}" for p in parts if f"{prefix}{p}" in table]
    if not cols:
        return pd.Series([None] * len(table), index=table.index, dtype=object)
    text = (
        table[cols]
        .astype(object)
        .apply(
            lambda row: " · ".join(str(v) for v in row if v is not None and not pd.isna(v)), axis=1
        )
    )
    return text.where(text != "", None).astype(object)


def with_decision_columns(table: pd.DataFrame, grouping: str) -> pd.DataFrame:
    """``table`` plus ``winner`` / ``runner_up``: backend · comm (· parallel mode in
    the dashboard grouping, where the mode is part of the configuration); no runner-up
    -> None."""
    if table.empty:
        return table.assign(**{WINNER: [], RUNNER_UP: []})
    with_mode = grouping != "bench_moe"
    return table.assign(
        **{
            WINNER: _side(table, "best_", with_mode),
            RUNNER_UP: _side(table, "runner_up_", with_mode),
        }
    )


TIE_COMPARATOR = (
    f"((valueA === '{NO_RUNNER_UP}') - (valueB === '{NO_RUNNER_UP}')) * (isDescending ? -1 : 1)"
    " || (valueA < valueB ? -1 : (valueA > valueB ? 1 : 0))"
)


def column_defs(table: pd.DataFrame, grouping: str) -> list[dict[str, Any]]:
    """Lead columns, then the collapsed "details" group (its first column always
    shown)."""
    overrides: dict[str, dict[str, Any]] = {c: {"headerName": h} for c, h in HEADERS.items()}
    overrides[TIE_STATE] = {
        "headerName": HEADERS[TIE_STATE],
        "cellClassRules": {"tie-cell": f"params.value === '{TIE}'"},
        # "no runner-up" (nothing compared) sorts last in either direction
        "comparator": {"function": TIE_COMPARATOR},
    }
    # the verdict's reasons (margin vs band, runs, versions, source) on hover
    overrides[CF.CONFIDENCE] = {
        "headerName": HEADERS[CF.CONFIDENCE],
        "tooltipField": CF.CONFIDENCE_NOTE,
        "headerTooltip": "deploy: the margin is beyond what a re-run could give; tie: "
        "either: it is inside; measure first: too little evidence",
    }
    for col, width in WIDTHS.items():
        overrides[col] = {**overrides.get(col, {}), "width": width}
    lead = [c for c in lead_columns(grouping) if c in table]
    details = [c for c in detail_columns(grouping) if c in table]
    defs = ui.column_defs(table, lead, overrides)
    inner = ui.column_defs(table, details, overrides)
    for d in inner[1:]:
        d["columnGroupShow"] = "open"
    group = {
        "headerName": f"details (+{max(len(inner) - 1, 0)})",
        "headerTooltip": "more columns: click the arrow to show or hide them",
        "groupId": DETAILS_GROUP,
        "openByDefault": False,
        "marryChildren": True,
        "children": inner,
    }
    return [*defs, group] if inner else defs


def _leaf_defs(defs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in defs:
        out.extend(_leaf_defs(d["children"]) if "children" in d else [d])
    return out


def text_width(table: pd.DataFrame, col: str, header: str | None) -> int:
    """Pixels for ``col``: its longest text (header words wrap) at ~7.5 px a character,
    plus padding and the sort/filter icons; 90-320 px."""
    longest = max((len(w) for w in str(header or col).split()), default=4)
    if col in table and len(table):
        longest = max(longest, max(len(ui.fmt(v)) for v in table[col]))
    return int(min(320, max(90, 7.5 * longest + 48)))


def best_grid(table: pd.DataFrame, grouping: str, state: gs.GridState) -> Any:
    """The grid over ``table`` (with :func:`with_decision_columns`), sorted and filtered
    as ``state`` says."""
    shown = with_decision_columns(table, grouping)
    cols = [c for c in display_columns(grouping) if c in shown]
    grid = ui.grid("best-grid", shown, cols, page_size=50, height="600px")
    grid.columnDefs = gs.apply_sort(column_defs(shown, grouping), state)
    grid.defaultColDef = {**grid.defaultColDef, "wrapHeaderText": True, "autoHeaderHeight": True}
    # widths from the data, not measured in the browser (autoSize lays the grid out twice)
    grid.columnSize = None
    for d in _leaf_defs(grid.columnDefs):
        d.setdefault("width", text_width(shown, d["field"], d.get("headerName")))
    if state.filter:
        grid.filterModel = dict(state.filter)
    return grid
