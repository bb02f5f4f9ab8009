"""Recommendations: the guide's decision tree for one deployment, next to the data.

URL: ``/recommend?hardware=&model=&quant=&ws=&attn=DP|TP&phase=decode|prefill
&tokens=&th=published|derived&check=<threshold name>``.

Every number comes from ``service``: the tree, the measured best at the nearest stored
num_tokens and its runners-up (``service.recommend.recommendation``, the function behind
``/api/v1/recommendation``), the YAML / env line (``service.export.export_config``,
behind ``/api/v1/export``) and the published-vs-derived threshold table with an
evidence chart (``service.thresholds.guide_check``). The blocks are laid out by
:mod:`dashboard.pages.recommend_view`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from analysis import capabilities as cap
from dashboard import components as ui
from dashboard.figures import path_figure
from dashboard.pages.recommend_form import (
    FIELDS,
    QUANTS,
    Form,
    controls,
    form_from_controls,
    parse_form,
)
from dashboard.pages.recommend_view import (
    evidence_for,
    measured_block,
    path_list,
    summary,
    threshold_table,
)
from service.errors import ServiceError
from service.export import ExportAnswer, export_config
from service.frames import DashData
from service.recommend import (
    DeploymentRequest,
    RecommendationAnswer,
    deployment_request,
    known_models,
    recommendation,
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
        num_tokens=form.tokens,
        model=form.model,
        thresholds=form.th,
    )


def answer(data: DashData, form: Form) -> tuple[RecommendationAnswer, ExportAnswer] | str:
    """(the recommendation, the tree's exportable config), or why there is none."""
    try:
        req = request_for(form)
        return recommendation(data, req), export_config(data, req, "tree")
    except ServiceError as err:
        return err.msg


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
        if form.check in names
        else (next((d for d in reversed(decided) if d in names), names[0] if names else ""))
    )
    steps = [dataclasses.asdict(s) for s in rec.path]
    body = html.Div(
        [
            html.Div(
                [
                    html.Div([html.H3("Recommendation"), summary(rec)], className="half"),
                    html.Div([html.H3("Decision path"), path_list(rec)], className="half"),
                ],
                className="row",
            ),
            dcc.Graph(figure=path_figure(steps), config={"displaylogo": False}),
            html.H3(
                ui.with_synthetic_note(
                    data.is_synthetic(None), "Measured best at the nearest workload"
                )
            ),
            measured_block(ans, form.tokens),
            html.H3("Published vs data-derived thresholds"),
            threshold_table(check),
            html.Div(
                [
                    html.Label("evidence for"),
                    dcc.Dropdown(
                        id="rec-check", options=ui.options(names), value=chosen, clearable=False
                    ),
                ],
                className="control wide",
            ),
            dcc.Graph(
                id="rec-evidence", figure=evidence_for(check, chosen), config={"displaylogo": False}
            ),
            html.H3("Config"),
            html.Pre(export.yaml, className="code", id="rec-yaml"),
            html.Pre(
                export.env or "comm: leave AUTO (no environment variable needed)",
                className="code",
                id="rec-env",
            ),
            html.Div(
                [
                    ui.download_button("rec-yaml-btn", "Download YAML"),
                    ui.download_button("rec-env-btn", "Download env line"),
                ]
            ),
        ]
    )
    return body, dataclasses.replace(form, check=chosen or None).search()


def layout(data: DashData, **query: Any) -> html.Div:
    form = parse_form(query)
    models = sorted(set(known_models(data)) | {form.model})
    hardware = sorted(set(cap.HARDWARE) | {form.hardware})
    quants = sorted(set(QUANTS) | {form.quant})

    return html.Div(
        [
            dcc.Location(id="rec-url", refresh=False),
            html.H2("Which MoE configuration should I run?"),
            html.P(
                "The TensorRT-LLM MoE guide's decision tree for your deployment, checked "
                "against the sweeps in this database.",
                className="lead",
            ),
            controls(form, models, hardware, quants),
            dcc.Store(id="rec-check-init", data=form.check),
            ui.loading(html.Div(id="rec-body"), "rec-loading"),
            dcc.Download(id="rec-download"),
        ]
    )


def download(data: DashData, which: str, form: Form) -> dict[str, Any] | None:
    """The ``dcc.Download`` payload of the YAML or the env line (None without an answer)."""
    got = answer(data, form)
    if isinstance(got, str):
        return None
    export = got[1]
    stem = f"moedash_{form.model}_{form.hardware}_{form.quant}_ws{form.ws}_{form.phase}"
    if which == "yaml":
        return {"content": export.yaml, "filename": stem + ".yaml", "type": "text/yaml"}
    text = (export.env or "# comm: leave AUTO (TRTLLM_FORCE_COMM_METHOD unset)") + "\n"
    return {"content": text, "filename": stem + ".env", "type": "text/plain"}


def register(app: dash.Dash, data: DashData) -> None:
    inputs = [Input(f"rec-{f}", "value") for f in FIELDS[:-1]]

    @app.callback(
        Output("rec-body", "children"),
        Output("rec-url", "search"),
        *inputs,
        State("rec-check-init", "data"),
    )
    def _update(*values: Any) -> tuple[Any, str]:
        return update(data, form_from_controls(*values))

    @app.callback(
        Output("rec-evidence", "figure"),
        Output("rec-url", "search", allow_duplicate=True),
        Input("rec-check", "value"),
        *[State(f"rec-{f}", "value") for f in FIELDS[:-1]],
        prevent_initial_call=True,
    )
    def _evidence(name: str, *values: Any) -> tuple[Any, str]:
        form = form_from_controls(*values, name)
        return evidence_for(guide_check(data), name), form.search()

    @app.callback(
        Output("rec-download", "data"),
        Input("rec-yaml-btn", "n_clicks"),
        Input("rec-env-btn", "n_clicks"),
        *[State(f"rec-{f}", "value") for f in FIELDS[:-1]],
        prevent_initial_call=True,
    )
    def _download(n_yaml: int | None, n_env: int | None, *values: Any) -> Any:
        which = "env" if dash.ctx.triggered_id == "rec-env-btn" else "yaml"
        if not (n_yaml or n_env):
            return dash.no_update
        return download(data, which, form_from_controls(*values, None))
