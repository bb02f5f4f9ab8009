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
import pandas as pd
from dash import Input, Output, State, dcc, html

from analysis.crossover_switches import NOT_COMPARED, ROBUST, TIE
from analysis.crossovers import AXIS_UNITS, OPTION, SERIES, SERIES_LABEL
from analysis.tables import to_csv_text
from dashboard import components as ui
from dashboard.crossover_figures import crossover_figure, option_colors
from dashboard.pages.crossovers_form import (
    ALL,
    AXIS_LABELS,
    FILTERS,
    OPTION_LABELS,
    Form,
    make_form,
    parse_query,
)
from service.crossovers import CrossoverAnswer, crossover_answer, slice_choices
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
GRID_COLUMNS: tuple[str, ...] = (
    SERIES_LABEL,
    "switch",
    "before",
    "after",
    "bracket_lo",
    "bracket_hi",
    "verdict",
    "margin_lo_pct",
    "margin_hi_pct",
    "noise_lo_pct",
    "noise_hi_pct",
    "n_before",
    "n_after",
    "noise_source",
    "before_at_lo_ms",
    "after_at_lo_ms",
    "before_at_hi_ms",
    "after_at_hi_ms",
)


def headers(axis: str) -> dict[str, str]:
    """Grid header per switch column, with units (the axis unit for brackets)."""
    unit = AXIS_UNITS.get(axis, "")
    return {
        SERIES_LABEL: "series",
        "switch": "#",
        "before": "rank 1 before",
        "after": "rank 1 after",
        "bracket_lo": f"bracket low ({unit})",
        "bracket_hi": f"bracket high ({unit})",
        "n_before": "axis points before",
        "n_after": "axis points after",
        "margin_lo_pct": "margin at low (%)",
        "margin_hi_pct": "margin at high (%)",
        "noise_lo_pct": "noise band at low (%)",
        "noise_hi_pct": "noise band at high (%)",
        "verdict": "verdict",
        "noise_source": "noise from",
        "before_at_lo_ms": "before at low (ms)",
        "after_at_lo_ms": "after at low (ms)",
        "before_at_hi_ms": "before at high (ms)",
        "after_at_hi_ms": "after at high (ms)",
    }


def compute(data: DashData, form: Form) -> CrossoverAnswer:
    """The service answer for the page's form (InvalidQuery on a value not stored)."""
    return crossover_answer(data, form.query())


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


def _pick_series(ans: CrossoverAnswer, wanted: str | None) -> str | None:
    labels = [str(s) for s in ans.result.series[SERIES_LABEL]]
    if wanted in labels:
        return wanted
    with_switch = ans.result.series[ans.result.series["n_switches"] > 0]
    return str(with_switch[SERIES_LABEL].iloc[0]) if len(with_switch) else (labels or [None])[0]


def _grid(switches: pd.DataFrame, axis: str) -> Any:
    overrides: dict[str, dict[str, Any]] = {c: {"headerName": h} for c, h in headers(axis).items()}
    overrides["verdict"]["cellClassRules"] = {"tie-cell": f"params.value !== '{ROBUST}'"}
    overrides[SERIES_LABEL]["minWidth"] = 260
    return ui.grid(
        "xo-switch-grid",
        switches,
        list(GRID_COLUMNS),
        page_size=25,
        height="420px",
        col_overrides=overrides,
    )


def _summary(data: DashData, ans: CrossoverAnswer) -> html.P:
    sw = ans.result.switches
    verdicts = sw["verdict"].value_counts() if len(sw) else pd.Series(dtype=int)
    prov = ans.provenance
    text = (
        f"{len(ans.result.series):,} series, {len(sw):,} switches: "
        f"{int(verdicts.get(ROBUST, 0))} robust, {int(verdicts.get(TIE, 0))} ties within "
        f"noise, {int(verdicts.get(NOT_COMPARED, 0))} not compared. From "
        f"{prov['n_candidates']:,} successful candidates in {len(prov['run_ids'])} "
        f"run{'s' if len(prov['run_ids']) != 1 else ''} "
        f"(TensorRT-LLM {', '.join(prov['trtllm_versions']) or '—'})."
    )
    return html.P(
        ui.with_synthetic_note(bool(prov["synthetic"]), text),
        className="status",
        **{"data-testid": "xo-summary"},
    )


def render(data: DashData, form: Form) -> tuple[Any, str | None, list[Any]]:
    """(body, charted series label, series dropdown options) for ``form``."""
    try:
        ans = compute(data, form)
    except InvalidQuery as err:
        msg = f"{err.field}: {err.msg}"
        return ui.empty_state(msg, ["pick a stored value"], test_id="xo-invalid"), None, []
    res = ans.result
    if res.series.empty:
        empty = ui.empty_state(
            "No comparable configurations in this slice.",
            ["widen a filter (choose “all”)", "pick another axis or option"],
            test_id="xo-empty",
        )
        return empty, None, []
    chosen = _pick_series(ans, form.series)
    s_id = int(res.series.loc[res.series[SERIES_LABEL] == chosen, SERIES].iloc[0])
    colors = option_colors(res.points[OPTION].astype(str).unique().tolist())
    fig = crossover_figure(
        res.points[res.points[SERIES] == s_id],
        res.segments[res.segments[SERIES] == s_id],
        ans.axis,
        f"{chosen}: rank-1 {OPTION_LABELS[ans.option]} along {AXIS_LABELS[ans.axis]}",
        colors,
    )
    table = (
        _grid(res.switches, ans.axis)
        if len(res.switches)
        else ui.empty_state(
            "Rank 1 never switches in this slice.",
            ["one option wins at every axis value of every series"],
            test_id="xo-no-switches",
        )
    )
    body = html.Div(
        [
            _summary(data, ans),
            html.Div(dcc.Graph(id="xo-graph", figure=fig), className="pareto-graph"),
            html.H3("Switches (every series in the slice)"),
            html.A(
                "this answer as JSON (API)",
                href=form.api_href(),
                target="_blank",
                **{"data-testid": "xo-api-link"},
            ),
            table,
        ]
    )
    series_opts = [{"label": s, "value": s} for s in res.series[SERIES_LABEL].astype(str)]
    return body, chosen, series_opts


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


def _control(text: str, comp: Any, wide: bool = False) -> html.Div:
    return html.Div(
        [html.Label(text, htmlFor=comp.id), comp], className="control wide" if wide else "control"
    )


def layout(data: DashData, **query: Any) -> html.Div:
    head = [
        html.H2("Crossover explorer"),
        html.P(METHOD, className="lead", **{"data-testid": "xo-method"}),
    ]
    cells = data.cells()
    if not cells:
        return html.Div([*head, ui.empty_state("No runs in the database yet.")])
    form = parse_query(query, cells[0])
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
        html.Div(
            [html.Label("\u00a0"), ui.download_button("xo-csv-btn", "Download switches CSV")],
            className="control",
        ),
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
