"""The /crossval result areas (summary, status figure, ledger) as Dash components, from
a ``service.crossval.CrossvalView``. Counts come from ``service.crossval.view_counts``,
the figure from ``dashboard.crossval_figures``."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from analysis import crossval_columns as cc
from dashboard import components as ui
from dashboard import crossval_figures as XF
from dashboard.pages.crossval_filters import Filters
from dashboard.pages.crossval_grids import grid_rows, ledger_grid, summary_grid
from service.crossval import CrossvalView, ViewCounts, view_counts


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
        f"{scope or 'All models and hardware'}; all phases. Outcomes "
        f"classified at ±{f.band:g} %; nearest num_tokens within x{f.tol:g}.",
        className="status",
        **{"data-testid": "cv-summary-scope"},
    )
    if res.ledger.empty:
        return ui.empty_state(
            "No serving workloads for this model and hardware.",
            ["choose “all” models or hardware"],
            test_id="cv-no-workloads",
        )
    if not comparable:
        return html.Div([head, _no_candidates(f)])
    return html.Div([head, summary_grid(res.summary)])


def render_ledger(res: CrossvalView) -> Any:
    """The ledger area: counts, a note when the grid is capped, and the grid."""
    view = res.view
    if view.empty:
        return ui.empty_state(
            "No workloads match these filters.",
            ["set phase or status to “all”", "choose another model or hardware"],
            test_id="cv-ledger-empty",
        )
    shown = grid_rows(view)
    cap = None
    if len(shown) < len(view):
        cap = html.P(
            f"The grid shows {len(shown):,} of {len(view):,} rows (Match and "
            "Mismatch first); narrow the filters to see the rest here. The ledger "
            "CSV holds every row.",
            className="status",
            **{"data-testid": "cv-ledger-capped"},
        )
    return html.Div(
        [
            html.P(
                status_line(view_counts(view)),
                className="status",
                **{"data-testid": "cv-ledger-count"},
            ),
            cap,
            ledger_grid(shown),
        ]
    )


def render_figure(res: CrossvalView) -> Any:
    """The status bars of the ledger (None when no workload is mappable)."""
    if not res.ledger[cc.STATUS].isin(XF.STATUSES).any():
        return None
    return dcc.Graph(
        id="cv-status-graph",
        figure=XF.status_figure(res.ledger),
        config={"displaylogo": False, "responsive": True},
        className="pareto-graph",
    )
