"""Routing skew: one workload under balanced vs skewed routing, side by side.

URL: ``/routing?model=&hardware=&quant=&world_size=&num_tokens=&phase=decode|prefill
&attention=dp|tp&balanced=&skewed=&repeats=median|latest``: the parameters of
``GET /api/v1/routing-skew`` (the older ``ws``, ``tokens`` and ``attn`` are still read),
so a page URL's query is an API query. The answer is ``service.routing.routing_skew``
(the same as ``GET /api/v1/routing-skew``), laid out by
:mod:`~dashboard.pages.routing_view`. A workload is picked from those stored in the
cell, workloads with two or more routing patterns first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dash
import pandas as pd
from dash import Input, Output, State, dcc, html

from analysis import columns as C
from dashboard import components as ui
from dashboard.labelled import action, control
from dashboard.pages.routing_view import render
from service.defaults import default_cell
from service.errors import ServiceError
from service.frames import Cell, DashData
from service.routing import RoutingSkew, SkewQuery, routing_skew, skew_workloads

PATH = "/routing"
_REPEATS = ("median", "latest")


@dataclass(frozen=True)
class RoutingState:
    """Everything the page shows depends on (the URL holds exactly this)."""

    cell: Cell | None
    workload: str | None = None  # "<ws>|<phase>|<dp|tp>|<num_tokens>"
    balanced: str | None = None
    skewed: str | None = None
    repeats: str = "median"

    def query(self) -> SkewQuery | None:
        if self.cell is None or self.workload is None:
            return None
        ws, phase, attn, tokens = self.workload.split("|")
        return SkewQuery(
            model=self.cell.model,
            hardware=self.cell.hardware,
            quant=self.cell.quant,
            world_size=int(ws),
            num_tokens=int(tokens),
            phase=phase,
            attention=attn,
            balanced=self.balanced,
            skewed=self.skewed,
            repeats=self.repeats,
        )

    def search(self) -> str:
        c, parts = self.cell, (self.workload or "|||").split("|")
        return ui.search_string(
            {  # the names of GET /api/v1/routing-skew (SkewQuery): one query language
                "model": c and c.model,
                "hardware": c and c.hardware,
                "quant": c and c.quant,
                "world_size": parts[0],
                "phase": parts[1],
                "attention": parts[2],
                "num_tokens": parts[3],
                "balanced": self.balanced,
                "skewed": self.skewed,
                "repeats": None if self.repeats == "median" else self.repeats,
            }
        )


def workload_key(row: dict[str, Any]) -> str:
    return f"{int(row[C.WORLD_SIZE])}|{row[C.PHASE]}|{row['attention']}|{int(row[C.NUM_TOKENS])}"


def workload_options(workloads: pd.DataFrame) -> list[dict[str, Any]]:
    """Dropdown options, one per stored workload, naming its routing patterns."""
    return [
        {
            "label": f"ws {int(r[C.WORLD_SIZE])} · {r[C.PHASE]} · attention "
            f"{str(r['attention']).upper()} · {int(r[C.NUM_TOKENS])} tokens — {r['patterns']}",
            "value": workload_key(r),
        }
        for r in workloads.to_dict("records")
    ]


# The workload's URL parameters: the API's names (SkewQuery), then the names older
# permalinks used (ws, attn, tokens), still read.
_WORKLOAD_PARAMS = (
    ("world_size", "ws"),
    ("phase", "phase"),
    ("attention", "attn"),
    ("num_tokens", "tokens"),
)


def parse_state(data: DashData, query: dict[str, Any]) -> RoutingState:
    """URL values -> state; a cell or workload that is not stored falls back to the
    first (workloads with two or more patterns first). Pattern labels are kept as
    given, so an unknown one is reported by the service."""
    cells = data.cells()
    want = Cell(
        ui.first(query, "model") or "",
        ui.first(query, "hardware") or "",
        ui.first(query, "quant") or "",
    )
    cell = want if want in cells else (_default_cell(data, cells) if cells else None)
    if cell is None:
        return RoutingState(None)
    keys = [workload_key(r) for r in skew_workloads(data, cell).to_dict("records")]
    asked = "|".join(
        str(ui.first(query, name) or ui.first(query, old) or "") for name, old in _WORKLOAD_PARAMS
    )
    repeats = ui.first(query, "repeats") or "median"
    return RoutingState(
        cell=cell,
        workload=asked if asked in keys else (keys[0] if keys else None),
        balanced=ui.first(query, "balanced"),
        skewed=ui.first(query, "skewed"),
        repeats=repeats if repeats in _REPEATS else "median",
    )


def _default_cell(data: DashData, cells: list[Cell]) -> Cell:
    """The default cell (``service.defaults.default_cell``: the most data) among the
    cells holding a workload with two routing patterns; among all cells when none does."""
    skewed = [
        cell
        for cell in cells
        if len(table := skew_workloads(data, cell)) and int(table["n_patterns"].iloc[0]) > 1
    ]
    return default_cell(data, skewed or cells) or cells[0]


def answer(data: DashData, state: RoutingState) -> RoutingSkew | str:
    """The service's answer, or the reason there is none (text for an empty state)."""
    q = state.query()
    if q is None:
        return "No successful candidates in this cell."
    try:
        return routing_skew(data, q)
    except ServiceError as err:
        return f"{err.field}: {err.msg}"


def update(data: DashData, state: RoutingState) -> tuple[Any, str]:
    """State -> (answer panel, URL search)."""
    got = answer(data, state)
    if isinstance(got, str):
        return ui.empty_state(got, test_id="routing-error"), state.search()
    return render(got), state.search()


def csv_download(data: DashData, state: RoutingState) -> dict[str, Any] | str:
    """The comparison's rows as CSV, or the reason this view has none."""
    got = answer(data, state)
    if isinstance(got, str):
        return got
    if got.comparison is None:
        return "this workload is stored under one routing pattern only; nothing is compared"
    return {"content": got.csv(), "filename": got.filename, "type": "text/csv"}


_control = control  # the label names the dropdown or radio group (dashboard.labelled)


def pattern_options(data: DashData, state: RoutingState) -> list[dict[str, Any]]:
    q = state.query()
    if q is None:
        return []
    table = skew_workloads(data, q.cell)
    row = table[[workload_key(r) == state.workload for r in table.to_dict("records")]]
    labels = str(row["patterns"].iloc[0]).split(", ") if len(row) else []
    return ui.options(labels)


def layout(data: DashData, **query: Any) -> html.Div:
    cells = data.cells()
    state = parse_state(data, query)
    if state.cell is None:
        return html.Div([html.H1("Routing skew"), ui.empty_state("No runs in the database yet.")])
    workloads = skew_workloads(data, state.cell)
    patterns = pattern_options(data, state)
    body, _ = update(data, state)
    return html.Div(
        [
            dcc.Location(id="routing-url", refresh=False),
            html.H1("Routing skew: balanced vs skewed routing"),
            html.P(
                "The guide ranks under perfect (balanced) routing; a real router can be skewed. "
                "One workload under two routing patterns: each ranking, how ranks change and "
                "how much slower each configuration gets (slowdown = skewed score / balanced "
                "score − 1), with the guide's EPLB, DWDP and low-precision-combine advice next "
                "to the numbers that decide it. Scores: the median over repeat runs (or the "
                "latest run).",
                className="lead",
            ),
            html.Div(
                [
                    _control(
                        "model · hardware · precision",
                        dcc.Dropdown(
                            id="routing-cell",
                            options=[{"label": c.label, "value": c.key} for c in cells],
                            value=state.cell.key,
                            clearable=False,
                        ),
                        wide=True,
                    ),
                    _control(
                        "workload (world size · phase · attention · num_tokens — patterns)",
                        dcc.Dropdown(
                            id="routing-workload",
                            options=workload_options(workloads),
                            value=state.workload,
                            clearable=False,
                        ),
                        wide=True,
                    ),
                    _control(
                        "balanced (baseline) pattern",
                        dcc.Dropdown(
                            id="routing-balanced",
                            options=patterns,
                            value=state.balanced,
                            placeholder="balanced where stored",
                        ),
                    ),
                    _control(
                        "skewed pattern",
                        dcc.Dropdown(
                            id="routing-skewed",
                            options=patterns,
                            value=state.skewed,
                            placeholder="first other pattern",
                        ),
                    ),
                    _control(
                        "repeat runs",
                        dcc.RadioItems(
                            id="routing-repeats",
                            options=[
                                {"label": "median", "value": "median"},
                                {"label": "latest run", "value": "latest"},
                            ],
                            value=state.repeats,
                            inline=True,
                        ),
                    ),
                    action(ui.download_button("routing-csv-btn", "Download CSV")),
                    ui.download_note("routing-csv-note"),
                ],
                className="controls",
            ),
            ui.loading(html.Div(body, id="routing-body"), "routing-loading"),
            dcc.Download(id="routing-download"),
        ]
    )


def state_from_controls(
    cell_key: str | None,
    workload: str | None,
    balanced: str | None,
    skewed: str | None,
    repeats: str | None,
) -> RoutingState:
    return RoutingState(
        cell=Cell.from_key(cell_key),
        workload=workload,
        balanced=balanced or None,
        skewed=skewed or None,
        repeats=repeats if repeats in _REPEATS else "median",
    )


CONTROLS = ("cell", "workload", "balanced", "skewed", "repeats")


def register(app: dash.Dash, data: DashData) -> None:
    @app.callback(
        Output("routing-workload", "options"),
        Output("routing-workload", "value"),
        Input("routing-cell", "value"),
        prevent_initial_call=True,
    )
    def _cell(cell_key: str | None) -> tuple[list[dict[str, Any]], str | None]:
        cell = Cell.from_key(cell_key)
        table = skew_workloads(data, cell) if cell else pd.DataFrame()
        opts = workload_options(table) if len(table) else []
        return opts, (opts[0]["value"] if opts else None)

    @app.callback(
        Output("routing-balanced", "options"),
        Output("routing-skewed", "options"),
        Output("routing-balanced", "value"),
        Output("routing-skewed", "value"),
        Input("routing-workload", "value"),
        State("routing-cell", "value"),
        prevent_initial_call=True,
    )
    def _workload(workload: str | None, cell_key: str | None) -> tuple[Any, ...]:
        state = state_from_controls(cell_key, workload, None, None, None)
        opts = pattern_options(data, state)
        return opts, opts, None, None

    @app.callback(
        Output("routing-body", "children"),
        Output("routing-url", "search"),
        *[Input(f"routing-{c}", "value") for c in CONTROLS],
        prevent_initial_call=True,
    )  # layout() rendered the first answer
    def _update(*values: Any) -> tuple[Any, str]:
        return update(data, state_from_controls(*values))

    @app.callback(
        Output("routing-download", "data"),
        Output("routing-csv-note", "children"),
        Input("routing-csv-btn", "n_clicks"),
        *[State(f"routing-{c}", "value") for c in CONTROLS],
        prevent_initial_call=True,
    )
    def _csv(n: int | None, *values: Any) -> Any:
        if not n:
            return dash.no_update, dash.no_update
        return ui.download_or_reason(csv_download(data, state_from_controls(*values)))
