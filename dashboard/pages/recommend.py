"""Recommendations: the guide's decision tree for one deployment, next to the data.

URL: ``/recommend?hardware=&model=&quant=&world_size=&attention=dp|tp&phase=decode|prefill
&num_tokens=&thresholds=published|derived|validated&size=tokens|load&concurrency=&mtp=
&max_batch_size=&max_num_tokens=&isl=&dispatch=&repeats=median|latest&check=<threshold
name>``: ``GET /api/v1/recommendation``'s own names (``size`` and ``check`` are the
page's); older permalinks' ``ws``, ``attn=DP|TP``, ``tokens``, ``th``, ``conc``,
``mbs``, ``mnt`` still read.

Every number comes from ``service``: the workload size (num_tokens, or computed from
the serving load by ``analysis.concurrency``), the tree, the measured best at the
nearest stored num_tokens and its runners-up, and whether the data agree with the tree
on backend and comm (``service.recommend.recommendation``, the function behind
``/api/v1/recommendation``; its agreement row is ``/api/v1/agreement?detail=true``'s),
the tree's and the measured best's YAML / env line with their capability check
(``service.export.export_config``, behind ``/api/v1/export``) and the
published-vs-derived threshold table with an evidence chart
(``service.thresholds.guide_check``). The blocks are laid out by
:mod:`dashboard.pages.recommend_view`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from analysis import capabilities as cap
from analysis import columns as C
from dashboard import components as ui
from dashboard.chart_names import deployment_frame, file_stem, named_figure, slice_of
from dashboard.figures import path_figure
from dashboard.labelled import control
from dashboard.pages.recommend_form import (
    FIELDS,
    QUANTS,
    Form,
    controls,
    form_from_controls,
    load_values,
    parse_form,
)
from dashboard.pages.recommend_view import (
    conflicts_block,
    evidence_named,
    export_block,
    measured_block,
    path_list,
    summary,
    threshold_table,
    workload_block,
)
from service.capabilities import conflict_lines
from service.defaults import default_cell
from service.errors import NoData, ServiceError
from service.export import ExportAnswer, export_config, launch_export
from service.filenames import config_stem
from service.frames import DashData
from service.recommend import (
    DeploymentRequest,
    RecommendationAnswer,
    deployment_request,
    dispatch_choices,
    known_models,
    recommendation,
    token_count,
)
from service.thresholds import guide_check

PATH = "/recommend"


def request_for(form: Form) -> DeploymentRequest:
    """The form as the service's (and the API's) deployment request; an out-of-range
    value raises ``ServiceError`` naming it."""
    return deployment_request(
        hardware=form.hardware,
        quant=form.quant,
        world_size=form.ws,
        attention=form.attn.lower(),
        phase=form.phase,
        model=form.model,
        thresholds=form.th,
        dispatch=form.dispatch,
        repeats=form.repeats,
        **load_values(form),
    )


def answer(data: DashData, form: Form) -> tuple[RecommendationAnswer, ExportAnswer] | str:
    """(the recommendation, the tree's exportable config), or why there is none."""
    try:
        req = request_for(form)
        return recommendation(data, req), export_config(data, req, "tree", strict=False)
    except ServiceError as err:
        return err.msg


def measured_export(data: DashData, form: Form) -> ExportAnswer | str | None:
    """The measured best's config (checked, possibly not deployable), the reason there
    is none, or None when nothing comparable is measured."""
    try:
        return export_config(data, request_for(form), "measured", strict=False)
    except NoData:
        return None
    except ServiceError as err:
        return err.msg


def size_note(form: Form) -> Any:
    """The num_tokens the serving load gives and the formula (the form's own note)."""
    if form.size != "load":
        return html.Span(f"num_tokens = {form.tokens} (as given)")
    try:
        count = token_count(request_for(form))
    except ServiceError as err:
        return ui.empty_state(err.msg, test_id="rec-size-error")
    if count is None:
        return html.Span(f"num_tokens = {form.tokens} (as given)")
    notes = [f" {n}" for n in count.notes]
    return html.Span(
        [html.Strong(f"num_tokens = {count.num_tokens}"), f" — {count.formula}", *notes]
    )


def update(data: DashData, form: Form) -> tuple[Any, str]:
    """Form -> (result children, URL search)."""
    got = answer(data, form)
    if isinstance(got, str):
        return ui.empty_state(got, ["pick a model from the list"]), form.search()
    ans, export = got
    rec = ans.tree
    check = guide_check(data)
    decided = [s.threshold_name for s in rec.path if s.threshold_name]
    names = list(check.table["name"])
    chosen = (
        form.check
        if form.check is not None and form.check in names
        else (next((d for d in reversed(decided) if d in names), names[0] if names else ""))
    )
    steps = [dataclasses.asdict(s) for s in rec.path]
    dep = ans.deployment
    where = slice_of(
        deployment_frame(dep.model, dep.hardware, dep.quant, dep.world_size, rec.phase)
    )
    path_what = "threshold vs observed value"
    evidence_fig, evidence_config = evidence_named(check, chosen)
    body = html.Div(
        [
            workload_block(ans.tokens, ans.deployment.num_tokens),
            html.Div(
                [
                    html.Div(
                        [
                            html.H2("Recommendation"),
                            summary(rec),
                            conflicts_block(conflict_lines(data, dep.hardware)),
                        ],
                        className="half",
                    ),
                    html.Div([html.H2("Decision path"), path_list(rec)], className="half"),
                ],
                className="row",
            ),
            dcc.Graph(
                id="rec-path-graph",
                figure=named_figure(path_figure(steps), path_what, where),
                config=ui.graph_config(filename=file_stem(path_what, where)),
            ),
            html.H2(
                ui.with_synthetic_note(
                    data.is_synthetic(None), "Measured best at the nearest workload"
                )
            ),
            measured_block(ans, ans.deployment.num_tokens),
            html.H2("Published vs data-derived thresholds"),
            threshold_table(check),
            control(
                "evidence for threshold",
                dcc.Dropdown(
                    id="rec-check", options=ui.options(names), value=chosen, clearable=False
                ),
                wide=True,
            ),
            ui.loading(
                dcc.Graph(id="rec-evidence", figure=evidence_fig, config=evidence_config),
                "rec-evidence-loading",
            ),
            html.H2("Config"),
            export_block(export, "rec", "the tree's recommendation", launch=True),
            export_block(
                measured_export(data, form) if ans.measured is not None else None,
                "rec-m",
                "the measured best (reproduces the fastest measured configuration)",
            ),
            dcc.Download(id="rec-m-download"),
        ]
    )
    return body, dataclasses.replace(form, check=chosen or None).search()


def patterns_for(data: DashData, form: Form) -> list[str]:
    """The routing patterns stored for the form's slice (the dispatch control's options)."""
    try:
        return dispatch_choices(data, request_for(dataclasses.replace(form, dispatch=None)))[0]
    except ServiceError:
        return []


def default_form(data: DashData, query: dict[str, Any] | None = None) -> Form:
    """The form a URL opens on when it names no model, hardware or quant: the default
    cell (``service.defaults.default_cell``, the cell with the most data) at its world
    size with the most candidates; :class:`Form`'s defaults when the URL names any of
    them or the database is empty."""
    if any(ui.first(query or {}, k) for k in ("model", "hardware", "quant")):
        return Form()
    cell = default_cell(data)
    if cell is None:
        return Form()
    cov = data.coverage()
    rows = cov[
        (cov[C.MODEL] == cell.model)
        & (cov[C.HARDWARE] == cell.hardware)
        & (cov[C.QUANT] == cell.quant)
    ]
    by_ws = rows.groupby(C.WORLD_SIZE)["candidates"].sum().sort_index()
    ws = int(by_ws.idxmax()) if len(by_ws) else Form().ws
    return Form(hardware=cell.hardware, model=cell.model, quant=cell.quant, ws=ws)


def layout(data: DashData, **query: Any) -> html.Div:
    form = parse_form(query, default_form(data, query))
    models = sorted(set(known_models(data)) | {form.model})
    hardware = sorted(set(cap.HARDWARE) | {form.hardware})
    quants = sorted(set(QUANTS) | {form.quant})
    patterns = sorted(set(patterns_for(data, form)) | ({form.dispatch} if form.dispatch else set()))
    # the answer for the form as the URL gives it, laid out with the page (no callback
    # round trip before the verdict shows); the controls' callback runs on changes only
    body, search = update(data, form)

    return html.Div(
        [
            dcc.Location(id="rec-url", refresh=False),
            dcc.Store(id="rec-url-init", data=search),
            html.H1("Which MoE configuration should I run?"),
            html.P(
                "The TensorRT-LLM MoE guide's decision tree for your deployment, checked "
                "against the sweeps in this database.",
                className="lead",
            ),
            controls(form, models, hardware, quants, patterns),
            dcc.Store(id="rec-check-init", data=form.check),
            ui.loading(html.Div(body, id="rec-body"), "rec-loading", answer=True),
            dcc.Download(id="rec-download"),
        ]
    )


def download(data: DashData, which: str, form: Form, source: str = "tree") -> dict[str, Any] | None:
    """The ``dcc.Download`` payload of the YAML or the env line of the tree's or the
    measured best's config (None without a deployable answer), named for the workload
    and the source."""
    if source == "measured":
        export = measured_export(data, form)
        if not isinstance(export, ExportAnswer) or not export.deployable:
            return None
    else:
        got = answer(data, form)
        if isinstance(got, str):
            return None
        export = got[1]
    tokens = export.recommendation.deployment.num_tokens
    # what the file holds: the deployment, the workload size and whose config it is
    stem = config_stem(
        form.model,
        form.hardware,
        form.quant,
        form.ws,
        tokens,
        phase=form.phase,
        which="tree" if source == "tree" else "measured",
    )
    if which == "yaml":
        return {"content": export.yaml, "filename": stem + ".yaml", "type": "text/yaml"}
    text = (export.env or "# comm: leave AUTO (TRTLLM_FORCE_COMM_METHOD unset)") + "\n"
    return {"content": text, "filename": stem + ".env", "type": "text/plain"}


def launch_download(data: DashData, form: Form) -> dict[str, Any] | None:
    """The launch script of the tree's recommendation (``service.export.launch_export``,
    GET /export?format=launch): for decode a disaggregated deployment whose prefill
    worker takes the form's max_num_tokens; None when the export is refused."""
    try:
        req = request_for(form)
        launch = launch_export(
            data, req, "tree", prefill_max_num_tokens=form.mnt if form.phase == "decode" else None
        )
    except ServiceError:
        return None
    tokens = launch.workers[-1].recommendation.deployment.num_tokens
    stem = config_stem(
        form.model, form.hardware, form.quant, form.ws, tokens, phase=form.phase, which="launch"
    )
    return {"content": launch.text, "filename": stem + ".sh", "type": "text/x-shellscript"}


def register(app: dash.Dash, data: DashData) -> None:
    inputs = [Input(f"rec-{f}", "value") for f in FIELDS[:-1]]

    @app.callback(
        Output("rec-body", "children"),
        Output("rec-url", "search"),
        *inputs,
        State("rec-check-init", "data"),
        prevent_initial_call=True,
    )
    def _update(*values: Any) -> tuple[Any, str]:
        return update(data, form_from_controls(*values))

    ui.sync_url(app, "rec-url", "rec-url-init")

    @app.callback(
        Output("rec-evidence", "figure"),
        Output("rec-evidence", "config"),
        Output("rec-url", "search", allow_duplicate=True),
        Input("rec-check", "value"),
        *[State(f"rec-{f}", "value") for f in FIELDS[:-1]],
        prevent_initial_call=True,
    )
    def _evidence(name: str, *values: Any) -> tuple[Any, Any, str]:
        form = dataclasses.replace(form_from_controls(*values), check=name)
        fig, config = evidence_named(guide_check(data), name)
        return fig, config, form.search()

    @app.callback(
        Output("rec-download", "data"),
        Input("rec-yaml-btn", "n_clicks"),
        Input("rec-env-btn", "n_clicks"),
        Input("rec-launch-btn", "n_clicks"),
        *[State(f"rec-{f}", "value") for f in FIELDS[:-1]],
        prevent_initial_call=True,
    )
    def _download(n_yaml: int | None, n_env: int | None, n_launch: int | None, *values: Any) -> Any:
        if not (n_yaml or n_env or n_launch):
            return dash.no_update
        form = form_from_controls(*values)
        if dash.ctx.triggered_id == "rec-launch-btn":
            return launch_download(data, form) or dash.no_update
        which = "env" if dash.ctx.triggered_id == "rec-env-btn" else "yaml"
        return download(data, which, form)

    @app.callback(
        Output("rec-m-download", "data"),
        Input("rec-m-yaml-btn", "n_clicks"),
        Input("rec-m-env-btn", "n_clicks"),
        *[State(f"rec-{f}", "value") for f in FIELDS[:-1]],
        prevent_initial_call=True,
    )
    def _measured_download(n_yaml: int | None, n_env: int | None, *values: Any) -> Any:
        which = "env" if dash.ctx.triggered_id == "rec-m-env-btn" else "yaml"
        if not (n_yaml or n_env):
            return dash.no_update
        return download(data, which, form_from_controls(*values), "measured") or dash.no_update

    @app.callback(
        Output("rec-size-note", "children"),
        Output("rec-tokens-box", "style"),
        Output("rec-load-box", "style"),
        *inputs,
    )
    def _size(*values: Any) -> tuple[Any, dict[str, str], dict[str, str]]:
        form = form_from_controls(*values)
        hide: dict[str, str] = {"display": "none"}
        show: dict[str, str] = {}
        return (
            size_note(form),
            hide if form.size == "load" else show,
            (show if form.size == "load" else hide),
        )

    @app.callback(
        Output("rec-dispatch", "options"),
        *[
            Input(f"rec-{f}", "value")
            for f in ("hardware", "model", "quant", "ws", "attn", "phase")
        ],
        State("rec-dispatch", "value"),
        prevent_initial_call=True,
    )
    def _patterns(*values: Any) -> list[dict[str, Any]]:
        *slice_values, current = values
        form = form_from_controls(*slice_values)
        found = sorted(set(patterns_for(data, form)) | ({current} if current else set()))
        return [{"label": "default (balanced where measured)", "value": ""}] + ui.options(found)
