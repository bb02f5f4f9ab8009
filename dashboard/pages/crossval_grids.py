"""The /crossval grids: the ledger (grouped columns: workload, deployed, bench_moe best,
comparison, end to end) and the guide's summary table, as AG Grid components.

User strings (entries, reasons) are plain cell values: no cell renderers, no HTML.
"""

from __future__ import annotations

from typing import Any

import dash_ag_grid as dag
import pandas as pd

from analysis import columns as C
from analysis import crossval_columns as cc
from dashboard import components as ui
from dashboard.static_html import StaticHtml, data_table
from service.crossval import STATUSES

# Rows sent to the ledger grid. The real data (~8,700 workloads, most "not mappable" with
# long reasons) is ~5 MB of JSON unfiltered; beyond this the grid shows the compared rows
# first and says so, and the CSV keeps every row.
MAX_GRID_ROWS = 2000
# Rows in the grid on first load (five of its 20-row pages): all ~1,070 compared rows
# were ~1 MB of JSON for the browser to parse and lay out before the page was usable;
# the "every ledger row" toggle (``rows=all``) loads the rest.
FIRST_ROWS = 100
# Rows on one page of the ledger grid (the page-size selector offers more): the first page
# draws ~0.15 s sooner than with 20, each row having wrapped, measured cells.
PAGE_SIZE = 10

# Ledger grid: (group header, columns); every other ledger column is in the CSV only.
LEDGER_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", (cc.STATUS, cc.REASON)),  # not grouped: status first, then why
    (
        "Workload",
        (
            cc.PHASE,
            C.MODEL,
            C.HARDWARE,
            cc.ENTRY,
            cc.CONC,
            C.WORLD_SIZE,
            C.NUM_TOKENS,
            cc.MEASURED_NUM_TOKENS,
            cc.NEAREST_TOKENS_USED,
        ),
    ),
    (
        "Deployed (serving recipe)",
        (C.PARALLEL_MODE, C.BACKEND, C.MOE_EP_SIZE, C.MOE_TP_SIZE, C.COMM, cc.COMM_FORCED),
    ),
    (
        "bench_moe best (lowest score)",
        (
            cc.BEST_BACKEND,
            cc.BEST_MOE_EP_SIZE,
            cc.BEST_MOE_TP_SIZE,
            cc.BEST_COMM,
            cc.BEST_PARALLEL_MODE,
            cc.BEST_SCORE_MS,
        ),
    ),
    (
        "Deployed vs best",
        (
            cc.CAUSE,
            cc.DIFFERS,
            cc.DEPLOYED_SCORE_MS,
            cc.DEPLOYED_GAP_PCT,
            cc.DEPLOYED_RANK,
            cc.N_CANDIDATES,
        ),
    ),
    (
        "End to end (stored outcome)",
        (
            cc.OUTCOME,
            cc.CHANGE_PCT,
            cc.TPS_DEPLOYED,
            cc.TPS_CANDIDATE,
            cc.TPS_DEPLOYED_PR,
            cc.TPS_CANDIDATE_PR,
        ),
    ),
    # The bench_moe command of a no-data row ends its reason; the CSV has it on its own.
    ("Details", (C.QUANT, C.CUDA_GRAPH, C.ATTENTION_DP, cc.WORKLOAD_ID)),
)
LEDGER_HEADERS: dict[str, str] = {
    cc.STATUS: "status", cc.PHASE: "phase", C.MODEL: "model", C.HARDWARE: "hardware",
    cc.ENTRY: "InferenceX entry", cc.CONC: "concurrency (requests)",
    C.WORLD_SIZE: "world size (GPUs)", C.NUM_TOKENS: "num_tokens (tokens)",
    cc.MEASURED_NUM_TOKENS: "measured num_tokens (tokens)",
    cc.NEAREST_TOKENS_USED: "nearest tokens used",
    C.BACKEND: "backend", C.MOE_EP_SIZE: "EP", C.MOE_TP_SIZE: "TP", C.COMM: "comm",
    cc.COMM_FORCED: "comm forced",
    cc.BEST_BACKEND: "backend", cc.BEST_MOE_EP_SIZE: "EP", cc.BEST_MOE_TP_SIZE: "TP",
    cc.BEST_COMM: "comm", cc.BEST_PARALLEL_MODE: "parallel mode",
    cc.BEST_SCORE_MS: "score (ms)",
    cc.DIFFERS: "differs (deployed->best)", cc.DEPLOYED_SCORE_MS: "deployed score (ms)",
    cc.DEPLOYED_GAP_PCT: "gap (%)", cc.DEPLOYED_RANK: "deployed rank",
    cc.N_CANDIDATES: "candidates",
    cc.OUTCOME: "outcome", cc.CHANGE_PCT: "tps/user change (%)",
    cc.TPS_DEPLOYED: "deployed (tokens/s/user)", cc.TPS_CANDIDATE: "candidate (tokens/s/user)",
    cc.TPS_CANDIDATE_PR: "candidate, perfect routing (tokens/s/user)",
    cc.TPS_DEPLOYED_PR: "deployed, perfect routing (tokens/s/user)",
    cc.REASON: "reason", cc.CAUSE: "cause (vs exact Match)",
    cc.SWEEP_COMMAND: "bench_moe command (no data)", C.PARALLEL_MODE: "parallel mode",
    C.QUANT: "quant", C.CUDA_GRAPH: "CUDA graph",
    C.ATTENTION_DP: "attention DP", cc.WORKLOAD_ID: "workload id",
}  # fmt: skip
LEDGER_TIPS: dict[str, str] = {
    cc.STATUS: "Match: the deployed MoE config is the best successful bench_moe candidate "
    "of the same shape; no data: no candidate of that shape was measured",
    cc.NEAREST_TOKENS_USED: "num_tokens was not measured; the nearest measured value within "
    "the token tolerance was used",
    cc.DEPLOYED_GAP_PCT: "(deployed score - best score) / best score x 100; empty when the "
    "deployed config was not measured",
    cc.DEPLOYED_RANK: "1 = the deployed config is the fastest measured candidate",
    cc.CHANGE_PCT: "(candidate / deployed - 1) x 100 of end-to-end tps_per_user",
    cc.DIFFERS: "each field where the best candidate differs from the deployed config",
    cc.REASON: "Match: the deployed config's rank; Mismatch: fields that differ and the gap; "
    "no data: the key without candidates and the bench_moe command; not mappable: why",
    cc.CAUSE: "why not an exact Match: no data, rule (only another layout family wins), "
    "tie within noise, different winner",
}

SUMMARY_GRID_COLUMNS: tuple[str, ...] = (
    cc.S_MODEL,
    cc.S_HARDWARE,
    cc.S_MATCH,
    cc.S_MISMATCH,
    cc.S_IMPROVEMENT,
    cc.S_FLAT,
    cc.S_REGRESSION,
    cc.S_REGRESSION_AFTER_PR,
    cc.N_NOT_EVALUATED,
    cc.N_NO_DATA,
)
SUMMARY_HEADERS: dict[str, str] = {
    cc.S_MATCH: "Match (count, %, prefill, decode)",
    cc.N_NOT_EVALUATED: "Mismatches without outcome",
    cc.N_NO_DATA: "no bench_moe data (workloads)",
}
SUMMARY_TIPS: dict[str, str] = {
    cc.S_MATCH: "Match / (Match + Mismatch); prefill and decode split",
    cc.S_MISMATCH: "Mismatch / (Match + Mismatch)",
    cc.S_IMPROVEMENT: "bench_moe candidate raises end-to-end tps_per_user by more than the "
    "band; x / Mismatches",
    cc.S_FLAT: "change within ± the band (bounds included); x / Mismatches",
    cc.S_REGRESSION: "bench_moe candidate lowers tps_per_user by more than the band "
    "(includes after perfect routing); x / Mismatches",
    cc.S_REGRESSION_AFTER_PR: "still a regression when the candidate is re-run with perfect "
    "routing (balanced expert load); x / Mismatches",
    cc.N_NOT_EVALUATED: "Mismatches with no stored end-to-end outcome (POST "
    "/api/v1/crossval/outcomes or `moedash outcomes FILE`)",
    cc.N_NO_DATA: "mappable workloads with no successful bench_moe candidate of their shape",
}


def _overrides(headers: dict[str, str], tips: dict[str, str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for col, text in headers.items():
        out.setdefault(col, {})["headerName"] = text
    for col, tip in tips.items():
        out.setdefault(col, {})["headerTooltip"] = tip
    return out


# Wrapped cells: the theme's line height equals the row height; a text line height keeps
# a two-line reason about as tall as two ordinary rows, not three.
WRAPPED_STYLE: dict[str, str] = {"lineHeight": "1.45", "paddingTop": "7px", "paddingBottom": "7px"}

_STATUS_RULES = {
    "verdict-agrees": f"params.value === '{cc.MATCH}'",
    "verdict-disagrees": f"params.value === '{cc.MISMATCH}'",
}


def ledger_column_defs(
    view: pd.DataFrame, widths: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """Grouped column definitions (deployed | bench_moe best | comparison | end to end);
    ``widths``: :func:`ledger_widths` of ``view`` when the caller has them."""
    over = _overrides(LEDGER_HEADERS, LEDGER_TIPS)
    # status leads the grid; not pinned: AG Grid's pinned header beside column groups
    # renders a header row group without cells (axe: aria-required-children, critical)
    over[cc.STATUS] = {**over[cc.STATUS], "cellClassRules": _STATUS_RULES}
    over[cc.OUTCOME] = {
        **over.get(cc.OUTCOME, {}),
        "cellClassRules": {
            "verdict-agrees": f"params.value === '{cc.IMPROVEMENT}'",
            "verdict-disagrees": f"params.value && params.value.startsWith('{cc.REGRESSION}')",
        },
    }
    for col in (cc.NEAREST_TOKENS_USED, cc.COMM_FORCED, C.CUDA_GRAPH, C.ATTENTION_DP):
        # cellDataType "text": AG Grid would otherwise draw booleans as checkboxes
        over[col] = {
            **over.get(col, {}),
            "cellDataType": "text",
            "valueFormatter": {
                "function": "params.value == null ? '' : (params.value ? 'yes' : 'no')"
            },
        }
    for col, min_width in WRAPPED_MIN_WIDTHS.items():
        # wrapped, never clipped: the row grows to hold the text
        over[col] = {
            **over.get(col, {}),
            "tooltipField": col,
            "wrapText": True,
            "autoHeight": True,
            "cellStyle": WRAPPED_STYLE,
            "minWidth": min_width,
            "maxWidth": 520,
        }
    for col in (
        cc.CONC,
        C.NUM_TOKENS,
        cc.MEASURED_NUM_TOKENS,
        cc.CHANGE_PCT,
        cc.TPS_DEPLOYED,
        cc.TPS_CANDIDATE,
        cc.TPS_CANDIDATE_PR,
        cc.TPS_DEPLOYED_PR,
    ):  # long words in the header
        over[col] = {**over.get(col, {}), "minWidth": 135}
    # Widths from the data (no client-side autoSize: measuring ~40 columns of 1,000+ rows
    # in the browser dominated the first load); wrapped text columns keep their own.
    for col, width in (widths if widths is not None else ledger_widths(view)).items():
        over[col] = {**over.get(col, {}), "width": width}
    groups: list[dict[str, Any]] = []
    for header, cols in LEDGER_GROUPS:
        defs = ui.column_defs(view, cols, over)
        groups.extend(defs if not header else [{"headerName": header, "children": defs}])
    return groups


GRID_COLUMNS: tuple[str, ...] = tuple(col for _, cols in LEDGER_GROUPS for col in cols)
# Text columns that wrap (never clipped), with their minimum pixel widths.
WRAPPED_MIN_WIDTHS: dict[str, int] = {cc.DIFFERS: 260, cc.REASON: 320, cc.SWEEP_COMMAND: 260}
# Columns sized to their content: all but the wrapped text ones (fixed by min/max).
_AUTOSIZE = tuple(c for c in GRID_COLUMNS if c not in WRAPPED_MIN_WIDTHS)
_CHAR_PX, _PAD_PX = 10, 36  # ag-theme-alpine 14px font (caps are wide); padding + icon


def ledger_widths(view: pd.DataFrame) -> dict[str, int]:
    """Pixel widths of the columns sized to their content (:func:`_width`), for the grid
    and its HTML first page alike."""
    return {col: _width(view, col) for col in _AUTOSIZE}


def _width(view: pd.DataFrame, col: str) -> int:
    """Pixel width holding the longest of the column's first 500 values (as text) and
    its header's longest word (headers wrap), within 90..360 px."""
    header = LEDGER_HEADERS.get(col, col)
    longest = max((len(w) for w in header.split()), default=4)
    if col in view and len(view):
        vals = view[col].head(500).dropna().astype(str)
        if len(vals):
            longest = max(longest, int(vals.str.len().max()))
    return max(90, min(360, longest * _CHAR_PX + _PAD_PX))


def grid_rows(view: pd.DataFrame, limit: int = MAX_GRID_ROWS) -> pd.DataFrame:
    """The rows the grid gets: all of ``view`` in ledger order when within ``limit``,
    else the first ``limit`` after a stable sort by status (Match, Mismatch, no data,
    not mappable), so compared workloads are never cut before uncompared ones."""
    if len(view) <= limit:
        return view
    rank = view[cc.STATUS].map({s: i for i, s in enumerate(STATUSES)}).fillna(len(STATUSES))
    order = rank.reset_index(drop=True).sort_values(kind="mergesort").index
    return view.iloc[order[:limit]]


def _row_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Grid rows without their empty cells (half the payload on unmappable rows)."""
    return [{k: v for k, v in r.items() if v is not None} for r in ui.records(frame, GRID_COLUMNS)]


def ledger_grid_height(rows: int) -> str:
    """The ledger grid's CSS height for ``rows`` rows (its HTML first page keeps it)."""
    return f"{min(760, 300 + 60 * rows)}px"


def ledger_grid(view: pd.DataFrame, widths: dict[str, int] | None = None) -> Any:
    """The ledger grid over ``view``'s rows (paged, sortable, filterable); ``widths`` as
    for :func:`ledger_column_defs`."""
    return dag.AgGrid(
        id="cv-ledger-grid",
        rowData=_row_records(view),
        columnDefs=ledger_column_defs(view, widths),
        defaultColDef={
            "sortable": True,
            "filter": True,
            "resizable": True,
            "floatingFilter": True,
            "minWidth": 105,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
            "suppressHeaderMenuButton": True,
            "suppressHeaderFilterButton": True,
        },
        dashGridOptions={
            "pagination": True,
            "paginationPageSize": PAGE_SIZE,
            "paginationPageSizeSelector": [10, 20, 50, 100, 500],
            "enableCellTextSelection": True,
            "tooltipShowDelay": 300,
            # draw the first page in one go, not row batches over animation frames
            "suppressAnimationFrame": True,
            "animateRows": False,
        },
        style={"height": ledger_grid_height(len(view))},
        className="ag-theme-alpine",
    )


def ledger_first_page(view: pd.DataFrame, widths: dict[str, int]) -> StaticHtml:
    """The grid's first page (its first ``PAGE_SIZE`` rows, its columns and headers) as a
    server-rendered table, shown while the browser loads and lays out AG Grid (about
    0.5 s of main thread for its chunk and first draw on a 2-core machine); the page
    swaps it for the grid once the grid has drawn its rows (``register_ledger_swap``).
    ``widths``: :func:`ledger_widths` of ``view``, as the grid has them."""
    rows = ui.records(view.head(PAGE_SIZE), GRID_COLUMNS)
    return data_table(
        "cv-ledger-static",
        rows,
        GRID_COLUMNS,
        LEDGER_HEADERS,
        LEDGER_TIPS,
        wrap=tuple(WRAPPED_MIN_WIDTHS),
        widths=widths | WRAPPED_MIN_WIDTHS,
        caption=f"Ledger, first {len(rows)} rows (the sortable grid is loading)",
    )
