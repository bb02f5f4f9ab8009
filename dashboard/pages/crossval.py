"""Cross-validation: deployed serving configs vs the bench_moe ranking (the guide's
"Cross Validation of Microbenchmark with End-to-end Performance").

URL: ``/crossval?model=&hardware=&phase=&status=&tol=&band=&rule=&noise=&show=`` (see
``crossval_filters``).

The numbers are the API's: ``service.crossval.crossval_view`` is the ledger of
``compute_ledger`` over the stored workloads of the selected model and hardware (as ``GET
/api/v1/crossval/ledger``) and its ``summary_table`` (as ``GET
/api/v1/crossval/summary?model=&hardware=&band_pct=&token_tolerance=&rule=&noise_pct=``);
the rules side by side are ``/rules``, the guide's table beside ours ``/guide`` and the
sweeps ``/sweeps`` (``service.crossval_sweeps.sweep_report``). Phase and status narrow the
ledger only; the summary always splits prefill and decode, as the guide's table does.
The ledger is stored (computed at import or after a sweep upload, not per view) and
what the page derives from it is cached in memory under the stored ledger's key
(``service.crossval_page``); outcomes are read on every update (they are small and can
be replaced in place). Right after an upload the page shows the previous stored ledger
with an "Updating…" note (``cv-stale``) and polls (``cv-poll``, every
``POLL_MS``) until the new one is stored, then redraws. The ledger grid gets its first
``FIRST_ROWS`` rows; ``rows=all`` loads every row.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from analysis import crossval_columns as cc
from analysis.crossval_rules import RULE_DEFINITIONS, RULES
from analysis.tables import to_csv_text
from dashboard import components as ui
from dashboard import crossval_figures as XF
from dashboard.pages.crossval_filters import (
    AGENTIC,
    ALL,
    ALL_ROWS,
    SHOW_ALL,
    Filters,
    make_filters,
    parse_query,
)
from dashboard.pages.crossval_render import (
    deferred_figure,
    register_deferred_figure,
    register_ledger_swap,
    render_figure,
    render_guide,
    render_ledger,
    render_rules,
    render_stale,
    render_summary,
    render_sweeps,
)
from service import foreground
from service.crossval import (
    BAND_RANGE,
    LEDGER_VIEW_COLUMNS,
    NOISE_RANGE,
    PHASES,
    STATUSES,
    TOL_RANGE,
)
from service.crossval_page import (
    CrossvalView,
    LedgerState,
    choices,
    crossval_view,
    has_workloads,
    ledger_state,
    page_cached,
)
from service.crossval_refresh import refresher_for
from service.crossval_sweeps import SweepReport, cached_sweep_report
from service.frames import DashData

_log = logging.getLogger(__name__)
PATH = "/crossval"
NO_IMPORT_HINTS: tuple[str, ...] = (
    "run `moedash import-serving DIR` (DIR laid out like shared/data: InferenceX masters "
    "under inferencex/configs/ plus the srt-slurm recipes)",
    "or POST /api/v1/serving-configs (multipart, one 'files' part per YAML, named by its "
    "path under the data root; needs an upload token)",
)


def _shown(f: Filters) -> list[str]:
    """The "show" checklist's value: its toggles that are on."""
    return [v for v, on in ((SHOW_ALL, f.show_empty), (AGENTIC, f.agentic)) if on]


def compute(data: DashData, f: Filters, state: LedgerState | None = None) -> CrossvalView:
    """Ledger, view, summaries and the guide's table for the page's filters
    (``service.crossval_page``)."""
    return crossval_view(
        data, f.model, f.hardware, f.phase, f.status, f.tol, f.band, f.rule, f.noise,
        f.show_empty, state, fixed_only=not f.agentic,
    )  # fmt: skip


def sweeps(data: DashData, f: Filters, state: LedgerState | None = None) -> SweepReport:
    """The sweeps to run next for the page's model, hardware and phase."""
    return cached_sweep_report(data, f.model, f.hardware, f.phase, f.tol, state)


# update()'s outputs, in order (the callback adds the stale note and the poll switch)
OUTPUTS: tuple[tuple[str, str], ...] = (
    ("cv-notes", "children"),
    ("cv-summary", "children"),
    ("cv-rules", "children"),
    ("cv-guide", "children"),
    ("cv-figure", "children"),
    ("cv-ledger", "children"),
    ("cv-sweeps", "children"),
    ("cv-url", "search"),
)
N_OUTPUTS = len(OUTPUTS)
POLL_MS = 2000  # while the shown ledger is stale: how often to look for the new one


def update(data: DashData, *values: Any) -> tuple[Any, ...]:
    """Controls -> (notes, summary, rules, guide, figure, ledger, sweeps, URL search)."""
    return page_update(data, *values)[:N_OUTPUTS]


def page_update(data: DashData, *values: Any) -> tuple[Any, ...]:
    """:func:`update`'s outputs, then the stale-ledger note and whether the poll is off
    (the callback's outputs)."""
    f, notes = make_filters(*values[: len(IDS)])
    note = (
        html.Ul([html.Li(n) for n in notes], className="notes", **ui.attrs(data_testid="cv-notes"))
        if notes
        else None
    )
    if not has_workloads(data):
        empty = ui.empty_state(
            "No serving configs imported yet.", list(NO_IMPORT_HINTS), test_id="cv-no-imports"
        )
        return note, empty, None, None, None, None, None, f.search(), None, True
    st = ledger_state(data, f.tol)
    # Everything shown derives from the stored ledger, the filters and the outcomes: an
    # unchanged view is answered from memory (and stays so right after an upload, while
    # the previous ledger is shown).
    key = ("page", st.key, f, tuple(notes), data.store.crossval.outcomes_version())
    body = page_cached(data, key, lambda: _render(data, f, note, st))
    return (*body, render_stale(st), not st.stale)


def _render(data: DashData, f: Filters, note: Any, st: LedgerState) -> tuple[Any, ...]:
    res = compute(data, f, st)
    rep = sweeps(data, f, st)
    return (
        note,
        render_summary(res, f),
        render_rules(res),
        render_guide(res, f),
        render_figure(res),
        render_ledger(res, f.all_rows),
        render_sweeps(rep),
        f.search(),
    )


def warm(data: DashData) -> None:
    """Compute and cache the page's default view (the first visitor's), so it is
    answered from memory; errors are logged (the page computes it on demand)."""
    try:
        foreground.step_aside()  # in the background: after the visitor being answered
        data.invalidate()  # called right after a store: read the new version now
        if has_workloads(data):
            page_update(data)
    except Exception:  # noqa: BLE001 - warming is best effort
        _log.exception("cross-validation warm-up failed")


def start_warm(data: DashData) -> threading.Thread:
    """:func:`warm` in a daemon thread (started with the server: serving starts at once,
    and a first view arriving meanwhile waits for the same computation, not a second)."""

    def run() -> None:
        with foreground.background():
            warm(data)

    thread = threading.Thread(target=run, name="moedash-crossval-warm", daemon=True)
    thread.start()
    return thread


def poll(data: DashData, tol: Any) -> str | None:
    """The stored ledger key once the ledger for the current inputs is stored (the
    page then redraws), else None (keep polling)."""
    st = ledger_state(data, make_filters(tol=tol)[0].tol)
    return None if st.stale else st.key


def summary_csv(data: DashData, f: Filters) -> dict[str, Any]:
    """The summary table as a CSV download (``SUMMARY_COLUMNS``)."""
    table = compute(data, f).summary
    return {
        "content": to_csv_text(table, list(cc.SUMMARY_COLUMNS)),
        "filename": f"crossval-summary-{f.rule}.csv",
        "type": "text/csv",
    }


def ledger_csv(data: DashData, f: Filters) -> dict[str, Any]:
    """The filtered ledger with outcomes as a CSV download (every view column)."""
    view = compute(data, f).view
    return {
        "content": to_csv_text(view, list(LEDGER_VIEW_COLUMNS)),
        "filename": f"crossval-ledger-{f.rule}.csv",
        "type": "text/csv",
    }


def sweeps_sh(data: DashData, f: Filters) -> dict[str, Any]:
    """The sweeps to run next as a shell script named for its slice."""
    rep = sweeps(data, f)
    return {"content": rep.script, "filename": rep.filename, "type": "text/x-shellscript"}


# ------------------------------------------------------------------ layout
METHOD = (
    "Each serving workload (an InferenceX Pareto point's prefill or decode pool) is mapped "
    "to a bench_moe shape: model, quant, hardware, world size, num_tokens of the MoE "
    "forward, CUDA graph on/off and attention DP/TP, and compared with the successful "
    "bench_moe candidates of that shape (lowest score in ms first) under the chosen match "
    "rule (defined below): Match or Mismatch. If the exact num_tokens was "
    "not measured, the nearest within the token tolerance (a factor, on a log axis) is used. "
    "Each Mismatch served end to end with both configs is an Improvement when the "
    "bench_moe candidate raises tps_per_user (tokens/s/user) by more than the band, Flat "
    "within ±band (bounds included), a Regression below -band."
)


def _ctl(text: str, comp: Any, wide: bool = False) -> html.Div:
    return html.Div(
        [html.Label(text, htmlFor=comp.id), comp], className="control wide" if wide else "control"
    )


def _dropdown(
    cid: str, values: list[str], value: str | None, labels: dict[str, str] | None = None
) -> dcc.Dropdown:
    opts = [
        {"label": "all", "value": ALL},
        *[{"label": (labels or {}).get(v, v), "value": v} for v in values],
    ]
    return dcc.Dropdown(
        id=cid, options=opts, value=value if value in values else ALL, clearable=False
    )


def layout(data: DashData, **query: Any) -> html.Div:
    head = [
        html.H1("Cross validation: bench_moe vs deployed serving configs"),
        html.P(METHOD, className="lead", **ui.attrs(data_testid="cv-method")),
    ]
    if not has_workloads(data):
        return html.Div(
            [
                *head,
                ui.empty_state(
                    "No serving configs imported yet.",
                    list(NO_IMPORT_HINTS),
                    test_id="cv-no-imports",
                ),
            ]
        )
    f, _notes = parse_query(query)
    models, hardware = choices(data)
    if f.model and f.model not in models:
        models = [*models, f.model]  # a permalink keeps its filter (shown as no workloads)
    if f.hardware and f.hardware not in hardware:
        hardware = [*hardware, f.hardware]
    model_labels = {
        m: f"{XF.model_display(m)} ({m})" if XF.model_display(m) != m else m for m in models
    }
    controls = html.Div(
        [
            _ctl("model", _dropdown("cv-model", models, f.model, model_labels), wide=True),
            _ctl("hardware", _dropdown("cv-hardware", hardware, f.hardware)),
            _ctl("phase", _dropdown("cv-phase", list(PHASES), f.phase)),
            _ctl("ledger status", _dropdown("cv-status", list(STATUSES), f.status)),
            _ctl(
                "match rule",
                dcc.Dropdown(
                    id="cv-rule",
                    options=[{"label": r, "value": r} for r in RULES],
                    value=f.rule,
                    clearable=False,
                ),
            ),
            _ctl(
                "noise band (%, rule within_noise)",
                dcc.Input(
                    id="cv-noise",
                    type="number",
                    min=NOISE_RANGE[0],
                    max=NOISE_RANGE[1],
                    step="any",
                    value=f.noise,
                    debounce=True,
                ),
            ),
            _ctl(
                "token tolerance (x, num_tokens)",
                dcc.Input(
                    id="cv-tol",
                    type="number",
                    min=TOL_RANGE[0],
                    max=TOL_RANGE[1],
                    step="any",
                    value=f.tol,
                    debounce=True,
                ),
            ),
            _ctl(
                "±band (%)",
                dcc.Input(
                    id="cv-band",
                    type="number",
                    min=BAND_RANGE[0],
                    max=BAND_RANGE[1],
                    step="any",
                    value=f.band,
                    debounce=True,
                ),
            ),
            html.Div(
                dcc.Checklist(
                    id="cv-show",
                    options=[
                        {"label": "show rows without mapped workloads", "value": SHOW_ALL},
                        {
                            "label": "guide fit: include agentic-coding traces (the guide's "
                            "table has fixed ISL/OSL only)",
                            "value": AGENTIC,
                        },
                    ],
                    value=_shown(f),
                ),
                className="control",
            ),
        ],
        className="controls",
    )
    # The answer for these controls, laid out with the page (no callback round trip before
    # it shows): the values are the controls' own, so the callback would compute the same.
    values = (
        *(v if v in opts else ALL for v, opts in ((f.model, models), (f.hardware, hardware),
                                                  (f.phase, PHASES), (f.status, STATUSES))),
        f.tol, f.band, f.rule, f.noise,
        _shown(f), [ALL_ROWS] if f.all_rows else [],
    )  # fmt: skip
    keys = [*(i for i, _ in OUTPUTS), "stale", "poll_off"]
    out = dict(zip(keys, page_update(data, *values), strict=True))
    figure_now, figure_later = deferred_figure(out["cv-figure"])
    rules = html.Dl(
        [x for r in RULES for x in (html.Dt(r), html.Dd(RULE_DEFINITIONS[r]))],
        className="definitions",
        **ui.attrs(data_testid="cv-rule-definitions"),
    )
    return html.Div(
        [
            dcc.Location(id="cv-url", refresh=False),
            dcc.Store(id="cv-url-init", data=out["cv-url"]),
            dcc.Interval(id="cv-poll", interval=POLL_MS, disabled=out["poll_off"]),
            dcc.Store(id="cv-ledger-seen"),
            dcc.Store(id="cv-figure-deferred", data=figure_later),
            *head,
            controls,
            html.Div(out["stale"], id="cv-stale", role="status"),
            html.Div(out["cv-notes"], id="cv-notes"),
            html.H2("Match rules"),
            rules,
            html.H2("Summary (the guide's table)"),
            html.P(
                "Per model and hardware. Match = Match / (Match + Mismatch), then the split "
                "by phase; Improvement, Flat and Regression count the Mismatches with a "
                "stored end-to-end outcome, out of all Mismatches. Phase and status filters "
                "apply to the ledger only.",
                className="muted",
            ),
            ui.download_button("cv-summary-csv-btn", "Download summary CSV"),
            ui.loading(html.Div(out["cv-summary"], id="cv-summary"), "cv-summary-loading"),
            html.H2("Every rule side by side (Match, per model and hardware)"),
            ui.loading(html.Div(out["cv-rules"], id="cv-rules"), "cv-rules-loading"),
            html.H2("The guide's table beside ours"),
            ui.loading(html.Div(out["cv-guide"], id="cv-guide"), "cv-guide-loading"),
            ui.loading(
                html.Div(
                    deferred_figure(out["cv-figure"]), id="cv-figure", style={"marginTop": "14px"}
                ),
                "cv-figure-loading",
            ),
            html.H2("Ledger: one row per serving workload"),
            html.P(
                "Deployed config (from the serving recipe) next to the best bench_moe "
                "candidate of the same shape. Sort and filter in the column headers; the "
                "CSV holds every ledger column for the page's filters.",
                className="muted",
            ),
            html.Div(
                [
                    ui.download_button("cv-ledger-csv-btn", "Download ledger CSV"),
                    dcc.Checklist(
                        id="cv-rows",
                        options=[{"label": "every ledger row in the grid", "value": ALL_ROWS}],
                        value=[ALL_ROWS] if f.all_rows else [],
                        inline=True,
                    ),
                ],
                className="row",
            ),
            ui.loading(html.Div(out["cv-ledger"], id="cv-ledger"), "cv-ledger-loading"),
            html.H2("Sweeps to run next"),
            html.P(
                "The fewest bench_moe commands that measure every no-data workload of this "
                "model, hardware and phase: rows sharing hardware, model, quant, world size, "
                "attention family and CUDA graph are one command, their num_tokens merged.",
                className="muted",
            ),
            ui.download_button("cv-sweeps-sh-btn", "Download sweeps script (.sh)"),
            ui.loading(html.Div(out["cv-sweeps"], id="cv-sweeps"), "cv-sweeps-loading"),
            dcc.Download(id="cv-summary-download"),
            dcc.Download(id="cv-ledger-download"),
            dcc.Download(id="cv-sweeps-download"),
        ]
    )


IDS: tuple[tuple[str, str], ...] = (
    ("cv-model", "value"),
    ("cv-hardware", "value"),
    ("cv-phase", "value"),
    ("cv-status", "value"),
    ("cv-tol", "value"),
    ("cv-band", "value"),
    ("cv-rule", "value"),
    ("cv-noise", "value"),
    ("cv-show", "value"),
    ("cv-rows", "value"),
)


def register(app: dash.Dash, data: DashData) -> None:
    # a sweep upload's refresh stored the new ledger: compute the default view for it
    refresher_for(data.store).on_stored(lambda: warm(data))

    @app.callback(
        *[Output(i, p) for i, p in OUTPUTS],
        Output("cv-stale", "children"),
        Output("cv-poll", "disabled"),
        *[Input(i, p) for i, p in IDS],
        Input("cv-ledger-seen", "data"),  # set by the poll: the new ledger is stored
        prevent_initial_call=True,  # the layout holds the first answer
    )
    def _update(*values: Any) -> tuple[Any, ...]:
        return page_update(data, *values)

    ui.sync_url(app, "cv-url", "cv-url-init")
    register_deferred_figure(app)
    register_ledger_swap(app)

    @app.callback(
        Output("cv-ledger-seen", "data"),
        Input("cv-poll", "n_intervals"),
        State("cv-tol", "value"),
        prevent_initial_call=True,
    )
    def _poll(_n: int | None, tol: Any) -> Any:
        key = poll(data, tol)
        return dash.no_update if key is None else key

    for button, target, build in (
        ("cv-summary-csv-btn", "cv-summary-download", summary_csv),
        ("cv-ledger-csv-btn", "cv-ledger-download", ledger_csv),
        ("cv-sweeps-sh-btn", "cv-sweeps-download", sweeps_sh),
    ):
        _download(app, data, button, target, build)


def _download(app: dash.Dash, data: DashData, button: str, target: str, build: Any) -> None:
    @app.callback(
        Output(target, "data"),
        Input(button, "n_clicks"),
        *[State(i, p) for i, p in IDS],
        prevent_initial_call=True,
    )
    def _send(n: int | None, *values: Any) -> Any:
        return build(data, make_filters(*values)[0]) if n else dash.no_update
