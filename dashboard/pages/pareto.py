"""Pareto page: per model x hardware x precision, the frontier over the candidate cloud.

State and URL: :mod:`dashboard.pages.pareto_query`; controls:
:mod:`~dashboard.pages.pareto_controls`; the clicked point:
:mod:`~dashboard.pages.pareto_detail`. The numbers come from
``service.pareto.cell_pareto``; this module lays them out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dash
import plotly.graph_objects as go
from dash import Input, Output, State, dcc, html

from dashboard import components as ui
from dashboard.figures import pareto_figure
from dashboard.pages.pareto_controls import controls, filter_options
from dashboard.pages.pareto_detail import (
    download_env,
    download_yaml,
    point_from_click,
    render_detail,
)
from dashboard.pages.pareto_downloads import BUTTONS, DOWNLOADS, csv_buttons, csv_download
from dashboard.pages.pareto_query import (
    CONTROLS,
    MULTI,
    ParetoQuery,
    parse_query,
    query_from_controls,
    relax_hints,
)
from service.defaults import default_cell
from service.frames import Cell, DashData
from service.pareto import cell_pareto, filter_values
from service.pareto_csv import Which

PATH = "/pareto"

# Dash copies a clicked point's customdata from the figure as the server sent it, and
# plotly.py sends numpy arrays as typed-array specs ({dtype, bdata, shape}) that Dash
# cannot index: clickData arrived without the point's key and the click did nothing.
# This clientside callback decodes the clicked row from the figure (plain arrays pass
# through), for SVG and WebGL traces alike, and hands the server a plain list.
CLICKED_POINT_JS = """
function (click, figure) {
    const noUpdate = window.dash_clientside.no_update;
    const pt = click && click.points && click.points[0];
    const trace = pt && figure && figure.data && figure.data[pt.curveNumber];
    if (!trace || trace.customdata == null || pt.pointNumber == null) { return noUpdate; }
    const cd = trace.customdata, i = pt.pointNumber;
    let row = null;
    if (Array.isArray(cd)) {
        row = Array.isArray(cd[i]) ? cd[i] : [cd[i]];
    } else if (typeof cd.bdata === "string") {
        const types = {i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array,
                       i4: Int32Array, u4: Uint32Array, f4: Float32Array, f8: Float64Array};
        const Typed = types[cd.dtype];
        if (!Typed) { return noUpdate; }
        const bin = atob(cd.bdata);
        const bytes = new Uint8Array(bin.length);
        for (let k = 0; k < bin.length; k++) { bytes[k] = bin.charCodeAt(k); }
        const values = new Typed(bytes.buffer);
        const shape = String(cd.shape || values.length).split(",").map(Number);
        const width = shape.length > 1 ? shape[1] : 1;
        if (i < 0 || (i + 1) * width > values.length) { return noUpdate; }
        row = Array.from(values.subarray(i * width, (i + 1) * width));
    }
    if (row == null) { return noUpdate; }
    return {points: [{curveNumber: pt.curveNumber, pointNumber: i, customdata: row}]};
}
"""
__all__ = [
    "CLICKED_POINT_JS",
    "PATH",
    "ParetoQuery",
    "download_env",
    "download_yaml",
    "layout",
    "parse_query",
    "point_from_click",
    "query_from_controls",
    "register",
    "render_detail",
    "update_figure",
]


def update_figure(data: DashData, q: ParetoQuery) -> tuple[go.Figure, Any]:
    """Filters -> (figure, status or empty-state children)."""
    if q.cell is None:
        return go.Figure(), ui.empty_state("Pick a model · hardware · precision.")
    ans = cell_pareto(data, q.cell, q.filter, q.axes)
    view = ans.view
    if view.n_cloud == 0:
        return (
            pareto_figure(view.cloud, view.frontier, q.x, q.y, logx=q.logx, logy=q.logy),
            ui.empty_state(
                f"No runs for this filter in {q.cell.label} "
                f"({view.n_matching} candidates match, none successful).",
                [f"try: {h}" for h in relax_hints(q)],
            ),
        )
    fig = pareto_figure(
        view.cloud,
        view.frontier,
        q.x,
        q.y,
        logx=q.logx,
        logy=q.logy,
        n_cloud_total=view.n_cloud,
        cell_label=q.cell.label,
    )
    status = html.Span(
        ui.with_synthetic_note(
            ans.synthetic,
            f"{view.n_matching:,} candidates match the filters; "
            f"{view.n_cloud:,} successful; {len(view.frontier)} on the frontier. "
            f"Routing: {ans.routing.label if ans.routing else 'not recorded'}; "
            f"repeat runs: {'latest run only' if ans.repeats == 'latest' else 'median'}.",
        ),
        className="status",
        **ui.attrs(data_testid="pareto-count"),
    )
    return fig, status


def layout(data: DashData, **query: Any) -> html.Div:
    cells = data.cells()
    q = parse_query(query, cells, default_cell(data))
    if q.cell is None:
        return html.Div(
            [
                html.H1("Pareto"),
                ui.empty_state(
                    "No runs in the database yet.",
                    ["upload a bench_moe JSON via POST /api/v1/runs or `moedash ingest`"],
                ),
            ]
        )
    opts = filter_options(filter_values(data, q.cell))
    # The first figure comes with the page: the first paint needs no callback round
    # trip (the figure callback does not fire on page load).
    figure, status = update_figure(data, q)
    return html.Div(
        [
            dcc.Location(id="pareto-url", refresh=False),
            dcc.Store(id="pareto-point", data=q.point),
            dcc.Store(id="pareto-click"),  # the clicked point, customdata decoded
            html.H1("Pareto frontier"),
            html.P(
                "Each dot is one successful bench_moe candidate; the line is the frontier "
                "(no other candidate is both faster and higher-throughput). Click a point "
                "for its recipe and exportable config.",
                className="lead",
            ),
            controls(cells, q, opts),
            csv_buttons(),
            ui.loading(
                html.Div(
                    [
                        html.Div(status, id="pareto-status"),
                        dcc.Graph(
                            id="pareto-graph",
                            figure=figure,
                            config=ui.GRAPH_CONFIG,
                            className="pareto-graph",
                        ),
                    ]
                ),
                "pareto-loading",
            ),
            ui.loading(html.Div(id="pareto-detail", className="detail"), "pareto-detail-loading"),
            dcc.Download(id="pareto-download"),
            dcc.Download(id="pareto-env-download"),
            *[dcc.Download(id=d) for d in DOWNLOADS.values()],
        ]
    )


def cell_changed(data: DashData, cell_key: str | None) -> list[Any]:
    """A new cell: its filter options, and every filter back to "all"."""
    cell = Cell.from_key(cell_key)
    reset: list[Any] = ["all", [], [], [], []]
    if cell is None:
        return [[] for _ in range(5)] + reset
    opts = filter_options(filter_values(data, cell))
    return [opts[k] for k in ("ws", *MULTI)] + reset


def register(app: dash.Dash, data: DashData) -> None:
    inputs = [Input(f"pareto-{c}", "value") for c in CONTROLS]

    @app.callback(
        [Output(f"pareto-{k}", "options") for k in ("ws", *MULTI)]
        + [Output(f"pareto-{k}", "value") for k in ("ws", *MULTI)],
        Input("pareto-cell", "value"),
        prevent_initial_call=True,
    )
    def _cell_changed(cell_key: str | None) -> list[Any]:
        return cell_changed(data, cell_key)

    @app.callback(
        Output("pareto-graph", "figure"),
        Output("pareto-status", "children"),
        *inputs,
        prevent_initial_call=True,
    )  # layout() drew the first figure
    def _figure(*values: Any) -> tuple[go.Figure, Any]:
        return update_figure(data, query_from_controls(*values))

    clientside: Callable[..., None] = app.clientside_callback  # unannotated in Dash
    clientside(
        CLICKED_POINT_JS,
        Output("pareto-click", "data"),
        Input("pareto-graph", "clickData"),
        State("pareto-graph", "figure"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output("pareto-point", "data"),
        Input("pareto-click", "data"),
        State("pareto-cell", "value"),
        prevent_initial_call=True,
    )
    def _click(click: dict[str, Any] | None, cell_key: str | None) -> Any:
        return point_from_click(data, cell_key, click) or dash.no_update

    @app.callback(
        Output("pareto-detail", "children"),
        Input("pareto-point", "data"),
        Input("pareto-cell", "value"),
    )
    def _detail(point: str | None, cell_key: str | None) -> Any:
        return render_detail(data, cell_key, point)

    @app.callback(Output("pareto-url", "search"), *inputs, Input("pareto-point", "data"))
    def _url(*values: Any) -> str:
        return query_from_controls(*values).search()

    _register_csv(app, data, "frontier")
    _register_csv(app, data, "points")

    @app.callback(
        Output("pareto-download", "data"),
        Input("pareto-download-btn", "n_clicks"),
        State("pareto-cell", "value"),
        State("pareto-point", "data"),
        prevent_initial_call=True,
    )
    def _download(n: int | None, cell_key: str | None, point: str | None) -> Any:
        return download_yaml(data, cell_key, point) if n else dash.no_update

    @app.callback(
        Output("pareto-env-download", "data"),
        Input("pareto-env-btn", "n_clicks"),
        State("pareto-cell", "value"),
        State("pareto-point", "data"),
        prevent_initial_call=True,
    )
    def _download_env(n: int | None, cell_key: str | None, point: str | None) -> Any:
        return download_env(data, cell_key, point) if n else dash.no_update


def _register_csv(app: dash.Dash, data: DashData, which: Which) -> None:
    @app.callback(
        Output(DOWNLOADS[which], "data"),
        Input(BUTTONS[which], "n_clicks"),
        *[State(f"pareto-{c}", "value") for c in CONTROLS],
        prevent_initial_call=True,
    )
    def _csv(n: int | None, *values: Any) -> Any:
        if not n:
            return dash.no_update
        return csv_download(data, which, query_from_controls(*values)) or dash.no_update
