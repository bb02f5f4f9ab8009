"""Cross-validation: deployed serving configs vs the bench_moe ranking (the guide's
"Cross Validation of Microbenchmark with End-to-end Performance").

URL: ``/crossval?model=&hardware=&phase=prefill|decode&status=Match|Mismatch|no data|
not mappable&tol=<token tolerance, 1-1024>&band=<±band %, 0-100>``.

The numbers are the API's: the ledger is ``api.routes.crossval.compute_ledger`` over the
stored workloads of the selected model and hardware (as ``GET /api/v1/crossval/ledger``),
and the summary is ``api.routes.crossval.summary_table`` of that ledger (as ``GET
/api/v1/crossval/summary?model=&hardware=&band_pct=&token_tolerance=``). Phase and status
narrow the ledger only; the summary always splits prefill and decode, as the guide's
table does. Ledgers are cached per store version and serving-config import; outcomes are
read on every update (they are small and can be replaced in place).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import dash
import dash_ag_grid as dag
import pandas as pd
from dash import Input, Output, State, dcc, html

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis.crossval import DEFAULT_BAND_PCT, DEFAULT_TOKEN_TOLERANCE
from analysis.tables import to_csv_text
from api.routes.crossval import compute_ledger, outcome_table, summary_table, workload_filters
from dashboard import components as ui
from dashboard import crossval_figures as XF
from service.frames import DashData

PATH = "/crossval"
PHASES: tuple[str, ...] = ("prefill", "decode")
STATUSES: tuple[str, ...] = (cc.MATCH, cc.MISMATCH, cc.NO_DATA, cc.NOT_MAPPABLE)
TOL_RANGE = (1.0, 1024.0)  # as the API's token_tolerance
BAND_RANGE = (0.0, 100.0)  # as the API's band_pct
ALL = "all"
# Rows sent to the ledger grid. The real data (~8,700 workloads, most "not mappable" with
# long reasons) is ~5 MB of JSON unfiltered; beyond this the grid shows the compared rows
# first and says so, and the CSV keeps every row.
MAX_GRID_ROWS = 2000

# Outcome columns joined onto the ledger (the stored end-to-end result, if any).
OUTCOME_EXTRA: tuple[str, ...] = (
    cc.OUTCOME,
    cc.CHANGE_PCT,
    cc.TPS_DEPLOYED,
    cc.TPS_CANDIDATE,
    cc.TPS_CANDIDATE_PR,
)
LEDGER_CSV_COLUMNS: tuple[str, ...] = (*cc.LEDGER_COLUMNS, *OUTCOME_EXTRA)

# Ledger grid: (group header, columns); every other ledger column is in the CSV only.
LEDGER_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", (cc.STATUS,)),  # not grouped: pinned left
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
        (C.BACKEND, C.MOE_EP_SIZE, C.MOE_TP_SIZE, C.COMM, cc.COMM_FORCED),
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
        (cc.DIFFERS, cc.DEPLOYED_SCORE_MS, cc.DEPLOYED_GAP_PCT, cc.DEPLOYED_RANK, cc.N_CANDIDATES),
    ),
    (
        "End to end (stored outcome)",
        (cc.OUTCOME, cc.CHANGE_PCT, cc.TPS_DEPLOYED, cc.TPS_CANDIDATE, cc.TPS_CANDIDATE_PR),
    ),
    ("Details", (cc.REASON, C.QUANT, C.CUDA_GRAPH, C.ATTENTION_DP, cc.WORKLOAD_ID)),
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
    cc.REASON: "reason (no data / not mappable)", C.QUANT: "quant", C.CUDA_GRAPH: "CUDA graph",
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

NO_IMPORT_HINTS: tuple[str, ...] = (
    "run `moedash import-serving DIR` (DIR laid out like shared/data: InferenceX masters "
    "under inferencex/configs/ plus the srt-slurm recipes)",
    "or POST /api/v1/serving-configs (multipart, one 'files' part per YAML, named by its "
    "path under the data root; needs an upload token)",
)


# ------------------------------------------------------------------ filters <-> URL
@dataclass(frozen=True)
class Filters:
    model: str | None = None
    hardware: str | None = None
    phase: str | None = None
    status: str | None = None
    tol: float = DEFAULT_TOKEN_TOLERANCE
    band: float = DEFAULT_BAND_PCT

    def query(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "hardware": self.hardware,
            "phase": self.phase,
            "status": self.status,
            "tol": _txt(self.tol),
            "band": _txt(self.band),
        }

    def search(self) -> str:
        return ui.search_string(self.query())


def _txt(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _number(value: Any, lo: float, hi: float) -> float | None:
    """``value`` as a finite float within [lo, hi], else None."""
    if value is None or isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
        return None
    try:
        out = float(str(value).strip())
    except ValueError:
        return None
    return out if math.isfinite(out) and lo <= out <= hi else None


def _choice(value: Any, allowed: tuple[str, ...] | None = None) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None:
        return None
    text = str(value).strip()
    if not text or text == ALL:
        return None
    if allowed is not None and text not in allowed:
        return None
    return text


def make_filters(
    model: Any = None,
    hardware: Any = None,
    phase: Any = None,
    status: Any = None,
    tol: Any = None,
    band: Any = None,
) -> tuple[Filters, list[str]]:
    """Filters from raw control or query values, and notes on values that were replaced
    by their default (out of range or not a number). Unknown phase/status -> all."""
    notes: list[str] = []
    tol_v = _number(tol, *TOL_RANGE)
    if tol_v is None:
        if tol not in (None, ""):
            notes.append(
                f"token tolerance must be a number from {TOL_RANGE[0]:g} to "
                f"{TOL_RANGE[1]:g}; using x{DEFAULT_TOKEN_TOLERANCE:g}"
            )
        tol_v = DEFAULT_TOKEN_TOLERANCE
    band_v = _number(band, *BAND_RANGE)
    if band_v is None:
        if band not in (None, ""):
            notes.append(
                f"band must be a number from {BAND_RANGE[0]:g} to {BAND_RANGE[1]:g} %;"
                f" using ±{DEFAULT_BAND_PCT:g} %"
            )
        band_v = DEFAULT_BAND_PCT
    hw = _choice(hardware)
    return Filters(
        model=_choice(model),
        hardware=hw.upper() if hw else None,
        phase=_choice(phase, PHASES),
        status=_choice(status, STATUSES),
        tol=tol_v,
        band=band_v,
    ), notes


def parse_query(query: dict[str, Any]) -> tuple[Filters, list[str]]:
    q = {k: ui.first(query, k) for k in ("model", "hardware", "phase", "status", "tol", "band")}
    return make_filters(**q)


# ------------------------------------------------------------------ data
def _import_key(data: DashData) -> tuple[int, int]:
    """(imports, newest import id): changes with every serving-config import."""
    imports = data.store.serving_imports()
    newest = int(imports["import_id"].max()) if len(imports) else 0
    return len(imports), newest


def has_workloads(data: DashData) -> bool:
    return data.store.serving_workload_count() > 0


def choices(data: DashData) -> tuple[list[str], list[str]]:
    """(models, hardware) of the stored workloads, sorted (unknown models left out)."""

    def load() -> tuple[list[str], list[str]]:
        w = data.store.serving_workloads()
        models = sorted({str(m) for m in w[C.MODEL].dropna()}) if len(w) else []
        hardware = sorted({str(h) for h in w[C.HARDWARE].dropna()}) if len(w) else []
        return models, hardware

    return data.cached(("crossval-choices", _import_key(data)), load)


def ledger_for(data: DashData, f: Filters) -> pd.DataFrame:
    """The ledger of every stored workload of the selected model and hardware (all phases,
    all statuses), exactly as the API computes it; cached."""

    def load() -> pd.DataFrame:
        return compute_ledger(data.store, workload_filters(f.model, f.hardware, None), f.tol)

    return data.cached(("crossval-ledger", f.model, f.hardware, f.tol, _import_key(data)), load)


def ledger_view(ledger_df: pd.DataFrame, outcomes: pd.DataFrame, f: Filters) -> pd.DataFrame:
    """The ledger narrowed by phase and status, with the stored outcome (if any) of each
    workload joined on (``LEDGER_CSV_COLUMNS``), in ledger order."""
    lg = ledger_df
    if f.phase:
        lg = lg[lg[cc.PHASE] == f.phase]
    if f.status:
        lg = lg[lg[cc.STATUS] == f.status]
    extra = (
        outcomes[[cc.WORKLOAD_ID, *OUTCOME_EXTRA]]
        if len(outcomes)
        else pd.DataFrame(columns=[cc.WORKLOAD_ID, *OUTCOME_EXTRA])
    )
    out = lg.merge(extra, on=cc.WORKLOAD_ID, how="left")
    for col in (cc.CHANGE_PCT, cc.TPS_DEPLOYED, cc.TPS_CANDIDATE, cc.TPS_CANDIDATE_PR):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("Float64")
    out[cc.OUTCOME] = out[cc.OUTCOME].astype(object)
    return out[list(LEDGER_CSV_COLUMNS)].reset_index(drop=True)


@dataclass(frozen=True)
class Result:
    filters: Filters
    ledger: pd.DataFrame  # model/hardware scope, all phases and statuses
    view: pd.DataFrame  # ledger_view: what the ledger grid shows
    summary: pd.DataFrame  # SUMMARY_COLUMNS


def compute(data: DashData, f: Filters) -> Result:
    led = ledger_for(data, f)
    outcomes = outcome_table(data.store, f.band)
    return Result(f, led, ledger_view(led, outcomes, f), summary_table(data.store, led, f.band))


# ------------------------------------------------------------------ rendering
def _overrides(headers: dict[str, str], tips: dict[str, str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for col, text in headers.items():
        out.setdefault(col, {})["headerName"] = text
    for col, tip in tips.items():
        out.setdefault(col, {})["headerTooltip"] = tip
    return out


_STATUS_RULES = {
    "verdict-agrees": f"params.value === '{cc.MATCH}'",
    "verdict-disagrees": f"params.value === '{cc.MISMATCH}'",
}


def ledger_column_defs(view: pd.DataFrame) -> list[dict[str, Any]]:
    """Grouped column definitions (deployed | bench_moe best | comparison | end to end)."""
    over = _overrides(LEDGER_HEADERS, LEDGER_TIPS)
    over[cc.STATUS] = {**over[cc.STATUS], "pinned": "left", "cellClassRules": _STATUS_RULES}
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
    for col in (cc.DIFFERS, cc.REASON):
        over[col] = {**over.get(col, {}), "tooltipField": col, "maxWidth": 420}
    for col in (
        cc.CONC,
        C.NUM_TOKENS,
        cc.MEASURED_NUM_TOKENS,
        cc.CHANGE_PCT,
        cc.TPS_DEPLOYED,
        cc.TPS_CANDIDATE,
        cc.TPS_CANDIDATE_PR,
    ):  # long words in the header
        over[col] = {**over.get(col, {}), "minWidth": 135}
    groups: list[dict[str, Any]] = []
    for header, cols in LEDGER_GROUPS:
        defs = ui.column_defs(view, cols, over)
        groups.extend(defs if not header else [{"headerName": header, "children": defs}])
    return groups


GRID_COLUMNS: tuple[str, ...] = tuple(col for _, cols in LEDGER_GROUPS for col in cols)


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


def ledger_grid(view: pd.DataFrame) -> Any:
    return dag.AgGrid(
        id="cv-ledger-grid",
        rowData=_row_records(view),
        columnDefs=ledger_column_defs(view),
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
            "paginationPageSize": 50,
            "paginationPageSizeSelector": [20, 50, 100, 500],
            "enableCellTextSelection": True,
            "tooltipShowDelay": 300,
            # autoSize only sizes rendered columns: render all ~35
            "suppressColumnVirtualisation": True,
        },
        columnSize="autoSize",
        columnSizeOptions={"skipHeader": True},
        style={"height": f"{min(640, 230 + 42 * len(view))}px"},
        className="ag-theme-alpine",
    )


def summary_grid(table: pd.DataFrame) -> Any:
    """The guide's table: one row per model and hardware (few rows: no paging, grid as
    tall as its rows)."""
    over = _overrides(SUMMARY_HEADERS, SUMMARY_TIPS)
    widths = {
        cc.S_MODEL: 150,
        cc.S_HARDWARE: 110,
        cc.S_MATCH: 300,
        cc.S_MISMATCH: 100,
        cc.S_IMPROVEMENT: 125,
        cc.S_REGRESSION: 115,
        cc.S_REGRESSION_AFTER_PR: 150,
        cc.N_NOT_EVALUATED: 130,
        cc.N_NO_DATA: 130,
    }
    for col, width in widths.items():
        over[col] = {**over.get(col, {}), "minWidth": width}
    defs = [{**d, "filter": False} for d in ui.column_defs(table, SUMMARY_GRID_COLUMNS, over)]
    return dag.AgGrid(
        id="cv-summary-grid",
        rowData=ui.records(table, SUMMARY_GRID_COLUMNS),
        columnDefs=defs,
        defaultColDef={
            "sortable": True,
            "filter": False,
            "resizable": True,
            "minWidth": 80,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        dashGridOptions={
            "domLayout": "autoHeight",
            "enableCellTextSelection": True,
            "tooltipShowDelay": 300,
        },
        columnSize="responsiveSizeToFit",
        style={"height": None},
        className="ag-theme-alpine",
    )


def _status_line(view: pd.DataFrame) -> str:
    counts = view[cc.STATUS].value_counts()
    parts = [f"{int(counts.get(s, 0)):,} {s}" for s in STATUSES if counts.get(s, 0)]
    nearest = int(view[cc.NEAREST_TOKENS_USED].fillna(False).astype(bool).sum())
    with_outcome = int(view[cc.OUTCOME].notna().sum())
    text = f"{len(view):,} workloads" + (": " + ", ".join(parts) if parts else "")
    text += f"; {nearest:,} use the nearest measured num_tokens"
    text += f"; {with_outcome:,} with a stored end-to-end outcome."
    return text


def _no_candidates(f: Filters) -> Any:
    return ui.empty_state(
        "No bench_moe candidates match these serving workloads: nothing is compared yet.",
        [
            "upload bench_moe sweeps of the same model, quant, hardware and world size "
            "(`moedash ingest FILE` or `moedash upload`, POST /api/v1/runs)",
            f"raise the token tolerance (now x{f.tol:g}) if only num_tokens is missing",
            "the ledger's “reason” column says which key has no candidates",
        ],
        test_id="cv-no-candidates",
    )


def render_summary(res: Result) -> Any:
    f = res.filters
    comparable = res.ledger[cc.STATUS].isin([cc.MATCH, cc.MISMATCH]).any()
    scope = " · ".join(x for x in (f.model and XF.model_display(f.model), f.hardware) if x)
    head = html.P(
        f"{scope or 'All models and hardware'}; all phases. Outcomes "
        f"classified at ±{f.band:g} %; nearest num_tokens within x{f.tol:g}.",
        className="status",
        **{"data-testid": "cv-summary-scope"},
    )
    if res.ledger.empty:
        return ui.empty_state(
            "No serving workloads for this model and hardware.",
            ["choose “all” models or hardware"],
            test_id="cv-no-workloads",
        )
    if not comparable:
        return html.Div([head, _no_candidates(f)])
    return html.Div([head, summary_grid(res.summary)])


def render_ledger(res: Result) -> Any:
    view = res.view
    if view.empty:
        return ui.empty_state(
            "No workloads match these filters.",
            ["set phase or status to “all”", "choose another model or hardware"],
            test_id="cv-ledger-empty",
        )
    shown = grid_rows(view)
    cap = None
    if len(shown) < len(view):
        cap = html.P(
            f"The grid shows {len(shown):,} of {len(view):,} rows (Match and "
            "Mismatch first); narrow the filters to see the rest here. The ledger "
            "CSV holds every row.",
            className="status",
            **{"data-testid": "cv-ledger-capped"},
        )
    return html.Div(
        [
            html.P(_status_line(view), className="status", **{"data-testid": "cv-ledger-count"}),
            cap,
            ledger_grid(shown),
        ]
    )


def render_figure(res: Result) -> Any:
    if not res.ledger[cc.STATUS].isin(XF.STATUSES).any():
        return None
    return dcc.Graph(
        id="cv-status-graph",
        figure=XF.status_figure(res.ledger),
        config={"displaylogo": False, "responsive": True},
        className="pareto-graph",
    )


def update(
    data: DashData, model: Any, hardware: Any, phase: Any, status: Any, tol: Any, band: Any
) -> tuple[Any, Any, Any, Any, str]:
    """Controls -> (notes, summary, figure, ledger, URL search)."""
    f, notes = make_filters(model, hardware, phase, status, tol, band)
    note = (
        html.Ul([html.Li(n) for n in notes], className="notes", **{"data-testid": "cv-notes"})
        if notes
        else None
    )
    if not has_workloads(data):
        empty = ui.empty_state(
            "No serving configs imported yet.", list(NO_IMPORT_HINTS), test_id="cv-no-imports"
        )
        return note, empty, None, None, f.search()
    res = compute(data, f)
    return note, render_summary(res), render_figure(res), render_ledger(res), f.search()


def summary_csv(data: DashData, f: Filters) -> dict[str, Any]:
    table = compute(data, f).summary
    return {
        "content": to_csv_text(table, list(cc.SUMMARY_COLUMNS)),
        "filename": "crossval-summary.csv",
        "type": "text/csv",
    }


def ledger_csv(data: DashData, f: Filters) -> dict[str, Any]:
    view = compute(data, f).view
    return {
        "content": to_csv_text(view, list(LEDGER_CSV_COLUMNS)),
        "filename": "crossval-ledger.csv",
        "type": "text/csv",
    }


# ------------------------------------------------------------------ layout
METHOD = (
    "Each serving workload (an InferenceX Pareto point's prefill or decode pool) is mapped "
    "to a bench_moe shape: model, quant, hardware, world size, num_tokens of the MoE "
    "forward, CUDA graph on/off and attention DP/TP. Match: the deployed MoE config "
    "(backend, EP, TP, and comm when the recipe forces one) is the successful bench_moe "
    "candidate with the lowest score (ms); otherwise Mismatch. If the exact num_tokens was "
    "not measured, the nearest within the token tolerance (a factor, on a log axis) is used. "
    "Each Mismatch served end to end with both configs is an Improvement when the "
    "bench_moe candidate raises tps_per_user (tokens/s/user) by more than the band, Flat "
    "within ±band (bounds included), a Regression below -band."
)


def _ctl(text: str, comp: Any, wide: bool = False) -> html.Div:
    return html.Div(
        [html.Label(text, htmlFor=comp.id), comp], className="control wide" if wide else "control"
    )


def _dropdown(
    cid: str, values: list[str], value: str | None, labels: dict[str, str] | None = None
) -> dcc.Dropdown:
    opts = [
        {"label": "all", "value": ALL},
        *[{"label": (labels or {}).get(v, v), "value": v} for v in values],
    ]
    return dcc.Dropdown(
        id=cid, options=opts, value=value if value in values else ALL, clearable=False
    )


def layout(data: DashData, **query: Any) -> html.Div:
    head = [
        html.H2("Cross validation: bench_moe vs deployed serving configs"),
        html.P(METHOD, className="lead", **{"data-testid": "cv-method"}),
    ]
    if not has_workloads(data):
        return html.Div(
            [
                *head,
                ui.empty_state(
                    "No serving configs imported yet.",
                    list(NO_IMPORT_HINTS),
                    test_id="cv-no-imports",
                ),
            ]
        )
    f, _notes = parse_query(query)
    models, hardware = choices(data)
    if f.model and f.model not in models:
        models = [*models, f.model]  # a permalink keeps its filter (shown as no workloads)
    if f.hardware and f.hardware not in hardware:
        hardware = [*hardware, f.hardware]
    model_labels = {
        m: f"{XF.model_display(m)} ({m})" if XF.model_display(m) != m else m for m in models
    }
    controls = html.Div(
        [
            _ctl("model", _dropdown("cv-model", models, f.model, model_labels), wide=True),
            _ctl("hardware", _dropdown("cv-hardware", hardware, f.hardware)),
            _ctl("phase", _dropdown("cv-phase", list(PHASES), f.phase)),
            _ctl("ledger status", _dropdown("cv-status", list(STATUSES), f.status)),
            _ctl(
                "token tolerance (x, num_tokens)",
                dcc.Input(
                    id="cv-tol",
                    type="number",
                    min=TOL_RANGE[0],
                    max=TOL_RANGE[1],
                    step="any",
                    value=f.tol,
                    debounce=True,
                ),
            ),
            _ctl(
                "±band (%)",
                dcc.Input(
                    id="cv-band",
                    type="number",
                    min=BAND_RANGE[0],
                    max=BAND_RANGE[1],
                    step="any",
                    value=f.band,
                    debounce=True,
                ),
            ),
        ],
        className="controls",
    )
    return html.Div(
        [
            dcc.Location(id="cv-url", refresh=False),
            *head,
            controls,
            html.Div(id="cv-notes"),
            html.H3("Summary (the guide's table)"),
            html.P(
                "Per model and hardware. Match = Match / (Match + Mismatch), then the split "
                "by phase; Improvement, Flat and Regression count the Mismatches with a "
                "stored end-to-end outcome, out of all Mismatches. Phase and status filters "
                "apply to the ledger only.",
                className="muted",
            ),
            ui.download_button("cv-summary-csv-btn", "Download summary CSV"),
            ui.loading(html.Div(id="cv-summary"), "cv-summary-loading"),
            ui.loading(html.Div(id="cv-figure", style={"marginTop": "14px"}), "cv-figure-loading"),
            html.H3("Ledger: one row per serving workload"),
            html.P(
                "Deployed config (from the serving recipe) next to the best bench_moe "
                "candidate of the same shape. Sort and filter in the column headers; the "
                "CSV holds every ledger column for the page's filters.",
                className="muted",
            ),
            ui.download_button("cv-ledger-csv-btn", "Download ledger CSV"),
            ui.loading(html.Div(id="cv-ledger"), "cv-ledger-loading"),
            dcc.Download(id="cv-summary-download"),
            dcc.Download(id="cv-ledger-download"),
        ]
    )


def register(app: dash.Dash, data: DashData) -> None:
    ids = ("cv-model", "cv-hardware", "cv-phase", "cv-status", "cv-tol", "cv-band")

    @app.callback(
        Output("cv-notes", "children"),
        Output("cv-summary", "children"),
        Output("cv-figure", "children"),
        Output("cv-ledger", "children"),
        Output("cv-url", "search"),
        *[Input(i, "value") for i in ids],
    )
    def _update(*values: Any) -> tuple[Any, Any, Any, Any, str]:
        return update(data, *values)

    @app.callback(
        Output("cv-summary-download", "data"),
        Input("cv-summary-csv-btn", "n_clicks"),
        *[State(i, "value") for i in ids],
        prevent_initial_call=True,
    )
    def _summary_csv(n: int | None, *values: Any) -> Any:
        return summary_csv(data, make_filters(*values)[0]) if n else dash.no_update

    @app.callback(
        Output("cv-ledger-download", "data"),
        Input("cv-ledger-csv-btn", "n_clicks"),
        *[State(i, "value") for i in ids],
        prevent_initial_call=True,
    )
    def _ledger_csv(n: int | None, *values: Any) -> Any:
        return ledger_csv(data, make_filters(*values)[0]) if n else dash.no_update
