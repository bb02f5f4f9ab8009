"""The Dash app factory and its URL router.

Every view lives in the URL: the router renders ``page.layout(data, **query)`` from the
path and the query string, and each page writes its current state back into the query
string (through a page-local ``dcc.Location`` with ``refresh=False``, which replaces the
URL without re-rendering), so any URL is a permalink.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs

import dash
from dash import Input, Output, dcc, html

from dashboard import components as ui
from dashboard.pages import (
    agreement,
    best,
    crossovers,
    crossval,
    overview,
    pareto,
    planner,
    recommend,
    routing,
    run,
    thresholds,
)
from service.frames import DashData
from service.warm import start_warm_cache, warm_cache

# the composition root starts the warm-up through this module (it owns the Dash app)
__all__ = ["PAGES", "create_dash", "parse_search", "render_page", "start_warm_cache", "warm_cache"]

# path -> (page module, nav label); the order is the navigation bar's.
PAGES: dict[str, tuple[ModuleType, str]] = {
    "/": (overview, "Overview"),
    "/pareto": (pareto, "Pareto"),
    "/best": (best, "Best by workload"),
    "/recommend": (recommend, "Recommendations"),
    "/thresholds": (thresholds, "Thresholds"),
    "/planner": (planner, "Planner"),
    "/crossval": (crossval, "Cross validation"),
    "/crossovers": (crossovers, "Crossovers"),
    "/routing": (routing, "Routing skew"),
    "/agreement": (agreement, "Tree vs data"),
    "/run": (run, "Run"),
}
_NAV = (
    "/",
    "/pareto",
    "/best",
    "/recommend",
    "/thresholds",
    "/planner",
    "/crossval",
    "/crossovers",
    "/routing",
    "/agreement",
)


def parse_search(search: str | None) -> dict[str, Any]:
    """Query string -> {key: value or list of values}; repeated keys become lists."""
    parsed = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    return {k: (v if len(v) > 1 else v[0]) for k, v in parsed.items()}


def render_page(data: DashData, pathname: str | None, search: str | None) -> Any:
    """The router: the page for ``pathname`` laid out from ``search``."""
    path = (pathname or "/").rstrip("/") or "/"
    entry = PAGES.get(path)
    if entry is None:
        return ui.empty_state(
            f"No page at {path}.", ["see the navigation bar above"], test_id="not-found"
        )
    query = parse_search(search)
    # Multi-value keys are lists; single-value pages read the first value themselves.
    return entry[0].layout(data, **query)


def _nav() -> html.Nav:
    links = [dcc.Link(PAGES[p][1], href=p, className="nav-link") for p in _NAV]
    return html.Nav(
        [
            html.Span("moedash", className="brand"),
            *links,
            html.A("API docs", href="/docs", className="nav-link right"),
        ],
        className="nav",
    )


def create_dash(data: DashData) -> dash.Dash:
    """Build the dashboard over the read path ``data`` (one store). Nothing is loaded
    until a page asks."""
    app = dash.Dash(
        __name__,
        title="moedash",
        url_base_pathname="/",
        suppress_callback_exceptions=True,  # pages add components the router renders
        external_stylesheets=["/static/moedash.css"],
        update_title=None,
    )
    app.layout = html.Div(
        [
            dcc.Location(id="url", refresh="callback-nav"),
            _nav(),
            html.Main(id="page", className="page"),
        ]
    )

    @app.callback(Output("page", "children"), Input("url", "pathname"), Input("url", "search"))
    def _route(pathname: str | None, search: str | None) -> Any:
        return render_page(data, pathname, search)

    registrars: list[Callable[[dash.Dash, DashData], None]] = [
        overview.register,
        pareto.register,
        best.register,
        run.register,
        recommend.register,
        planner.register,
        crossval.register,
        crossovers.register,
        routing.register,
        agreement.register,
        thresholds.register,
    ]
    for register in registrars:
        register(app, data)
    app.server.config["MOEDASH_DATA"] = data  # lets tests and benches reach the cache
    return app
