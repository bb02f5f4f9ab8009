"""Run detail: one run's metadata and every candidate, skipped and failed ones included.

URL: ``/run?id=<run_id>&status=success|failed|skipped&cand=<candidate_index>``.
"""

from __future__ import annotations

import json
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from analysis import columns as C
from dashboard import components as ui
from dashboard import grid_state as gs
from dashboard import labelled as lb
from dashboard.static_html import El, StaticHtml, table
from service.filenames import display_filename
from service.frames import DashData
from service.raw_download import DASHBOARD_FORMAT
from service.runs import candidate_fields, run_candidates, run_detail

PATH = "/run"
MAX_ROWS = 20_000  # rows sent to the grid; larger runs are filtered by status first
GRID_COLUMNS = (
    C.CANDIDATE_INDEX,
    C.STATUS,
    C.FAILURE_CATEGORY,
    C.SKIP_REASON,
    C.NUM_TOKENS,
    C.PARALLEL_MODE,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.BACKEND,
    C.COMM,
    C.CUDA_GRAPH,
    C.DISPATCH,
    C.SCORE_MS,
    C.RAW_SCORE_MS,
    C.ITER_MEDIAN_MS,
    C.ITER_STDEV_MS,
    C.ITER_P90_MS,
    C.OUTLIER_COUNT,
    C.AUTOTUNE_STATUS,
    C.BOTTLENECK,
    C.ROUTING_STATUS,
)
_META = (
    "filename",
    "uploaded_at",
    "uploaded_by",
    C.SOURCE_FORMAT,
    C.MODEL,
    C.QUANT,
    C.HARDWARE,
    C.WORLD_SIZE,
    "device_name",
    C.TRTLLM_VERSION,
    C.TRTLLM_COMMIT,
    C.RUN_DATE,
    "cuda_version",
    "torch_version",
    "driver_version",
    "ci_url",
    "notes",
    C.NUM_EXPERTS,
    C.TOP_K,
    C.HIDDEN_SIZE,
    C.INTERMEDIATE_SIZE,
    "n_candidates",
    "n_success",
    "n_failed",
    "n_skipped",
    "sha256",
    C.SYNTHETIC,
)


def run_metadata(run: dict[str, Any]) -> dict[str, Any]:
    """The run fields shown in the metadata table, in display order (the file name
    without its directories: no server path is shown)."""
    shown = {k: run.get(k) for k in _META}
    shown["filename"] = display_filename(shown["filename"])
    return shown


def raw_link(run_id: int, run: dict[str, Any]) -> html.Div:
    """The raw-download link: a bench_moe run's upload as uploaded; a dashboard-format
    run's own rows of its (many-run) source file (``service.raw_download``)."""
    href = f"/api/v1/runs/{run_id}/raw"
    if run.get(C.SOURCE_FORMAT) != DASHBOARD_FORMAT:
        return html.Div(
            html.A("Download the raw upload", href=href, className="button", id="run-raw-link")
        )
    return html.Div(
        [
            html.A(
                "Download this run's rows (CSV)",
                href=href,
                className="button",
                id="run-raw-link",
            ),
            html.P(
                "The upload holds several runs (NVIDIA dashboard data); the download holds "
                f"this run's {run.get('n_candidates')} rows, in the source's columns.",
                className="muted",
            ),
        ]
    )


SIGHTING_FIELDS = ("seen", "first seen", "last seen", "arrived as", "file", "CI", "notes", "")


def sightings_block(run_id: int, run: dict[str, Any]) -> Any:
    """Later arrivals of this run's upload (``Store.get_run``'s ``sightings``): when,
    how often, with which CI metadata, and - when they came as other bytes with the same
    measurements - a link to those bytes. Nothing when there were none."""
    sightings = run.get("sightings") or []
    if not sightings:
        return None
    rows = []
    for sg in sightings:
        kept = bool(sg.get("bytes_kept"))
        href = f"/api/v1/runs/{run_id}/sightings/{sg['sighting_id']}/raw"
        rows.append(
            [
                f"{int(sg.get('n_seen') or 1)}×",
                str(sg.get("first_seen_at") or "—")[:16],
                str(sg.get("last_seen_at") or "—")[:16],
                "the same bytes" if sg.get("same_bytes") else "other bytes, same measurements",
                ui.fmt(display_filename(sg.get("filename"))),
                El("td", _ci(sg.get("ci_url")), className="wrap"),
                El("td", ui.fmt(sg.get("notes")), className="wrap"),
                El("a", "download", href=href) if kept else "",
            ]
        )
    return html.Div(
        [
            html.H2("Later arrivals (sightings)"),
            html.P(
                "The upload arrived again; nothing new was stored (the same measurements "
                "count once). Other bytes are kept and can be downloaded.",
                className="muted",
            ),
            StaticHtml(
                El("div", table(SIGHTING_FIELDS, rows, className="recent"), className="scroll-x"),
                **ui.attrs(data_testid="run-sightings"),
            ),
        ]
    )


def _ci(url: Any) -> Any:
    if isinstance(url, str) and url.startswith(("https://", "http://")):
        return El("a", url, href=url, target="_blank", rel="noopener noreferrer")
    return ui.fmt(url)


def layout(data: DashData, **query: Any) -> html.Div:
    run_id = ui.as_int(ui.first(query, "id"))
    if run_id is None:
        return html.Div(
            [
                html.H1("Run"),
                ui.empty_state(
                    "No run id given.",
                    ["open a run from the Overview's recent uploads, or use /run?id=N"],
                ),
            ]
        )
    run = run_detail(data, run_id)
    if run is None:
        return html.Div(
            [
                html.H1(f"Run {run_id}"),
                ui.empty_state(
                    f"Run {run_id} does not exist.",
                    ["it may have been deleted; see the Overview for the runs that exist"],
                    test_id="run-missing",
                ),
            ]
        )
    status = ui.first(query, "status")
    status = status if status in ("success", "failed", "skipped") else None
    cand = ui.as_int(ui.first(query, "cand"))
    warnings = run.get("blocks", {}).get("warnings") or []
    return html.Div(
        [
            dcc.Location(id="run-url", refresh=False),
            dcc.Store(id="run-id", data=run_id),
            dcc.Store(id="run-gridstate", data=gs.parse(query, GRID_COLUMNS).to_store()),
            html.H1(
                [
                    f"Run {run_id}: {run.get(C.MODEL)} · {run.get(C.HARDWARE)} · "
                    f"{run.get(C.QUANT)} · ws {run.get(C.WORLD_SIZE)} ",
                    ui.badge("synthetic") if run.get(C.SYNTHETIC) else "",
                ]
            ),
            html.Div(
                [
                    html.Div(
                        [
                            html.H2("Metadata"),
                            ui.kv_table(run_metadata(run), "run-meta"),
                            raw_link(run_id, run),
                            sightings_block(run_id, run),
                            html.Ul([html.Li(str(w)) for w in warnings], className="warnings")
                            if warnings
                            else None,
                        ],
                        className="third",
                    ),
                    html.Div(
                        [
                            html.H2("Candidates"),
                            lb.group(
                                "show candidates with status",
                                dcc.RadioItems(
                                    id="run-status",
                                    options=[
                                        {"label": "all", "value": "all"},
                                        {"label": "success", "value": "success"},
                                        {"label": "failed", "value": "failed"},
                                        {"label": "skipped", "value": "skipped"},
                                    ],
                                    value=status or "all",
                                    inline=True,
                                ),
                            ),
                            ui.loading(html.Div(id="run-grid-box"), "run-loading"),
                            html.H2("Selected candidate: per-rank and outlier details"),
                            dcc.Store(id="run-cand", data=cand),
                            html.Div(id="run-cand-detail"),
                        ],
                        className="two-thirds",
                    ),
                ],
                className="row",
            ),
        ]
    )


def run_search(run_id: int, status: str | None, cand: int | None, gridstate: Any = None) -> str:
    """The page's URL query: run, status filter, selected candidate, then the grid's
    sort and filter (``run-gridstate``)."""
    status = None if status in (None, "all") else status
    state = gs.from_store(gridstate, GRID_COLUMNS)
    return ui.search_string({"id": run_id, "status": status, "cand": cand, **state.params()})


def update_grid(
    data: DashData, run_id: int, status: str | None, gridstate: Any = None
) -> tuple[Any, str]:
    """Status filter and the kept sort/filter -> (grid, URL search)."""
    status = None if status in (None, "all") else status
    search = run_search(run_id, status, None, gridstate)
    state = gs.from_store(gridstate, GRID_COLUMNS)
    page = run_candidates(data, run_id, status, MAX_ROWS)
    if page is None:
        return ui.empty_state(f"Run {run_id} does not exist."), search
    items, total = page
    if items.empty:
        return ui.empty_state(
            f"No {status or ''} candidates in run {run_id}.", ["set the status filter to “all”"]
        ), search
    note = (
        f"{total:,} candidates"
        if total <= len(items)
        else f"showing the first {len(items):,} of {total:,} candidates; filter by "
        "status to see the rest"
    )
    grid = ui.grid(
        "run-grid",
        items,
        GRID_COLUMNS,
        page_size=25,
        height="460px",
        col_overrides={
            C.SKIP_REASON: {"wrapText": False, "width": 320, "tooltipField": C.SKIP_REASON}
        },
    )
    grid.columnDefs = gs.apply_sort(grid.columnDefs, state)
    if state.filter:
        grid.filterModel = dict(state.filter)
    return html.Div(
        [html.P(note, className="status", **ui.attrs(data_testid="run-count")), grid]
    ), search


def candidate_detail(data: DashData, run_id: int, cand: int | None) -> Any:
    """Every stored field of one candidate, with per_rank_json and extra_json pretty
    printed (as text)."""
    if cand is None:
        return html.P(
            "Select a row to see its per-rank latencies and outlier details.", className="muted"
        )
    row = candidate_fields(data, run_id, cand)
    if row is None:
        return ui.empty_state(f"Candidate {cand} is not in run {run_id}.")
    blobs = {}
    for key in (C.PER_RANK_JSON, C.EXTRA_JSON, C.PER_RANK_NUM_TOKENS):
        text = row.pop(key, None)
        if text:
            try:
                blobs[key] = json.dumps(json.loads(text), indent=1)
            except (TypeError, ValueError):
                blobs[key] = str(text)
    return html.Div(
        [
            html.Div(ui.kv_table(row, "run-cand-fields"), className="half"),
            html.Div(
                [html.Div([html.H3(k), html.Pre(v, className="code")]) for k, v in blobs.items()],
                className="half",
            ),
        ],
        className="row",
    )


def register(app: dash.Dash, data: DashData) -> None:
    @app.callback(
        Output("run-grid-box", "children"),
        Input("run-status", "value"),
        State("run-id", "data"),
        State("run-gridstate", "data"),
    )
    def _grid(status: str | None, run_id: int, gridstate: Any = None) -> Any:
        return update_grid(data, run_id, status, gridstate)[0]

    @app.callback(
        Output("run-url", "search"),
        Input("run-status", "value"),
        Input("run-cand", "data"),
        Input("run-gridstate", "data"),
        State("run-id", "data"),
    )
    def _url(status: str | None, cand: int | None, gridstate: Any, run_id: int) -> str:
        return run_search(run_id, status, cand, gridstate)

    @app.callback(
        Output("run-gridstate", "data"),
        Input("run-grid", "columnState"),
        Input("run-grid", "filterModel"),
        State("run-gridstate", "data"),
        prevent_initial_call=True,
    )
    def _gridstate(column_state: Any, filter_model: Any, kept: Any) -> Any:
        return gs.from_grid(column_state, filter_model, GRID_COLUMNS, kept).to_store()

    @app.callback(
        Output("run-cand", "data"), Input("run-grid", "selectedRows"), prevent_initial_call=True
    )
    def _select(rows: list[dict[str, Any]] | None) -> Any:
        return int(rows[0][C.CANDIDATE_INDEX]) if rows else dash.no_update

    @app.callback(
        Output("run-cand-detail", "children"), Input("run-cand", "data"), State("run-id", "data")
    )
    def _detail(cand: int | None, run_id: int) -> Any:
        return candidate_detail(data, run_id, cand)
