"""Compare two runs or two TensorRT-LLM versions: what changed, per workload x
configuration.

The numbers are the API's: ``service.compare.compare`` answers the page's form
(:mod:`~dashboard.pages.compare_form`) exactly as ``GET /api/v1/compare`` answers the
same query string, and the CSV download is that endpoint's ``format=csv`` (same rows,
same columns, same file name). Laid out by :mod:`~dashboard.pages.compare_view`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import dash
from dash import Input, Output, State, dcc, html
from dash.exceptions import MissingCallbackContextException

from analysis.tables import to_csv_text
from dashboard import components as ui
from dashboard.pages import history_slices as S
from dashboard.pages.compare_form import ALL, FIELDS, Form, make_form, parse_query
from dashboard.pages.compare_view import render
from service.compare import CompareAnswer, compare
from service.errors import ServiceError
from service.frames import DashData
from service.scope import Scope

PATH = "/compare"
IDS: tuple[str, ...] = tuple(f"cmp-{f}" for f in FIELDS)
SLICE_IDS: tuple[str, ...] = tuple(
    f"cmp-{f}" for f in ("model", "hardware", "quant", "world_size", "phase", "dispatch")
)
_SLICE_LABELS = {
    "model": "model",
    "hardware": "GPU (hardware)",
    "quant": "precision (quant)",
    "world_size": "world size (GPUs)",
    "phase": "phase",
}
REPEAT_OPTIONS = [
    {"label": "median over repeat runs", "value": "median"},
    {"label": "latest run only", "value": "latest"},
]
EMPTY_HINTS = [
    "upload bench_moe reports of two TensorRT-LLM versions (or two runs) of one model · "
    "GPU · quant: `moedash upload out/*.json --trtllm-version 1.2.0rc28`",
]


def scope_of(form: Form) -> Scope:
    """The service scope of the form's slice filters."""
    return Scope(**form.filters())


def side_options(data: DashData, form: Form) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(dropdown options: versions in version order, then runs newest first; the version
    values; the run values) of the form's slice. A stored-nowhere slice: empty."""
    try:
        opts = S.side_choices(data, scope_of(form))
    except ServiceError:
        return [], [], []
    versions = S.version_options(opts["versions"])
    runs = S.run_options(opts["runs"])
    return versions + runs, [o["value"] for o in versions], [o["value"] for o in runs]


def with_defaults(data: DashData, form: Form) -> Form:
    """The slice with the most versions when the form names no cell; base / head the
    last two versions (or, with one version, the last two runs) when not chosen."""
    if form.model is None and form.hardware is None and form.quant is None:
        default = S.default_slice(data)
        form = replace(
            form,
            model=default.get("model"),
            hardware=default.get("hardware"),
            quant=default.get("quant"),
            world_size=form.world_size or default.get("world_size"),
            phase=form.phase or default.get("phase"),
        )
    if form.base is None or form.head is None:
        _, versions, runs = side_options(data, form)
        pair = versions[-2:] if len(versions) >= 2 else list(reversed(runs[:2]))
        if len(pair) == 2:
            form = replace(form, base=form.base or pair[0], head=form.head or pair[1])
    return form


def answer(data: DashData, form: Form) -> CompareAnswer | ServiceError:
    """The service's answer for the form (the error when the form is not answerable)."""
    try:
        return compare(
            data,
            form.base or "",
            form.head or "",
            scope_of(form),
            threshold_pct=form.threshold_pct,
            repeats=form.repeats,  # type: ignore[arg-type]
        )
    except ServiceError as err:
        return err


def _dropdown(cid: str, options: list[Any], value: Any, clearable: bool = False) -> dcc.Dropdown:
    return dcc.Dropdown(id=cid, options=options, value=value, clearable=clearable)


def option_lists(data: DashData, form: Form) -> list[list[dict[str, Any]]]:
    """Options per control in :data:`FIELDS` order that has options (base, head, the
    slice filters)."""
    sides, _, _ = side_options(data, form)
    sides = S.with_asked(sides, form.base, form.head)
    slices = S.slice_options(
        data,
        {k: getattr(form, k) for k in _SLICE_LABELS},
        all_for=("world_size", "phase"),
    )
    try:
        known = list(S.side_choices(data, scope_of(form))["routing"].known)
    except ServiceError:
        known = []
    dispatch = [{"label": "default (balanced where measured)", "value": ALL}]
    dispatch += [{"label": k, "value": k} for k in known]
    if form.dispatch and form.dispatch not in known:
        dispatch.append({"label": f"{form.dispatch} (not stored)", "value": form.dispatch})
    return [sides, sides, *(slices[k] for k in _SLICE_LABELS), dispatch]


def layout(data: DashData, **query: Any) -> html.Div:
    head = [
        html.H1("Compare two runs or versions"),
        html.P(
            "Per workload × configuration: the head's score against the base's (%), and a "
            "verdict: regression / improvement when the change exceeds both the threshold "
            "and the noise band (2·√(s_base² + s_head²), s = run-to-run spread where a side "
            "pooled repeats, else the within-run iteration spread; unknown spread: the "
            "threshold only), else unchanged. Also what newly fails or is newly skipped, "
            "and where the best configuration changed. One routing pattern at a time.",
            className="lead",
        ),
    ]
    if not data.cells():
        return html.Div(
            [*head, ui.empty_state("No runs in the database yet.", EMPTY_HINTS, "cmp-empty")]
        )
    form = with_defaults(data, parse_query(query))
    opts = option_lists(data, form)
    sides, slices, dispatch = opts[:2], opts[2:7], opts[7]
    values = {f: getattr(form, f) for f in FIELDS}
    choose = [
        S.control(
            "base (what head is compared with)", _dropdown("cmp-base", sides[0], form.base), True
        ),
        S.control(
            "head (the newer run or version)", _dropdown("cmp-head", sides[1], form.head), True
        ),
        S.control(
            "threshold (%)",
            dcc.Input(
                id="cmp-threshold_pct",
                type="number",
                min=0,
                max=1000,
                step="any",
                value=form.threshold_pct,
                debounce=True,
            ),
        ),
        S.control(
            "repeat runs",
            dcc.RadioItems(id="cmp-repeats", options=REPEAT_OPTIONS, value=form.repeats),
            True,
        ),
        html.Div(
            [
                html.Label("\u00a0"),
                ui.download_button("cmp-csv-btn", "Download CSV"),
                ui.download_note("cmp-csv-note"),
            ],
            className="control",
        ),
    ]
    filters = [
        S.control(
            text,
            _dropdown(
                f"cmp-{key}",
                options,
                values[key] if values[key] is not None else ALL,
            ),
            key == "model",
        )
        for (key, text), options in zip(_SLICE_LABELS.items(), slices, strict=True)
    ]
    filters.append(
        S.control(
            "routing pattern (dispatch)",
            _dropdown("cmp-dispatch", dispatch, form.dispatch or ALL),
        )
    )
    return html.Div(
        [
            dcc.Location(id="cmp-url", refresh=False),
            *head,
            html.Div(filters, className="controls"),
            html.Div(choose, className="controls"),
            ui.loading(html.Div(id="cmp-body"), "cmp-loading"),
            dcc.Download(id="cmp-download"),
        ]
    )


def update(data: DashData, *values: Any, trigger: str | None = None) -> tuple[Any, ...]:
    """Controls -> (body, URL search, base and head values, their options, slice and
    dispatch options). When the slice changes (``trigger`` is a slice control) and a
    side is not stored in the new slice, it moves to the default pair."""
    form = make_form(*values)
    if trigger in SLICE_IDS:
        _, versions, runs = side_options(data, form)
        stored = set(versions) | set(runs)
        if form.base not in stored or form.head not in stored:
            form = replace(form, base=None, head=None)
    form = with_defaults(data, form)
    opts = option_lists(data, form)
    if form.model is None or form.hardware is None or form.quant is None:
        body: Any = ui.empty_state(
            "Pick a model, a GPU and a precision.", EMPTY_HINTS, test_id="cmp-empty"
        )
    else:
        body = render(data, form, answer(data, form))
    return (body, form.search(), form.base, form.head, *opts)


def csv_download(data: DashData, form: Form) -> dict[str, Any] | str:
    """The compared rows (every column, the API's ``format=csv``), named as the API names
    them (``compare-<model>-<GPU>-<quant>[-ws<N>][-<phase>]-<base>-vs-<head>.csv``); the
    reason when the view compares nothing."""
    got = answer(data, form)
    if isinstance(got, ServiceError):
        return f"{got.field}: {got.msg}"
    return {
        "content": to_csv_text(got.rows),
        "filename": f"{got.filename}.csv",
        "type": "text/csv",
    }


def triggered_id() -> str | None:
    """The id of the control that fired the running callback (None on the first call,
    or outside a request)."""
    try:
        tid = dash.ctx.triggered_id
    except MissingCallbackContextException:
        return None
    return str(tid) if tid else None


def register(app: dash.Dash, data: DashData) -> None:
    option_outputs = [
        Output(cid, "options")
        for cid in ("cmp-base", "cmp-head", *(f"cmp-{k}" for k in _SLICE_LABELS), "cmp-dispatch")
    ]

    @app.callback(
        Output("cmp-body", "children"),
        Output("cmp-url", "search"),
        Output("cmp-base", "value"),
        Output("cmp-head", "value"),
        *option_outputs,
        *[Input(i, "value") for i in IDS],
    )
    def _update(*values: Any) -> tuple[Any, ...]:
        return update(data, *values, trigger=triggered_id())

    @app.callback(
        Output("cmp-download", "data"),
        Output("cmp-csv-note", "children"),
        Input("cmp-csv-btn", "n_clicks"),
        *[State(i, "value") for i in IDS],
        prevent_initial_call=True,
    )
    def _csv(n: int | None, *values: Any) -> Any:
        if not n:
            return dash.no_update, dash.no_update
        return ui.download_or_reason(csv_download(data, make_form(*values)))
