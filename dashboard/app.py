"""The Dash app factory and its URL router.

Every view lives in the URL: the router renders ``page.layout(data, **query)`` from the
path and the query string, and each page writes its current state back into the query
string (through a page-local ``dcc.Location`` with ``refresh=False``, which replaces the
URL without re-rendering), so any URL is a permalink.
"""

from __future__ import annotations

import json
import logging
import threading
import time
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
    compare,
    crossovers,
    crossval,
    history,
    overview,
    pareto,
    planner,
    recommend,
    routing,
    run,
    thresholds,
)
from service.frames import DashData
from service.warm import start_warm_cache as start_service_warm_cache
from service.warm import warm_cache

# the composition root starts the warm-up through this module (it owns the Dash app)
__all__ = ["PAGES", "create_dash", "parse_search", "render_page", "start_warm_cache", "warm_cache"]

_log = logging.getLogger(__name__)

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
    "/history": (history, "History"),
    "/compare": (compare, "Compare"),
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
    "/history",
    "/compare",
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


# The page shell: English, a skip link (first in the tab order, shown on focus) to the
# page's <main>, the navigation in a <header> landmark, static/a11y.js (names and roles
# for Dash's own controls: see that file). Dash's own placeholders stay;
# PLOTLY is replaced by plotly_head() (empty without a partial bundle).
INDEX_STRING = """<!DOCTYPE html>
<html lang="en">
    <head>
        {%metas%}
        <title>{%title%}</title>
        {%favicon%}
        {%css%}
        <script defer src="/static/a11y.js"></script>
        <!--PLOTLY-->
    </head>
    <body>
        <a class="skip-link" href="#page">Skip to main content</a>
        {%app_entry%}
        <footer>
            {%config%}
            {%scripts%}
            {%renderer%}
        </footer>
    </body>
</html>"""


def plotly_head(plotly_js: str | None) -> str:
    """``<head>`` markup that makes the page draw with the plotly.js bundle at
    ``plotly_js`` instead of the full one Dash ships: Dash's loader URL, which dcc.Graph
    reads when the first graph mounts, is pinned to it. Nothing is fetched before a chart
    needs it: a ``preload`` measured slower on pages without a chart (it holds one of the
    browser's six connections while Dash's own scripts wait; bench/first_render.py)."""
    if not plotly_js:
        return ""
    url = json.dumps(plotly_js).replace("<", "\\u003c")  # no "</script>" in the script
    return (
        "<script>Object.defineProperty(window, '_dashPlotlyJSURL', "
        f"{{configurable: true, get: function () {{ return {url}; }}, "
        "set: function () {}});</script>"
    )


# the pages a first visit most often opens, laid out once by the warm-up
WARM_PAGES = ("/", "/pareto", "/best", "/recommend")


def start_warm_cache(data: DashData) -> threading.Thread:
    """Warm-up in a daemon thread (serving starts at once): lay out :data:`WARM_PAGES`
    once -- which loads their data (the overview's lists, the default cell's Pareto view
    and best table) and pays the process's one-time figure costs (plotly's template and
    validators: over a second on a busy 2-core machine) before a visitor does -- then
    the service warm-up of every cell (``service.warm``). Errors are logged; pages still
    load on demand."""

    def run() -> None:
        t0 = time.perf_counter()
        for path in WARM_PAGES:
            try:
                render_page(data, path, None)
            except Exception:  # noqa: BLE001 - warming is best effort
                _log.exception("warm-up of %s failed", path)
        _log.info("warm-up of the first pages: %.1f s", time.perf_counter() - t0)
        start_service_warm_cache(data).join()

    thread = threading.Thread(target=run, name="moedash-warm-pages", daemon=True)
    thread.start()
    return thread


def _nav() -> html.Header:
    links = [dcc.Link(PAGES[p][1], href=p, className="nav-link") for p in _NAV]
    return html.Header(
        html.Nav(
            [
                html.Span("moedash", className="brand"),
                *links,
                html.A("API docs", href="/docs", className="nav-link right"),
            ],
            className="nav",
            **{"aria-label": "pages"},
        ),
        className="site-header",
    )


def create_dash(data: DashData, plotly_js: str | None = None) -> dash.Dash:
    """Build the dashboard over the read path ``data`` (one store). Nothing is loaded
    until a page asks. ``plotly_js``: URL of a plotly.js (partial) bundle to draw with
    (see :func:`plotly_head`); None keeps Dash's own."""
    app = dash.Dash(
        __name__,
        title="moedash",
        url_base_pathname="/",
        suppress_callback_exceptions=True,  # pages add components the router renders
        external_stylesheets=["/static/moedash.css"],
        update_title=None,
        index_string=INDEX_STRING.replace("<!--PLOTLY-->", plotly_head(plotly_js)),
    )
    app.layout = html.Div(
        [
            dcc.Location(id="url", refresh="callback-nav"),
            _nav(),
            # tabIndex -1: the skip link moves the keyboard focus here, not just the view.
            # A spinner when a page takes over 300 ms to lay out (its own areas have theirs).
            ui.loading(
                html.Main(id="page", className="page", tabIndex="-1"),
                "page-loading",
                target_components={"page": "children"},
            ),
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
        history.register,
        compare.register,
    ]
    for register in registrars:
        register(app, data)
    app.server.config["MOEDASH_DATA"] = data  # lets tests and benches reach the cache
    return app
