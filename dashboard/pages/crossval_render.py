"""The /crossval result areas (summary, rules side by side, the guide's table beside
ours, status figure, ledger, sweeps to run next) as Dash components, from a
``service.crossval_page.CrossvalView`` and a ``service.crossval_sweeps.SweepReport``. Counts
come from ``service.crossval.view_counts``, the figure from
``dashboard.crossval_figures``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import Input, Output, State, dcc, html

from analysis import columns as C
from analysis import crossval_columns as cc
from analysis.crossval_guide import guide_summary
from analysis.crossval_sweeps import N_ROWS
from dashboard import components as ui
from dashboard import crossval_figures as XF
from dashboard.pages.crossval_filters import Filters
from dashboard.pages.crossval_grids import (
    FIRST_ROWS,
    grid_rows,
    ledger_first_page,
    ledger_grid,
    ledger_grid_height,
    ledger_widths,
)
from dashboard.pages.crossval_tables import (
    coverage_grid,
    guide_grid,
    plan_grid,
    published_grid,
    rules_grid,
    summary_grid,
)
from service.crossval import ViewCounts, view_counts
from service.crossval_page import CrossvalView, LedgerState
from service.crossval_sweeps import SweepReport


def status_line(counts: ViewCounts) -> str:
    """The ledger's count line: workloads per status, how many use the nearest measured
    num_tokens and how many have a stored end-to-end outcome."""
    parts = [f"{n:,} {s}" for s, n in counts.by_status.items()]
    text = f"{counts.total:,} workloads" + (": " + ", ".join(parts) if parts else "")
    text += f"; {counts.nearest:,} use the nearest measured num_tokens"
    text += f"; {counts.with_outcome:,} with a stored end-to-end outcome."
    return text


def _no_candidates(f: Filters) -> Any:
    return ui.empty_state(
        "No bench_moe candidates match these serving workloads: nothing is compared yet.",
        [
            "upload bench_moe sweeps of the same model, quant, hardware and world size "
            "(`moedash ingest FILE` or `moedash upload`, POST /api/v1/runs)",
            f"raise the token tolerance (now x{f.tol:g}) if only num_tokens is missing",
            "the ledger's “reason” column says which key has no candidates",
        ],
        test_id="cv-no-candidates",
    )


def render_summary(res: CrossvalView, f: Filters) -> Any:
    """The summary area: its scope line and the guide's table, or why there is none."""
    comparable = res.ledger[cc.STATUS].isin([cc.MATCH, cc.MISMATCH]).any()
    scope = " · ".join(x for x in (f.model and XF.model_display(f.model), f.hardware) if x)
    head = html.P(
        f"{scope or 'All models and hardware'}; all phases; match rule “{f.rule}”. "
        f"Outcomes classified at ±{f.band:g} %; nearest num_tokens within x{f.tol:g}."
        + ("" if f.show_empty else " Rows with no compared workload are hidden."),
        className="status",
        **ui.attrs(data_testid="cv-summary-scope"),
    )
    if res.ledger.empty:
        return ui.empty_state(
            "No serving workloads for this model and hardware.",
            ["choose “all” models or hardware"],
            test_id="cv-no-workloads",
        )
    headline = headline_of(res)
    if not comparable:
        return html.Div([headline, head, _no_candidates(f)])
    return html.Div([headline, head, summary_grid(res.summary)])


def render_ledger(res: CrossvalView, all_rows: bool = False, first: int = FIRST_ROWS) -> Any:
    """The ledger area: counts, a note when the grid holds part of the rows, and the
    grid: the first ``first`` rows of the view (Match and Mismatch first), or every row
    (up to ``MAX_GRID_ROWS``) with ``all_rows``."""
    view = res.view
    if view.empty:
        return ui.empty_state(
            "No workloads match these filters.",
            ["set phase or status to “all”", "choose another model or hardware"],
            test_id="cv-ledger-empty",
        )
    shown = grid_rows(view) if all_rows else view.head(first)
    widths = ledger_widths(shown)  # once, for the grid and its HTML first page
    part = None
    if len(shown) < len(view) and all_rows:
        part = html.P(
            f"The grid shows {len(shown):,} of {len(view):,} rows (Match and "
            "Mismatch first); narrow the filters to see the rest here. The ledger "
            "CSV holds every row.",
            className="status",
            **ui.attrs(data_testid="cv-ledger-capped"),
        )
    elif len(shown) < len(view):
        part = html.P(
            f"The grid holds the first {len(shown):,} of {len(view):,} rows (Match and "
            "Mismatch first); sorting and filtering in its headers apply to these. Tick "
            "“every ledger row in the grid” to sort and filter all of them; the ledger "
            "CSV holds every row.",
            className="status",
            **ui.attrs(data_testid="cv-ledger-first-page"),
        )
    return html.Div(
        [
            html.P(
                status_line(view_counts(view)),
                className="status",
                **ui.attrs(data_testid="cv-ledger-count"),
            ),
            part,
            # the first page as HTML at once; the grid, drawn hidden, takes its place
            # when it has drawn its rows (register_ledger_swap)
            html.Div(
                ledger_first_page(shown, widths),
                id="cv-ledger-static-box",
                style={"minHeight": ledger_grid_height(len(shown))},  # no shift at the swap
            ),
            html.Div(
                ledger_grid(shown, widths), id="cv-ledger-grid-box", className="ledger-pending"
            ),
        ]
    )


def render_stale(state: LedgerState | None) -> Any:
    """A visible note while the ledger shown predates the newest sweeps or serving
    configs (None when it is current)."""
    if state is None or not state.stale:
        return None
    if state.failed and not state.refreshing:
        head = (
            "The ledger could not be brought up to date (the refresh failed; see the server log)."
        )
        hints = [
            "every table on this page shows the previous stored ledger, computed before "
            "the newest sweeps or serving configs",
            "GET /api/v1/crossval/ledger computes the current one",
        ]
    else:
        head = "Updating… new sweeps or serving configs are stored; the ledger is being recomputed."
        hints = [
            "until it is stored, every table on this page shows the previous ledger "
            "(computed before them), not a mix",
            "the page reloads by itself when the new ledger is stored",
        ]
    return ui.empty_state(head, hints, test_id="cv-stale")


def render_figure(res: CrossvalView) -> Any:
    """The status bars of the ledger (None when no workload is mappable)."""
    if not res.ledger[cc.STATUS].isin(XF.STATUSES).any():
        return None
    return dcc.Graph(
        id="cv-status-graph",
        figure=XF.status_figure(res.ledger),
        config={**ui.GRAPH_CONFIG, "responsive": True},
        className="pareto-graph",
    )


def deferred_figure(graph: Any) -> tuple[Any, Any]:
    """For the page's first view: (what ``cv-figure`` shows, what the
    ``cv-figure-deferred`` store holds). ``graph`` (from :func:`render_figure`) is drawn
    only once the ledger grid has shown its rows (``register_deferred_figure``), so the
    ledger - the page's main content - is not queued behind the chart on the browser's
    one main thread. Until then a box of the chart's height says it is coming (no layout
    shift)."""
    if not isinstance(graph, dcc.Graph):
        return graph, None
    # Dash sets a component's props as attributes its classes do not declare
    height = graph.figure.layout.height or 450  # type: ignore[attr-defined]
    placeholder = html.Div(
        html.P("Drawing the status chart…", className="muted"),
        style={"minHeight": f"{height}px"},
        **ui.attrs(data_testid="cv-figure-pending", aria_busy="true"),
    )
    to_json: Callable[[], dict[str, Any]] = graph.to_plotly_json  # unannotated in Dash
    return placeholder, to_json()


def register_deferred_figure(app: Any) -> None:
    """The browser side of :func:`deferred_figure`: when the ledger grid first reports its
    displayed rows, the stored chart replaces the placeholder and the store is emptied
    (later changes come from the page's callback; no server round trip here)."""
    app.clientside_callback(
        """function (rows, graph) {
            var noUpdate = window.dash_clientside.no_update;
            if (!graph || rows === undefined || rows === null) { return [noUpdate, noUpdate]; }
            return [graph, null];
        }""",
        Output("cv-figure", "children", allow_duplicate=True),
        Output("cv-figure-deferred", "data"),
        Input("cv-ledger-grid", "virtualRowData"),
        State("cv-figure-deferred", "data"),
        prevent_initial_call=True,
    )


def register_ledger_swap(app: Any) -> None:
    """The browser side of the ledger's first page (:func:`render_ledger`): once the grid
    reports its displayed rows, it is shown and the HTML first page is hidden."""
    app.clientside_callback(
        """function (rows) {
            var noUpdate = window.dash_clientside.no_update;
            if (rows === undefined || rows === null) { return [noUpdate, noUpdate]; }
            return ['ledger-ready', true];
        }""",
        Output("cv-ledger-grid-box", "className"),
        Output("cv-ledger-static-box", "hidden"),
        Input("cv-ledger-grid", "virtualRowData"),
        prevent_initial_call=True,
    )


def render_rules(res: CrossvalView) -> Any:
    """Every rule's Match cell side by side (nothing compared: an empty state)."""
    if res.rules.empty:
        return ui.empty_state(
            "No compared workloads: every rule reads 0/0 here.",
            ["upload bench_moe sweeps of the serving workloads' shapes (see Sweeps to run next)"],
            test_id="cv-rules-empty",
        )
    return rules_grid(res.rules)


def headline_of(res: CrossvalView) -> Any:
    """The gap between ours and the guide, explained: the first line of the summary
    area, above every table."""
    if res.fit is None:
        return None
    return html.P(res.fit.headline, className="status", **ui.attrs(data_testid="cv-headline"))


def _fit_tables(res: CrossvalView) -> list[Any]:
    """Per rule its fit to the guide; per guide row the rules reproducing it or why none."""
    fit = res.fit
    if fit is None:
        return []
    rules = html.Table(
        [html.Tr([html.Th(h) for h in ("rule", "mean error (points)", "rows", "reproduced")])]
        + [
            html.Tr(
                [
                    html.Td(r["spec"] + (" (default)" if r["spec"] == fit.default else "")),
                    html.Td(ui.fmt(r["mean_error_points"])),
                    html.Td(r["n_rows"]),
                    html.Td(r["n_reproduced"]),
                ]
            )
            for r in fit.fit.to_dict("records")
        ],
        **ui.attrs(data_testid="cv-guide-fit"),
    )
    rows = html.Table(
        [
            html.Tr(
                [
                    html.Th(h)
                    for h in (
                        "model",
                        "hardware",
                        "phase",
                        "guide",
                        "ours",
                        "reproduced by / why not",
                    )
                ]
            )
        ]
        + [
            html.Tr(
                [
                    html.Td(r["model"]),
                    html.Td(r["hardware"]),
                    html.Td(r["phase"]),
                    html.Td(f"{r['guide_match']}/{r['guide_n']}"),
                    html.Td(f"{r['exact']}/{r['ours_n']} exact"),
                    html.Td(r["reproduced_by"] or r["explanation"]),
                ]
            )
            for r in fit.rows.to_dict("records")
        ],
        **ui.attrs(data_testid="cv-guide-rows"),
    )
    return [
        html.H3(f"Which rule reproduces the guide (fixed ISL/OSL; default: {fit.default})"),
        rules,
        html.H3("Each guide row: the rules that reproduce it, or why none does"),
        rows,
    ]


def render_guide(res: CrossvalView, f: Filters) -> Any:
    """The guide's rows with ours (under the page's rule) and the causes, the rules that
    reproduce each row, then the guide's table as published."""
    return html.Div(
        [
            html.P(
                f"Ours under the “{f.rule}” rule (noise band {f.noise:g} %), all imported "
                "serving configs; causes count our workloads that are not exact Matches.",
                className="status",
                **ui.attrs(data_testid="cv-guide-scope"),
            ),
            guide_grid(res.guide),
            *_fit_tables(res),
            html.H3("The guide's table as published"),
            published_grid(guide_summary()),
        ]
    )


def _cannot_fill(rep: SweepReport) -> list[Any]:
    """The no-data rows bench_moe cannot fill (a deployed backend it does not build)."""
    if rep.cannot is None or rep.cannot.empty:
        return []
    counts = rep.cannot.groupby([C.HARDWARE, C.BACKEND]).size()
    return [
        html.H3("Rows bench_moe cannot fill (no command)"),
        html.Ul(
            [
                html.Li(f"{hw} {backend}: {n} workload(s), bench_moe does not build {backend}")
                for (hw, backend), n in counts.items()
            ],
            className="notes",
            **ui.attrs(data_testid="cv-sweeps-cannot"),
        ),
    ]


def render_sweeps(rep: SweepReport) -> Any:
    """The plan (one bench_moe command per group) and the coverage map."""
    head = html.P(
        f"{len(rep.plan):,} bench_moe command(s) cover "
        f"{int(rep.plan[N_ROWS].sum()) if len(rep.plan) else 0:,} no-data workload(s); "
        f"the script downloads as {rep.filename}.",
        className="status",
        **ui.attrs(data_testid="cv-sweeps-count"),
    )
    plan = (
        plan_grid(rep.plan)
        if len(rep.plan)
        else ui.empty_state(
            "Nothing to run: every mappable workload here has bench_moe data.",
            [],
            test_id="cv-sweeps-empty",
        )
    )
    return html.Div(
        [
            head,
            plan,
            html.H3("Coverage: what the serving configs need vs what is measured"),
            coverage_grid(rep.coverage),
            *_cannot_fill(rep),
        ]  # fmt: skip
    )
