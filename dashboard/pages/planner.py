"""Deployment planner: MegaScale-Infer-style disaggregated expert parallelism.

URL: ``/planner?model=&seq=&slo=&gpu=<name>&gpu=…&mode=homogeneous|heterogeneous&nm=
&xpn=&fq=&cap=&near=&ff=&sens=&ca=&cb=`` plus edited figures (see ``planner_form``). Opening a URL
plans it; the Plan button re-plans. Without model and GPU the page opens on the catalogue
model and GPU the store has most sweeps of (``service.planner_defaults``), else the
paper's preset.

The plan is ``service.planner.plan_for`` (``run_plan``, the same as ``POST
/api/v1/planner/plan``, cached per request and store version), run in the WSGI worker
thread of the callback with a loading state. The request is validated by the API's own
model, so every search is bounded the same way (an estimate over the cap is refused
naming the field to reduce; a running search stops at its budget and says so).
"""

from __future__ import annotations

import json
from typing import Any

import dash
import dash_ag_grid as dag
from dash import Input, Output, State, dcc, html
from pydantic import ValidationError

from analysis.planner import GPUS, MODELS
from dashboard import components as ui
from dashboard.labelled import control
from dashboard.pages.planner_form import (
    DEFAULT_MODEL,
    GPU_LABELS,
    GRID_FIELDS,
    INT_KEYS,
    MODEL_KEYS,
    MODEL_LABELS,
    TOP_ALTERNATIVES,
    Form,
    form_from_controls,
    gpu_rows,
    model_value,
    parse_form,
    plan_request,
    xpn_options,
)
from dashboard.pages.planner_render import render
from service.frames import DashData
from service.planner import export_filename, plan_for, stored_quants
from service.planner_defaults import store_default
from service.planner_request import PlanInputError

PATH = "/planner"


def compute(data: DashData, form: Form) -> dict[str, Any] | str:
    """The plan document for ``form``, or why there is none (the field path and message
    of the first validation or resolution error)."""
    try:
        req = plan_request(form)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
    try:
        return plan_for(data, req)
    except PlanInputError as exc:
        return f"{'.'.join(str(x) for x in exc.loc)}: {exc.msg}"


def update(data: DashData, form: Form) -> tuple[Any, str, Any]:
    """Form -> (result children, URL search, payload for the download store); computed
    once per form (its URL says all of it) and store version, shared by visitors."""
    return data.cached(("planner-page", form.search()), lambda: _answer(data, form))


def _answer(data: DashData, form: Form) -> tuple[Any, str, Any]:
    payload = compute(data, form)
    if isinstance(payload, str):
        hints = (
            ["the search is over its work limit: list fewer GPUs, fix experts per node or lower Nm"]
            if "plan evaluations" in payload
            else []
        )
        return (
            ui.empty_state(f"Cannot plan: {payload}", hints, test_id="planner-error"),
            form.search(),
            None,
        )
    return render(payload, (form.ca, form.cb)), form.search(), payload


# ------------------------------------------------------------------ layout
_ctl = control  # the label names the input, dropdown or group (dashboard.labelled)


def layout(data: DashData, **query: Any) -> html.Div:
    # a URL without model and GPU opens on what the store measured (its Te is fitted)
    form = parse_form(query, store_default(data))
    spec = MODELS[form.model]
    # the plan of the URL's form comes with the page (cached, warmed at start): the Plan
    # button's callback runs on clicks only
    body, _, payload = update(data, form)
    model_inputs = [
        _ctl(
            MODEL_LABELS[k],
            dcc.Input(
                id=f"plan-m-{k}",
                type="number",
                min=0,
                step=1 if k in INT_KEYS else "any",
                value=model_value(form, k),
                debounce=True,
            ),
        )
        for k in MODEL_KEYS
    ]
    quants = stored_quants(data)
    grid_cols = [{"field": "gpu", "headerName": "GPU", "editable": False, "pinned": "left"}] + [
        {
            "field": f,
            "headerName": GPU_LABELS[f],
            "editable": True,
            "cellEditor": "agNumberCellEditor",
            "type": "numericColumn",
        }
        for f in GRID_FIELDS
    ]

    return html.Div(
        [
            dcc.Location(id="plan-url", refresh=False),
            html.H1("Disaggregated deployment planner"),
            html.P(
                [
                    "Plans a MegaScale-Infer deployment (arXiv 2504.02263): attention on na "
                    "data-parallel nodes, experts on their own nodes, m micro-batches ping-ponging "
                    "between them. Te is fitted from stored sweeps of the same model shape and "
                    "GPU by one stated rule (decode, attention DP, MoE TP 1, the model's expert "
                    "quant) where there are enough plausible points, else a roofline estimate; "
                    "only plans meeting the ping-pong constraints are offered. Formulas and "
                    "assumptions: docs/planner.md; the same plan as JSON: ",
                    html.Code("POST /api/v1/planner/plan"),
                    ".",
                ],
                className="lead",
            ),
            html.Div(
                [
                    _ctl(
                        "model",
                        dcc.Dropdown(
                            id="plan-model",
                            options=ui.options(sorted(MODELS)),
                            value=form.model,
                            clearable=False,
                        ),
                    ),
                    _ctl(
                        "avg sequence length (tokens in KV)",
                        dcc.Input(
                            id="plan-seq", type="number", min=1, value=form.seq, debounce=True
                        ),
                    ),
                    _ctl(
                        "TBT SLO (ms)",
                        dcc.Input(
                            id="plan-slo", type="number", min=1, value=form.slo, debounce=True
                        ),
                    ),
                    _ctl(
                        "max micro-batches Nm",
                        dcc.Input(
                            id="plan-nm",
                            type="number",
                            min=3,
                            max=8,
                            step=1,
                            value=form.nm,
                            debounce=True,
                        ),
                    ),
                    _ctl(
                        "GPU cap per plan (GPUs; empty = none)",
                        dcc.Input(
                            id="plan-cap",
                            type="number",
                            min=2,
                            step=1,
                            value=form.cap,
                            placeholder="no cap",
                            debounce=True,
                        ),
                    ),
                    _ctl(
                        "nearly as good: within (% of best tokens/s per cost)",
                        dcc.Input(
                            id="plan-near",
                            type="number",
                            min=0,
                            max=100,
                            value=form.near,
                            debounce=True,
                        ),
                    ),
                    _ctl(
                        "GPUs (catalogue)",
                        dcc.Dropdown(
                            id="plan-gpus",
                            options=ui.options(GPUS),
                            value=list(form.gpus),
                            multi=True,
                            clearable=False,
                        ),
                        wide=True,
                    ),
                    _ctl(
                        "mode",
                        dcc.RadioItems(
                            id="plan-mode",
                            options=[
                                {
                                    "label": "homogeneous (one GPU type per plan)",
                                    "value": "homogeneous",
                                },
                                {
                                    "label": "heterogeneous (every attention/expert pair)",
                                    "value": "heterogeneous",
                                },
                            ],
                            value=form.mode,
                        ),
                        wide=True,
                    ),
                    _ctl(
                        "experts per expert node",
                        dcc.Dropdown(
                            id="plan-xpn",
                            options=xpn_options(spec.num_experts),
                            value=form.xpn or 0,
                            clearable=False,
                        ),
                    ),
                    _ctl(
                        "Te fit: sweep quant",
                        dcc.Dropdown(
                            id="plan-fq",
                            options=ui.options(
                                sorted(set(quants) | ({form.fq} if form.fq else set()))
                            ),
                            value=form.fq,
                            placeholder="the model's expert quant (the fit rule)",
                        ),
                    ),
                    _ctl(
                        "Te fit below the R² bar",
                        dcc.Checklist(
                            id="plan-ff",
                            options=[{"label": "use it anyway (force)", "value": "1"}],
                            value=["1"] if form.ff else [],
                        ),
                    ),
                    *[
                        _ctl(
                            f"compare side by side: {which} plan (rank, 1 = best)",
                            dcc.Input(
                                id=cid,
                                type="number",
                                min=1,
                                max=TOP_ALTERNATIVES,
                                step=1,
                                value=value,
                                debounce=True,
                                placeholder=f"{which} plan rank",
                            ),
                        )
                        for which, cid, value in (
                            ("first", "plan-ca", form.ca),
                            ("second", "plan-cb", form.cb),
                        )
                    ],
                    _ctl(
                        "sensitivity",
                        dcc.Checklist(
                            id="plan-sens",
                            options=[
                                {
                                    "label": "re-plan at ±20 % prices and sequence length",
                                    "value": "1",
                                }
                            ],
                            value=["1"] if form.sens else [],
                        ),
                    ),
                ],
                className="controls",
            ),
            html.Details(
                [
                    html.Summary("Model figures (prefilled from the catalogue, editable)"),
                    html.Div(model_inputs, className="controls"),
                    html.P(spec.source, className="status", id="plan-model-source"),
                ],
                open=bool(form.model_over),
            ),
            html.Details(
                [
                    html.Summary("GPU figures (editable: click a cell)"),
                    dag.AgGrid(
                        id="plan-gpu-grid",
                        rowData=gpu_rows(form.gpus, form.gpu_over),
                        columnDefs=grid_cols,
                        defaultColDef={"resizable": True, "minWidth": 110},
                        dashGridOptions={
                            "singleClickEdit": True,
                            "stopEditingWhenCellsLoseFocus": True,
                            "domLayout": "autoHeight",
                        },
                        columnSize="sizeToFit",
                        className="ag-theme-alpine",
                    ),
                    html.P(
                        "Prices are normalised cost units (L20 = 1.0); the H100/H200/Blackwell "
                        "prices are estimates: put your own.",
                        className="status",
                    ),
                ],
                open=bool(form.gpu_over),
            ),
            html.Div(
                [
                    html.Button("Plan", id="plan-run", className="button", n_clicks=0),
                    ui.download_button("plan-download-btn", "Download plan JSON"),
                    ui.download_button("plan-deploy-btn", "Download deployment (JSON + summary)"),
                    html.Span(id="plan-running", className="status"),
                ]
            ),
            dcc.Store(id="plan-payload", data=payload),
            dcc.Download(id="plan-download"),
            dcc.Download(id="plan-deploy-download"),
            ui.loading(html.Div(body, id="plan-body"), "plan-loading"),
        ]
    )


_FORM_STATES = (
    "plan-model",
    "plan-seq",
    "plan-slo",
    "plan-gpus",
    "plan-mode",
    "plan-nm",
    "plan-xpn",
    "plan-fq",
    "plan-cap",
    "plan-near",
    "plan-ff",
    "plan-sens",
    "plan-ca",
    "plan-cb",
)


def download(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    """The plan document as a JSON file for ``dcc.Download`` (None without a plan)."""
    if not payload:
        return None
    return {
        "content": json.dumps(payload, indent=1),
        "filename": export_filename(payload),
        "type": "application/json",
    }


def deploy_download(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    """The best plan's deployment description (``payload['deployment']``) as
    ``deployment-<model>-<attention GPU>-<expert GPU>.json``; None without a plan."""
    doc = (payload or {}).get("deployment")
    if not doc:
        return None
    name = export_filename(payload or {}).replace("plan-", "deployment-", 1)
    return {"content": json.dumps(doc, indent=1), "filename": name, "type": "application/json"}


def register(app: dash.Dash, data: DashData) -> None:
    model_fields = [State(f"plan-m-{k}", "value") for k in MODEL_KEYS]

    @app.callback(
        [Output(f"plan-m-{k}", "value") for k in MODEL_KEYS]
        + [
            Output("plan-xpn", "options"),
            Output("plan-xpn", "value"),
            Output("plan-model-source", "children"),
        ],
        Input("plan-model", "value"),
        prevent_initial_call=True,
    )
    def _model_changed(model: str) -> list[Any]:
        form = Form(model=model if model in MODELS else DEFAULT_MODEL)
        values = [model_value(form, k) for k in MODEL_KEYS]
        return values + [xpn_options(values[0]), 0, MODELS[form.model].source]

    @app.callback(
        Output("plan-gpu-grid", "rowData"),
        Input("plan-gpus", "value"),
        State("plan-gpu-grid", "rowData"),
        prevent_initial_call=True,
    )
    def _gpus_changed(gpus: list[str] | None, rows: list[dict[str, Any]] | None) -> Any:
        return gpu_rows([str(g) for g in gpus or []], {}, rows)

    @app.callback(
        Output("plan-body", "children"),
        Output("plan-url", "search"),
        Output("plan-payload", "data"),
        Input("plan-run", "n_clicks"),
        *[State(i, "value") for i in _FORM_STATES],
        *model_fields,
        State("plan-gpu-grid", "rowData"),
        prevent_initial_call=True,  # layout() drew the URL's plan
        running=[
            (Output("plan-run", "disabled"), True, False),
            (Output("plan-running", "children"), "planning…", ""),
        ],
    )
    def _plan(_n: int | None, *values: Any) -> tuple[Any, str, Any]:
        n = len(_FORM_STATES)
        # one starred list: mypy places no positional argument after a starred slice
        form = form_from_controls(*[*values[:n], list(values[n : n + len(MODEL_KEYS)]), values[-1]])
        return update(data, form)

    @app.callback(
        Output("plan-download", "data"),
        Input("plan-download-btn", "n_clicks"),
        State("plan-payload", "data"),
        prevent_initial_call=True,
    )
    def _download(n: int | None, payload: dict[str, Any] | None) -> Any:
        if not n or not payload:
            return dash.no_update
        return download(payload)

    @app.callback(
        Output("plan-deploy-download", "data"),
        Input("plan-deploy-btn", "n_clicks"),
        State("plan-payload", "data"),
        prevent_initial_call=True,
    )
    def _deploy(n: int | None, payload: dict[str, Any] | None) -> Any:
        doc = deploy_download(payload)
        return doc if n and doc else dash.no_update
