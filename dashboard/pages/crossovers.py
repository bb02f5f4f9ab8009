"""Crossover explorer: where the rank-1 option switches along an axis, for any slice.

The numbers are the API's: ``service.crossovers.crossover_answer`` answers the page's
form (``crossovers_form``) exactly as ``GET /api/v1/crossovers`` answers the same query
string. The chart shows one series (chosen in "series (chart)"); the table lists every
switch of every series in the slice; the CSV holds that table (all columns, as the API's
``format=csv``) and is named for the slice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from analysis.tables import to_csv_text
from dashboard import components as ui
from dashboard.labelled import action, control
from dashboard.pages.crossovers_form import (
    ALL,
    AXIS_LABELS,
    FILTERS,
    OPTION_LABELS,
    Form,
    make_form,
    parse_query,
)
from dashboard.pages.crossovers_render import compute, render
from service.crossovers import slice_choices
from service.defaults import default_cell
from service.errors import InvalidQuery
from service.frames import DashData

PATH = "/crossovers"
IDS: tuple[str, ...] = (*(f"xo-{f}" for f in FILTERS), "xo-option", "xo-axis", "xo-series")
METHOD = (
    "Per axis value, each option's score is the score (ms) of its best configuration: the "
    "lowest over every other dimension, where a configuration measured in several runs "
    "counts with its median. Rank 1 = lowest score (exact ties: alphabetical). A switch "
    "is a change of rank 1 between neighbouring axis values; its bracket is the last "
    "axis value of the old winner and the first of the new. Margins: how much slower the "
    "loser of the pair is at each bracket end (%). Robust when both margins exceed the "
    "noise band 100·√(s₁²+s₂²) of the two configurations' relative spreads (run-to-run "
    "where repeated, within-run otherwise, 3 % when unknown); else a tie within noise; "
    "not compared when one of the pair was not measured at a bracket end. One series per "
    "model · hardware · quant · world size · phase · attention · dispatch."
)
_FILTER_LABELS = {
    "model": "model",
    "hardware": "hardware",
    "quant": "precision (quant)",
    "world_size": "world size (GPUs)",
    "phase": "phase (CUDA graph)",
    "attention": "attention",
    "dispatch": "dispatch pattern",
}
_VALUE_LABELS = {
    "phase": {"decode": "decode (CUDA graph on)", "prefill": "prefill (CUDA graph off)"},
    "attention": {"dp": "DP", "tp": "TP"},
}


def _options(values: list[Any], current: Any, labels: dict[str, str] | None = None) -> list[Any]:
    opts = [{"label": "all", "value": ALL}]
    opts += [{"label": (labels or {}).get(str(v), str(v)), "value": v} for v in values]
    if current is not None and current not in values:
        opts.append({"label": f"{current} (not stored)", "value": current})
    return opts


def filter_options(data: DashData, form: Form) -> list[list[Any]]:
    """Dropdown options per filter: the values stored in the slice so far."""
    choices = slice_choices(data, form.query())
    return [_options(choices.get(f, []), getattr(form, f), _VALUE_LABELS.get(f)) for f in FILTERS]


def update(data: DashData, *values: Any) -> tuple[Any, ...]:
    """Controls -> (body, URL search, series value, series options, filter options...)."""
    form = make_form(*values)
    body, chosen, series_opts = render(data, form)
    form = replace(form, series=chosen)
    return (body, form.search(), chosen, series_opts, *filter_options(data, form))


def csv_download(data: DashData, form: Form) -> dict[str, Any] | None:
    """Every switch of the slice (all columns, the API's ``format=csv``), named for it."""
    try:
        ans = compute(data, form)
    except InvalidQuery:
        return None
    return {
        "content": to_csv_text(ans.result.switches),
        "filename": f"{ans.name}.csv",
        "type": "text/csv",
    }


_control = control  # the label names the dropdown or radio group (dashboard.labelled)


def layout(data: DashData, **query: Any) -> html.Div:
    head = [
        html.H1("Crossover explorer"),
        html.P(METHOD, className="lead", **ui.attrs(data_testid="xo-method")),
    ]
    cells = data.cells()
    if not cells:
        return html.Div([*head, ui.empty_state("No runs in the database yet.")])
    form = parse_query(query, default_cell(data, cells))
    options = filter_options(data, form)
    filters = [
        _control(
            _FILTER_LABELS[f],
            dcc.Dropdown(
                id=f"xo-{f}",
                options=opts,
                value=getattr(form, f) if getattr(form, f) is not None else ALL,
                clearable=False,
            ),
            wide=f == "model",
        )
        for f, opts in zip(FILTERS, options, strict=True)
    ]
    choose = [
        _control(
            "option (what competes)",
            dcc.RadioItems(
                id="xo-option",
                options=[{"label": v, "value": k} for k, v in OPTION_LABELS.items()],
                value=form.option,
            ),
            wide=True,
        ),
        _control(
            "axis (log scale)",
            dcc.RadioItems(
                id="xo-axis",
                options=[{"label": v, "value": k} for k, v in AXIS_LABELS.items()],
                value=form.axis,
            ),
            wide=True,
        ),
        _control(
            "series (chart)",
            dcc.Dropdown(id="xo-series", options=[], value=form.series, clearable=False),
            wide=True,
        ),
        action(ui.download_button("xo-csv-btn", "Download switches CSV")),
    ]
    return html.Div(
        [
            dcc.Location(id="xo-url", refresh=False),
            *head,
            html.Div(filters, className="controls"),
            html.Div(choose, className="controls"),
            ui.loading(html.Div(id="xo-body"), "xo-loading"),
            dcc.Download(id="xo-download"),
        ]
    )


def register(app: dash.Dash, data: DashData) -> None:
    @app.callback(
        Output("xo-body", "children"),
        Output("xo-url", "search"),
        Output("xo-series", "value"),
        Output("xo-series", "options"),
        *[Output(f"xo-{f}", "options") for f in FILTERS],
        *[Input(i, "value") for i in IDS],
    )
    def _update(*values: Any) -> tuple[Any, ...]:
        return update(data, *values)

    @app.callback(
        Output("xo-download", "data"),
        Input("xo-csv-btn", "n_clicks"),
        *[State(i, "value") for i in IDS],
        prevent_initial_call=True,
    )
    def _csv(n: int | None, *values: Any) -> Any:
        return csv_download(data, make_form(*values)) if n else dash.no_update
