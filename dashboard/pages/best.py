"""Best by workload: ``service.best.cell_best_table`` as sortable, filterable grids.

URL: ``/best?model=&hardware=&quant=&grouping=bench_moe|dashboard&world_size=&dispatch=
&repeats=median|latest``.
Groupings: bench_moe's own (run, num_tokens, parallel_mode) and NVIDIA's dashboard
(world size, num_tokens, dispatch, CUDA graph, attention family). One routing pattern
at a time (default: balanced where measured); the dashboard grouping ranks
configurations, repeat runs combined to their median (or the latest run only).
"""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import Input, Output, State, dcc, html

from analysis.best import (
    GROUPINGS,
    IS_TIE,
)
from analysis.identity import REPEATS
from analysis.tables import to_csv_text
from dashboard import components as ui
from dashboard import grid_state as gs
from dashboard.api_query import scope_values
from dashboard.pages.best_controls import controls, dispatch_choice_options
from dashboard.pages.best_grid import best_grid, display_columns, with_decision_columns
from service.best import CellBest, cell_best, default_grouping, dispatch_options, world_sizes
from service.defaults import default_cell
from service.errors import ServiceError
from service.filenames import file_part
from service.frames import Cell, DashData

PATH = "/best"
__all__ = ["PATH", "csv_download", "display_columns", "layout", "register", "update_table"]


def grid_fields() -> list[str]:
    """The fields a URL sort or filter may name (every grouping's columns)."""
    return list(dict.fromkeys(display_columns("bench_moe") + display_columns("dashboard")))


def _answer(
    data: DashData, cell: Cell, grouping: str, wsi: int | None, dispatch: Any, repeats: Any
) -> CellBest | str:
    """The service's answer for the controls, or why there is none."""
    try:
        return cell_best(
            data,
            cell,
            grouping,
            wsi,
            str(dispatch) if dispatch not in (None, "", []) else None,
            repeats if repeats in REPEATS else "median",
        )
    except ServiceError as err:
        return err.msg


def layout(data: DashData, **query: Any) -> html.Div:
    cells = data.cells()
    if not cells:
        return html.Div(
            [html.H1("Best by workload"), ui.empty_state("No runs in the database yet.")]
        )
    scope = scope_values(query)  # the API's names (world_size ...); old ws still read
    want = Cell(scope.get("model", ""), scope.get("hardware", ""), scope.get("quant", ""))
    cell = want if want in cells else (default_cell(data) or cells[0])
    # top-3-only data (NVIDIA's dashboard) reads best in its own grouping
    fallback = default_grouping(data, cell)
    grouping = ui.first(query, "grouping") or fallback
    grouping = grouping if grouping in GROUPINGS else fallback
    ws = scope.get("world_size")
    sizes = world_sizes(data, cell)
    patterns, default = dispatch_options(data, cell)
    dispatch = ui.first(query, "dispatch")
    dispatch = dispatch if dispatch in patterns else default
    repeats = ui.first(query, "repeats") or "median"
    repeats = repeats if repeats in REPEATS else "median"
    state = gs.parse(query, grid_fields()).to_store()
    # The first table comes with the page (no blank area, no callback round trip; the
    # table callback fires on changes only).
    body, _ = update_table(data, cell.key, grouping, ws, dispatch, repeats, state)
    return html.Div(
        [
            dcc.Location(id="best-url", refresh=False),
            dcc.Store(id="best-gridstate", data=state),
            html.H1("Best configuration by workload"),
            html.P(
                "Winner per workload with its runner-up. Margin = how much slower the "
                "runner-up is; a tie means the margin is within the measurement noise band "
                "(run-to-run spread where a configuration was measured in several runs, "
                "else the within-run spread; 3 % when unknown). One routing pattern at a "
                "time. Sort and filter in the column headers.",
                className="lead",
            ),
            controls(cells, cell, grouping, ws, sizes, patterns, default, dispatch, repeats),
            ui.loading(html.Div(body, id="best-body"), "best-loading"),
            dcc.Download(id="best-download"),
        ]
    )


def update_table(
    data: DashData,
    cell_key: str | None,
    grouping: str | None,
    ws: Any,
    dispatch: Any = None,
    repeats: Any = None,
    gridstate: Any = None,
) -> tuple[Any, str]:
    """Controls and the grid's kept sort/filter (``best-gridstate``) -> (grid or empty
    state, URL search)."""
    cell = Cell.from_key(cell_key)
    grouping = grouping if grouping in GROUPINGS else "bench_moe"
    wsi = None if ws in (None, "all") else ui.as_int(ws)
    mode = repeats if repeats in REPEATS else "median"
    state = gs.from_store(gridstate, grid_fields())
    search = best_search(cell_key, grouping, ws, dispatch, repeats, state)
    if cell is None:
        return ui.empty_state("Pick a model · hardware · precision."), search
    got = _answer(data, cell, grouping, wsi, dispatch, mode)
    if isinstance(got, str):
        return ui.empty_state(got, ["pick a routing pattern from the list"]), search
    table = got.table
    if table.empty:
        return ui.empty_state(
            f"No successful candidates for {cell.label}"
            + (f" at world size {wsi}" if wsi else "")
            + f" with routing {got.routing.label}.",
            ["choose “all” world sizes", "pick another routing pattern", "pick another cell"],
        ), search
    n_tie = int(table[IS_TIE].sum())
    pooled = (
        "per run (bench_moe's own rankings)"
        if grouping == "bench_moe"
        else ("median over repeat runs" if mode == "median" else "latest run only")
    )
    where = cell.label + (f" · {wsi} GPUs" if wsi else "")
    counts = (
        f"{where}: {len(table):,} workloads; {n_tie} ties within noise. "
        f"Routing: {got.routing.label}. Repeats: {pooled}."
    )
    summary = html.P(
        ui.with_synthetic_note(data.is_synthetic(cell), counts),
        className="status",
        **ui.attrs(data_testid="best-count"),
    )
    return html.Div([summary, best_grid(table, grouping, state)]), search


def best_search(
    cell_key: str | None,
    grouping: str | None,
    ws: Any,
    dispatch: Any,
    repeats: Any,
    state: gs.GridState | None = None,
) -> str:
    """The page's URL query: controls, then the grid's sort and filter."""
    cell = Cell.from_key(cell_key)
    mode = repeats if repeats in REPEATS else "median"
    return ui.search_string(
        {
            "model": cell and cell.model,
            "hardware": cell and cell.hardware,
            "quant": cell and cell.quant,
            "grouping": grouping if grouping in GROUPINGS else "bench_moe",
            "world_size": None if ws in (None, "all") else ui.as_int(ws),
            "dispatch": dispatch if isinstance(dispatch, str) and dispatch else None,
            "repeats": None if mode == "median" else mode,
            **(state or gs.GridState()).params(),
        }
    )


def csv_download(
    data: DashData,
    cell_key: str | None,
    grouping: str | None,
    ws: Any,
    dispatch: Any = None,
    repeats: Any = None,
) -> dict[str, Any] | None:
    """The ``dcc.Download`` payload of the table the controls show (None without one);
    named for the cell, grouping, routing pattern and repeats mode."""
    cell = Cell.from_key(cell_key)
    if cell is None:
        return None
    grouping = grouping if grouping in GROUPINGS else "bench_moe"
    wsi = None if ws in (None, "all") else ui.as_int(ws)
    mode = repeats if repeats in REPEATS else "median"
    got = _answer(data, cell, grouping, wsi, dispatch, mode)
    if isinstance(got, str):
        return None
    pattern = "_".join(got.routing.used) or "norouting"
    ws_part = f"_ws{wsi}" if wsi else ""
    # the repeats part says what the page says: bench_moe's grouping ranks per run
    pooled = "per_run" if grouping == "bench_moe" else mode
    name = "_".join(
        file_part(p)
        for p in ("best", cell.model, cell.hardware, cell.quant + ws_part, grouping, pattern)
    )
    name += f"_{pooled}.csv"
    shown = with_decision_columns(got.table, grouping)
    cols = (
        [c for c in display_columns(grouping) if c in shown]
        if not shown.empty
        else display_columns(grouping)
    )
    table = shown if not shown.empty else pd.DataFrame(columns=cols)
    return {"content": to_csv_text(table, cols), "filename": name, "type": "text/csv"}


def register(app: dash.Dash, data: DashData) -> None:
    controls = [
        Input("best-cell", "value"),
        Input("best-grouping", "value"),
        Input("best-ws", "value"),
        Input("best-dispatch", "value"),
        Input("best-repeats", "value"),
    ]

    @app.callback(
        Output("best-ws", "options"),
        Output("best-ws", "value"),
        Output("best-dispatch", "options"),
        Output("best-dispatch", "value"),
        Input("best-cell", "value"),
        prevent_initial_call=True,
    )
    def _cell(cell_key: str | None) -> tuple[list[dict[str, Any]], str, list[Any], Any]:
        return cell_controls(data, cell_key)

    @app.callback(
        Output("best-body", "children"),
        Output("best-url", "search"),
        *controls,
        State("best-gridstate", "data"),
        prevent_initial_call=True,  # layout() drew the first table
    )
    def _table(
        cell_key: str | None,
        grouping: str | None,
        ws: Any,
        dispatch: Any = None,
        repeats: Any = None,
        gridstate: Any = None,
    ) -> tuple[Any, str]:
        return update_table(data, cell_key, grouping, ws, dispatch, repeats, gridstate)

    def _gridstate(
        column_state: Any, filter_model: Any, values: list[Any], kept: Any
    ) -> tuple[dict[str, Any], str]:
        cell_key, grouping, ws, dispatch, repeats = values
        return grid_changed(
            column_state, filter_model, cell_key, grouping, ws, dispatch, repeats, kept=kept
        )

    gs.register_grid_state(app, "best", [str(c.component_id) for c in controls], _gridstate)

    @app.callback(
        Output("best-download", "data"),
        Input("best-csv-btn", "n_clicks"),
        State("best-cell", "value"),
        State("best-grouping", "value"),
        State("best-ws", "value"),
        State("best-dispatch", "value"),
        State("best-repeats", "value"),
        prevent_initial_call=True,
    )
    def _csv(
        n: int | None,
        cell_key: str | None,
        grouping: str | None,
        ws: Any,
        dispatch: Any = None,
        repeats: Any = None,
    ) -> Any:
        if not n:
            return dash.no_update
        return csv_download(data, cell_key, grouping, ws, dispatch, repeats)


def grid_changed(
    column_state: Any,
    filter_model: Any,
    cell_key: str | None,
    grouping: str | None,
    ws: Any,
    dispatch: Any = None,
    repeats: Any = None,
    kept: Any = None,
) -> tuple[dict[str, Any], str]:
    """The grid sorted or filtered -> (kept grid state, URL search with it); ``kept`` is
    the state held so far (what the grid has not reported yet stays as it was)."""
    state = gs.from_grid(column_state, filter_model, grid_fields(), kept)
    return state.to_store(), best_search(cell_key, grouping, ws, dispatch, repeats, state)


def cell_controls(
    data: DashData, cell_key: str | None
) -> tuple[list[dict[str, Any]], str, list[dict[str, Any]], Any]:
    """A new cell: its world sizes ("all" chosen) and routing patterns (its default
    chosen)."""
    cell = Cell.from_key(cell_key)
    sizes = world_sizes(data, cell) if cell else []
    patterns, default = dispatch_options(data, cell) if cell else ([], "")
    ws_opts = [{"label": "all", "value": "all"}, *ui.options(sizes)]
    return ws_opts, "all", dispatch_choice_options(patterns, default), default or None
