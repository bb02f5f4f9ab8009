"""The dashboard's pages in one table: path, module, navigation label and what the shell
does for each (navigation bar, plotly.js with the layout, warm-up). The router, the
navigation bar, the shell and the warm-up all read it, so a page is added in one place.

Each page module exposes ``layout(data, **query)`` and ``register(app, data)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from dashboard.pages import (
    agreement,
    best,
    compare,
    crossovers,
    crossval,
    history,
    overview,
    pareto,
    planner,
    predictions,
    recommend,
    routing,
    run,
    thresholds,
)


@dataclass(frozen=True)
class Page:
    """One page. ``nav``: listed in the navigation bar (in registry order); ``chart``: its
    first view has a chart, so the page's HTML starts loading plotly.js with the layout
    request (dashboard/shell.py); ``warm``: laid out once by the start-up warm-up (the
    pages a first visit most often opens)."""

    path: str
    module: ModuleType
    label: str
    nav: bool = True
    chart: bool = False
    warm: bool = False


REGISTRY: tuple[Page, ...] = (
    Page("/", overview, "Overview", warm=True),
    Page("/pareto", pareto, "Pareto", chart=True, warm=True),
    Page("/best", best, "Best by workload", warm=True),
    Page("/recommend", recommend, "Recommendations", chart=True, warm=True),
    Page("/thresholds", thresholds, "Thresholds", chart=True, warm=True),
    Page("/planner", planner, "Planner", warm=True),
    Page("/crossval", crossval, "Cross validation", chart=True),
    Page("/crossovers", crossovers, "Crossovers", chart=True),
    Page("/routing", routing, "Routing skew", chart=True),
    Page("/agreement", agreement, "Tree vs data"),
    Page("/history", history, "History", chart=True),
    Page("/compare", compare, "Compare", chart=True),
    Page("/predictions", predictions, "Predictions"),
    # reached from links (a run id), not from the navigation bar
    Page("/run", run, "Run", nav=False),
)

PAGES: dict[str, Page] = {p.path: p for p in REGISTRY}
NAV_PATHS: tuple[str, ...] = tuple(p.path for p in REGISTRY if p.nav)
CHART_PATHS: tuple[str, ...] = tuple(p.path for p in REGISTRY if p.chart)
WARM_PATHS: tuple[str, ...] = tuple(p.path for p in REGISTRY if p.warm)
