"""History across TensorRT-LLM versions for one slice (model · GPU · quant · world size ·
phase): the score of a workload x configuration (or each workload's best) over the
versions, the frontier of each version overlaid, and the frontier change between two
chosen versions.

The numbers are the API's: ``service.history.history`` / ``frontiers`` /
``frontier_change`` answer the page's form (:mod:`~dashboard.pages.history_form`) as
``GET /api/v1/history``, ``/history/frontier`` and ``/history/frontier-change`` answer
the same parameters. Laid out by :mod:`~dashboard.pages.history_view`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from analysis.tables import to_csv_text
from dashboard import components as ui
from dashboard.pages import history_slices as S
from dashboard.pages.compare import triggered_id
from dashboard.pages.history_form import (
    ALL,
    BEST,
    DROPDOWNS,
    FIELDS,
    SLICE,
    Form,
    make_form,
    parse_query,
)
from dashboard.pages.history_view import (
    HISTORY_CSV_COLUMNS,
    history_answer,
    render,
    series_choices,
    version_list,
    versions_frame,
)
from service.frames import DashData

PATH = "/history"
IDS: tuple[str, ...] = tuple(f"hist-{f}" for f in FIELDS)
_SLICE_LABELS = {
    "model": "model",
    "hardware": "GPU (hardware)",
    "quant": "precision (quant)",
    "world_size": "world size (GPUs)",
    "phase": "phase",
}
BY_OPTIONS = [
    {"label": "version (repeat runs pooled)", "value": "version"},
    {"label": "run (version · date · commit)", "value": "run"},
]
REPEAT_OPTIONS = [
    {"label": "median over repeat runs", "value": "median"},
    {"label": "latest run only", "value": "latest"},
]
EMPTY_HINTS = [
    "upload bench_moe reports of several TensorRT-LLM versions of one model · GPU · "
    "quant: `moedash upload out/*.json --trtllm-version 1.2.0rc28`",
]


def with_defaults(data: DashData, form: Form) -> Form:
    """The slice with the most versions for every slice key the form leaves unset (all
    of them when it names no model, GPU or quant); base / head the last two versions."""
    if any(getattr(form, k) is None for k in SLICE):
        default = S.default_slice(data)
        if form.model is not None or form.hardware is not None or form.quant is not None:
            # keep what the form names; fill the rest from the stored slices under it
            table = S.slice_table(data)
            for key in SLICE:
                value = getattr(form, key)
                if value is not None:
                    table = table[table[key] == value]
            if len(table):
                row = table.iloc[0]
                default = {k: int(row[k]) if k == "world_size" else str(row[k]) for k in SLICE}
        filled: dict[str, Any] = {
            k: getattr(form, k) if getattr(form, k) is not None else default.get(k) for k in SLICE
        }
        form = replace(form, **filled)
    if (form.base is None or form.head is None) and form.complete():
        versions = version_list(data, form)
        if len(versions) >= 2:
            form = replace(form, base=form.base or versions[-2], head=form.head or versions[-1])
    return form


def option_lists(data: DashData, form: Form) -> list[list[dict[str, Any]]]:
    """Options of the slice controls, dispatch, num_tokens, config, base and head."""
    slices = S.slice_options(data, {k: getattr(form, k) for k in SLICE})
    known, tokens, configs = series_choices(data, form)
    dispatch = [{"label": "default (balanced where measured)", "value": ALL}]
    dispatch += [{"label": k, "value": k} for k in known]
    if form.dispatch and form.dispatch not in known:
        dispatch.append({"label": f"{form.dispatch} (not stored)", "value": form.dispatch})
    token_opts: list[dict[str, Any]] = [{"label": "every workload", "value": ALL}]
    token_opts += [{"label": f"{t} tokens", "value": t} for t in tokens]
    if form.num_tokens is not None and form.num_tokens not in tokens:
        token_opts.append({"label": f"{form.num_tokens} (not stored)", "value": form.num_tokens})
    config_opts = [{"label": "best configuration of each workload", "value": BEST}]
    config_opts += [{"label": c, "value": c} for c in configs]
    if form.config != BEST and form.config not in configs:
        config_opts.append({"label": f"{form.config} (not stored)", "value": form.config})
    versions = S.with_asked(S.version_options(versions_frame(data, form)), form.base, form.head)
    return [*(slices[k] for k in SLICE), dispatch, token_opts, config_opts, versions, versions]


def _dropdown(cid: str, options: list[Any], value: Any) -> dcc.Dropdown:
    return dcc.Dropdown(id=cid, options=options, value=value, clearable=False)


def layout(data: DashData, **query: Any) -> html.Div:
    head = [
        html.H1("History across TensorRT-LLM versions"),
        html.P(
            "Versions are ordered by version number (1.2.0rc9 before 1.2.0rc27), then by "
            "run date; repeat runs of one version are pooled to their median, versions "
            "never are. The frontier change compares two versions' step frontiers: the "
            "throughput reachable within the same latency, the latency needed for the same "
            "throughput (medians over the frontiers' breakpoints) and the dominated area "
            "(hypervolume).",
            className="lead",
        ),
    ]
    if not data.cells():
        return html.Div(
            [*head, ui.empty_state("No runs in the database yet.", EMPTY_HINTS, "hist-empty")]
        )
    form = with_defaults(data, parse_query(query))
    opts = option_lists(data, form)
    values = {f: getattr(form, f) for f in FIELDS}
    labels = {
        **_SLICE_LABELS,
        "dispatch": "routing pattern (dispatch)",
        "num_tokens": "workload (num_tokens)",
        "config": "configuration",
        "base": "frontier change from (base version)",
        "head": "to (head version)",
    }
    wide = ("model", "config", "base", "head")
    controls = [
        S.control(
            labels[f],
            _dropdown(f"hist-{f}", o, values[f] if values[f] is not None else ALL),
            f in wide,
        )
        for f, o in zip(DROPDOWNS, opts, strict=True)
    ]
    rest = [
        S.control(
            "repeat runs",
            dcc.RadioItems(id="hist-repeats", options=REPEAT_OPTIONS, value=form.repeats),
            True,
        ),
        S.control(
            "one point per",
            dcc.RadioItems(id="hist-by", options=BY_OPTIONS, value=form.by),
            True,
        ),
        html.Div(
            [html.Label("\u00a0"), ui.download_button("hist-csv-btn", "Download history CSV")],
            className="control",
        ),
    ]
    n_slice = len(SLICE) + 1
    return html.Div(
        [
            dcc.Location(id="hist-url", refresh=False),
            *head,
            html.Div(controls[:n_slice], className="controls"),
            html.Div([*controls[n_slice:], *rest], className="controls"),
            ui.loading(html.Div(id="hist-body"), "hist-loading"),
            dcc.Download(id="hist-download"),
        ]
    )


def update(data: DashData, *values: Any, trigger: str | None = None) -> tuple[Any, ...]:
    """Controls -> (body, URL search, base and head values, every control's options).
    A new slice drops a workload, configuration or version it does not hold."""
    form = make_form(*values)
    if trigger in tuple(f"hist-{k}" for k in (*SLICE, "dispatch")):
        _, tokens, configs = series_choices(data, form)
        versions = version_list(data, form)
        form = replace(
            form,
            num_tokens=form.num_tokens if form.num_tokens in tokens else None,
            config=form.config if form.config in configs else BEST,
            base=form.base if form.base in versions else None,
            head=form.head if form.head in versions else None,
        )
    form = with_defaults(data, form)
    body = render(data, form)
    return (
        body,
        form.search(),
        form.num_tokens if form.num_tokens is not None else ALL,
        form.config,
        form.base,
        form.head,
        *option_lists(data, form),
    )


def csv_download(data: DashData, form: Form) -> dict[str, Any] | None:
    """The history points the chart shows (the API's ``GET /api/v1/history`` rows with
    the same filters), named for the slice."""
    got = history_answer(data, form)
    if got is None or isinstance(got, str):
        return None
    cols = [c for c in HISTORY_CSV_COLUMNS if c in got.items]
    what = "best" if form.config == BEST else "scores"
    name = form.filename(what) + (f"-{form.num_tokens}tok" if form.num_tokens else "")
    return {"content": to_csv_text(got.items, cols), "filename": f"{name}.csv", "type": "text/csv"}


def register(app: dash.Dash, data: DashData) -> None:
    option_ids = (
        *(f"hist-{k}" for k in SLICE),
        "hist-dispatch",
        "hist-num_tokens",
        "hist-config",
        "hist-base",
        "hist-head",
    )

    @app.callback(
        Output("hist-body", "children"),
        Output("hist-url", "search"),
        Output("hist-num_tokens", "value"),
        Output("hist-config", "value"),
        Output("hist-base", "value"),
        Output("hist-head", "value"),
        *[Output(cid, "options") for cid in option_ids],
        *[Input(i, "value") for i in IDS],
    )
    def _update(*values: Any) -> tuple[Any, ...]:
        return update(data, *values, trigger=triggered_id())

    @app.callback(
        Output("hist-download", "data"),
        Input("hist-csv-btn", "n_clicks"),
        *[State(i, "value") for i in IDS],
        prevent_initial_call=True,
    )
    def _csv(n: int | None, *values: Any) -> Any:
        return csv_download(data, make_form(*values)) if n else dash.no_update
