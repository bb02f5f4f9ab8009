"""Where the guide's tree is wrong, and by how much: every stored workload where the
tree's pick differs from the measured best, with the regret of following the tree.

URL: ``/agreement?model=&hardware=&quant=&phase=&dispatch=&thresholds=published|derived
&show=disagree|all&sort=&filter=`` (the grid's sort and filter are kept too,
``dashboard.grid_state``). Rows: ``service.agreement_view.disagreements`` (the rows of
``GET /api/v1/agreement?detail=true`` for the same filters). Each row links to its
evidence: the Pareto view of its cell and workload, and the run of the measured best.
"""

from __future__ import annotations

import math
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from analysis import columns as C
from analysis.tables import to_csv_text
from dashboard import components as ui
from dashboard import grid_state as gs
from dashboard.labelled import action, control
from dashboard.pages.agreement_grid import COLUMNS, EVIDENCE, agreement_grid
from service.agreement_view import (
    REGRET_DEFINITION,
    AgreementView,
    disagreements,
    slice_filename,
)
from service.errors import ServiceError
from service.frames import DashData
from service.scope import Scope
from service.threshold_slice import allowed_values

PATH = "/agreement"
_FILTERS = ("model", "hardware", "quant", "phase", "dispatch", "thresholds", "repeats", "show")
DEFAULT_DISPATCH = "default"  # the dispatch control's "balanced where stored"
# the grid columns a kept sort or filter may name (the evidence links sort on nothing)
GRID_FIELDS: tuple[str, ...] = tuple(c for c in COLUMNS if c != EVIDENCE)


def scope_from(values: dict[str, Any]) -> Scope:
    """Filter values ("all" or empty = unset) -> the Scope the API reads too."""

    def get(key: str) -> str | None:
        v = values.get(key)
        return None if v in (None, "", "all") else str(v)

    fields: dict[str, Any] = {k: get(k) for k in ("model", "hardware", "quant", "phase")}
    dispatch = values.get("dispatch")
    fields["dispatch"] = None if dispatch in (None, "", DEFAULT_DISPATCH) else str(dispatch)
    return Scope(**fields)


def _show(values: dict[str, Any]) -> Any:
    return "all" if values.get("show") == "all" else "disagree"


def _thresholds(values: dict[str, Any]) -> Any:
    v = values.get("thresholds")
    return v if v in ("derived", "validated") else "published"


def _repeats(values: dict[str, Any]) -> Any:
    return "latest" if values.get("repeats") == "latest" else "median"


def view(data: DashData, values: dict[str, Any]) -> AgreementView:
    return disagreements(
        data, scope_from(values), _thresholds(values), _show(values), _repeats(values)
    )


def update(data: DashData, values: dict[str, Any], gridstate: Any = None) -> tuple[Any, str]:
    """Filters and the grid's kept sort/filter (``agreement-gridstate``) -> (grid or
    empty state, URL search)."""
    state = gs.from_store(gridstate, GRID_FIELDS)
    search = agreement_search(values, state)
    try:
        ans = view(data, values)
    except ServiceError as err:
        return ui.empty_state(f"{err.field}: {err.msg}", test_id="agreement-error"), search
    if ans.n_workloads == 0:
        return ui.empty_state(
            "No stored workload matches these filters.",
            ["set the filters to “all”", "upload a bench_moe sweep"],
            test_id="agreement-empty",
        ), search
    median = ans.median_regret_pct
    pct = ans.agreement_pct
    counts = (
        f"Agreement {'N/A' if math.isnan(pct) else f'{pct:.1f} %'}: the tree's pick agrees "
        f"with the measured best in {ans.n_agree:,} of the {ans.n_compared:,} workloads "
        f"whose pick was measured ({ans.n_workloads - ans.n_compared:,} of "
        f"{ans.n_workloads:,} not compared); it differs in {ans.n_disagree:,}; median "
        f"regret {'—' if math.isnan(median) else f'{median:.1f} %'} over the "
        f"{ans.n_pick_measured:,} disagreements whose pick was measured."
    )
    summary = html.P(
        ui.with_synthetic_note(bool(ans.provenance.get("synthetic")), counts),
        className="status",
        **ui.attrs(data_testid="agreement-count"),
    )
    if ans.rows.empty:
        return html.Div(
            [summary, ui.empty_state("The tree agrees with every measured best here.")]
        ), search
    grid = agreement_grid(ans.rows)
    if state.sort:  # else the grid's own default (regret, largest first)
        grid.columnDefs = gs.apply_sort(grid.columnDefs, state)
    if state.filter:
        grid.filterModel = dict(state.filter)
    return html.Div([summary, grid]), search


def agreement_search(values: dict[str, Any], state: gs.GridState | None = None) -> str:
    """The URL search of the filters and the grid's sort/filter (defaults left out)."""
    return ui.search_string(
        {k: (None if values.get(k) in (None, "", "all") else values.get(k)) for k in _FILTERS}
        | {
            "dispatch": None
            if values.get("dispatch") in (None, "", DEFAULT_DISPATCH)
            else values.get("dispatch")
        }
        | {"show": None if _show(values) == "disagree" else "all"}
        | {"thresholds": None if _thresholds(values) == "published" else _thresholds(values)}
        | {"repeats": None if _repeats(values) == "median" else "latest"}
        | (state or gs.GridState()).params()
    )


def csv_download(data: DashData, values: dict[str, Any]) -> dict[str, Any] | None:
    try:
        ans = view(data, values)
    except ServiceError:
        return None
    cols = [c for c in COLUMNS if c in ans.rows and c != EVIDENCE]
    return {
        "content": to_csv_text(ans.rows, cols),
        "filename": slice_filename(
            scope_from(values), _thresholds(values), _show(values), _repeats(values)
        ),
        "type": "text/csv",
    }


def dispatch_options(data: DashData) -> list[dict[str, Any]]:
    """The routing control: the default (balanced where stored), every pattern, or one
    stored label."""
    labels = allowed_values(data, C.DISPATCH)
    return [
        {"label": "balanced where stored (default)", "value": DEFAULT_DISPATCH},
        {"label": "all patterns (each workload on its own)", "value": "all"},
        *ui.options(labels),
    ]


def _options(values: list[str]) -> list[dict[str, Any]]:
    return [{"label": "all", "value": "all"}, *ui.options(values)]


_control = control  # the label names the dropdown or radio group (dashboard.labelled)


def layout(data: DashData, **query: Any) -> html.Div:
    cov = data.coverage()
    values = {k: ui.first(query, k) for k in _FILTERS}

    def stored(col: str) -> list[str]:
        return sorted({str(v) for v in cov[col].dropna().unique()}) if len(cov) else []

    def pick(key: str, allowed: list[str]) -> str:
        v = values.get(key)
        return v if v in allowed else "all"

    allowed = {
        "model": stored(C.MODEL),
        "hardware": stored(C.HARDWARE),
        "quant": stored(C.QUANT),
        "phase": ["decode", "prefill"],
    }
    # the body shows what the controls show: an unknown value falls back to "all"
    values |= {key: pick(key, opts) for key, opts in allowed.items()}
    state = gs.parse(query, GRID_FIELDS).to_store()
    body, _ = update(data, values, state)
    radio: dict[str, Any] = {"inline": True}
    return html.Div(
        [
            dcc.Location(id="agreement-url", refresh=False),
            dcc.Store(id="agreement-gridstate", data=state),
            html.H1("Where the guide's tree disagrees with the measurements"),
            html.P(
                [
                    "Every stored workload where the decision tree's pick (backend and comm) "
                    "differs from the measured best. ",
                    html.Strong("Regret"),
                    f": {REGRET_DEFINITION}. Sort and filter in the column headers; each row "
                    "links to its evidence.",
                ],
                className="lead",
                **ui.attrs(data_testid="regret-definition"),
            ),
            html.Div(
                [
                    _control(
                        "model",
                        dcc.Dropdown(
                            id="agreement-model",
                            options=_options(allowed["model"]),
                            value=values["model"],
                            clearable=False,
                        ),
                    ),
                    _control(
                        "hardware",
                        dcc.Dropdown(
                            id="agreement-hardware",
                            options=_options(allowed["hardware"]),
                            value=values["hardware"],
                            clearable=False,
                        ),
                    ),
                    _control(
                        "precision",
                        dcc.Dropdown(
                            id="agreement-quant",
                            options=_options(allowed["quant"]),
                            value=values["quant"],
                            clearable=False,
                        ),
                    ),
                    _control(
                        "phase",
                        dcc.RadioItems(
                            id="agreement-phase",
                            options=_options(allowed["phase"]),
                            value=values["phase"],
                            **radio,
                        ),
                    ),
                    _control(
                        "routing (dispatch pattern)",
                        dcc.Dropdown(
                            id="agreement-dispatch",
                            options=dispatch_options(data),
                            value=values.get("dispatch") or DEFAULT_DISPATCH,
                            clearable=False,
                        ),
                    ),
                    _control(
                        "thresholds",
                        dcc.RadioItems(
                            id="agreement-thresholds",
                            options=[
                                {"label": "published", "value": "published"},
                                {"label": "derived from the data", "value": "derived"},
                                {"label": "validated", "value": "validated"},
                            ],
                            value=_thresholds(values),
                            **radio,
                        ),
                    ),
                    _control(
                        "repeat runs",
                        dcc.RadioItems(
                            id="agreement-repeats",
                            options=[
                                {"label": "median", "value": "median"},
                                {"label": "latest run", "value": "latest"},
                            ],
                            value=_repeats(values),
                            **radio,
                        ),
                    ),
                    _control(
                        "show",
                        dcc.RadioItems(
                            id="agreement-show",
                            options=[
                                {"label": "disagreements", "value": "disagree"},
                                {"label": "all workloads", "value": "all"},
                            ],
                            value=_show(values),
                            **radio,
                        ),
                    ),
                    action(ui.download_button("agreement-csv-btn", "Download CSV")),
                ],
                className="controls",
            ),
            ui.loading(html.Div(body, id="agreement-body"), "agreement-loading"),
            dcc.Download(id="agreement-download"),
        ]
    )


def register(app: dash.Dash, data: DashData) -> None:
    ids = [f"agreement-{k}" for k in _FILTERS]

    @app.callback(
        Output("agreement-body", "children"),
        Output("agreement-url", "search"),
        *[Input(i, "value") for i in ids],
        State("agreement-gridstate", "data"),
        prevent_initial_call=True,
    )  # layout() rendered the first table
    def _update(*vals: Any) -> tuple[Any, str]:
        *controls, kept = vals
        return update(data, dict(zip(_FILTERS, controls, strict=True)), kept)

    gs.register_grid_state(app, "agreement", ids, grid_changed)

    @app.callback(
        Output("agreement-download", "data"),
        Input("agreement-csv-btn", "n_clicks"),
        *[State(i, "value") for i in ids],
        prevent_initial_call=True,
    )
    def _csv(n: int | None, *vals: Any) -> Any:
        return csv_download(data, dict(zip(_FILTERS, vals, strict=True))) if n else dash.no_update


def grid_changed(
    column_state: Any, filter_model: Any, controls: list[Any], kept: Any = None
) -> tuple[dict[str, Any], str]:
    """The grid sorted or filtered -> (kept grid state, URL search with it); what the
    grid has not reported yet stays as ``kept`` holds it."""
    state = gs.from_grid(column_state, filter_model, GRID_FIELDS, kept)
    return state.to_store(), agreement_search(dict(zip(_FILTERS, controls, strict=True)), state)
