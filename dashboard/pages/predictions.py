"""Predictions: how the answers between and beyond the measurements have fared here.

URL: ``/predictions?model=&hardware=&quant=&confidence=``: the parameters of
``GET /api/v1/predictions/validation``, so a page URL's query is an API query. The
answer is ``service.predictions.validation`` (the API's), laid out by
:mod:`~dashboard.pages.predictions_view`: leave-one-token-count-out and
leave-one-model-out regret of the predicted pick against the nearest-workload answer
and the published tree, interval coverage, and what to measure next with each bench_moe
command. The download is the held-out token counts as CSV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from dashboard import components as ui
from dashboard.labelled import action, control
from dashboard.pages import predictions_view as V
from service.defaults import default_cell
from service.errors import ServiceError
from service.frames import Cell, DashData
from service.predictions import validation

PATH = "/predictions"
CONFIDENCES = (0.8, 0.9, 0.95)


@dataclass(frozen=True)
class PredictionsState:
    """Everything the page shows depends on (the URL holds exactly this)."""

    cell: Cell | None
    confidence: float = 0.9

    def search(self) -> str:
        c = self.cell
        return ui.search_string(
            {  # the names of GET /api/v1/predictions/validation
                "model": c and c.model,
                "hardware": c and c.hardware,
                "quant": c and c.quant,
                "confidence": None if self.confidence == 0.9 else self.confidence,
            }
        )


def _confidence(value: Any) -> float:
    try:
        got = float(str(value))
    except (TypeError, ValueError):
        return 0.9
    return got if got in CONFIDENCES else 0.9


def parse_state(data: DashData, query: dict[str, Any]) -> PredictionsState:
    """URL values -> state; a cell that is not stored falls back to the default cell."""
    cells = data.cells()
    want = Cell(ui.first(query, "model") or "", ui.first(query, "hardware") or "",
                ui.first(query, "quant") or "")  # fmt: skip
    cell = want if want in cells else (default_cell(data) if cells else None)
    return PredictionsState(cell, _confidence(ui.first(query, "confidence")))


def answer(data: DashData, state: PredictionsState) -> dict[str, Any] | str:
    """The service's answer (the API's), or the reason there is none."""
    if state.cell is None:
        return "No runs in the database yet."
    c = state.cell
    try:
        return validation(data, c.model, c.hardware, c.quant, state.confidence)
    except ServiceError as err:
        return f"{err.field}: {err.msg}"


def update(data: DashData, state: PredictionsState) -> tuple[Any, str]:
    """State -> (answer panel, URL search)."""
    got = answer(data, state)
    if isinstance(got, str):
        return ui.empty_state(got, test_id="pred-error"), state.search()
    return V.render(got), state.search()


def csv_download(data: DashData, state: PredictionsState) -> dict[str, Any] | str:
    """The held-out token counts as CSV, named for what it holds, or why there is none."""
    got = answer(data, state)
    if isinstance(got, str):
        return got
    frame = V.held_out_frame(got)
    if frame.empty:
        return "no token count of this cell could be held out and predicted"
    c = state.cell or Cell("", "", "")
    name = ui.file_slug(f"held-out-token-counts_{c.model}_{c.hardware}_{c.quant}")
    text = frame.rename(columns=V.HELD_OUT_COLUMNS).to_csv(index=False)
    return {"content": text, "filename": f"{name}.csv", "type": "text/csv"}


def layout(data: DashData, **query: Any) -> html.Div:
    state = parse_state(data, query)
    if state.cell is None:
        return html.Div([html.H1("Predictions"), ui.empty_state("No runs in the database yet.")])
    return html.Div(
        [
            dcc.Location(id="pred-url", refresh=False),
            html.H1("Predictions: how far to trust answers between the measurements"),
            html.P(
                "Every measured token count of the cell held out in turn and predicted from "
                "the rest; every model of its GPU and quant held out and predicted from the "
                "others by its shape. Regret: how much slower the pick measured than the "
                "fastest measured there. A source that keeps only its top 3 per workload does "
                "not say how slow a pick it dropped was: those are counted, not scored.",
                className="lead",
            ),
            html.Div(
                [
                    control(
                        "model · hardware · precision",
                        dcc.Dropdown(
                            id="pred-cell",
                            options=[{"label": c.label, "value": c.key} for c in data.cells()],
                            value=state.cell.key,
                            clearable=False,
                        ),
                        wide=True,
                    ),
                    control(
                        "interval confidence",
                        dcc.RadioItems(
                            id="pred-confidence",
                            options=[
                                {"label": f"{round(100 * c)} %", "value": c} for c in CONFIDENCES
                            ],  # fmt: skip
                            value=state.confidence,
                            inline=True,
                        ),
                    ),
                    action(
                        ui.download_button("pred-csv-btn", "Download held-out token counts (CSV)")
                    ),
                    ui.download_note("pred-csv-note"),
                ],
                className="controls",
            ),
            # filled by the callback on load: the held-out refits of a cell seen for the
            # first time take seconds, under the spinner rather than before the page
            ui.loading(html.Div(id="pred-body"), "pred-loading", answer=True),
            dcc.Download(id="pred-download"),
        ]
    )


def state_from_controls(cell_key: str | None, confidence: Any) -> PredictionsState:
    return PredictionsState(Cell.from_key(cell_key), _confidence(confidence))


def register(app: dash.Dash, data: DashData) -> None:
    @app.callback(
        Output("pred-body", "children"),
        Output("pred-url", "search"),
        Input("pred-cell", "value"),
        Input("pred-confidence", "value"),
    )  # also on load: the first answer and the full URL (a permalink)
    def _update(cell_key: str | None, confidence: Any) -> tuple[Any, str]:
        return update(data, state_from_controls(cell_key, confidence))

    @app.callback(
        Output("pred-download", "data"),
        Output("pred-csv-note", "children"),
        Input("pred-csv-btn", "n_clicks"),
        State("pred-cell", "value"),
        State("pred-confidence", "value"),
        prevent_initial_call=True,
    )
    def _csv(n: int | None, cell_key: str | None, confidence: Any) -> Any:
        if not n:
            return dash.no_update, dash.no_update
        return ui.download_or_reason(csv_download(data, state_from_controls(cell_key, confidence)))
