"""The Dash app factory and its URL router.

Every view lives in the URL: the router renders ``page.layout(data, **query)`` from the
path and the query string, and each page writes its current state back into the query
string (through a page-local ``dcc.Location`` with ``refresh=False``, which replaces the
URL without re-rendering), so any URL is a permalink.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import dash
import flask
from dash import Input, Output, State, dcc, html

from dashboard import components as ui
from dashboard.registry import CHART_PATHS, NAV_PATHS, PAGES, REGISTRY, WARM_PATHS
from dashboard.shell import ShellDash, plotly_head, static_url
from service import foreground
from service.frames import DashData
from service.warm import start_warm_cache as start_service_warm_cache
from service.warm import warm_cache

# the composition root starts the warm-up through this module (it owns the Dash app)
__all__ = [
    "PAGES",
    "create_dash",
    "parse_search",
    "plotly_head",
    "render_page",
    "start_warm_cache",
    "warm_cache",
]

_log = logging.getLogger(__name__)


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
    return entry.module.layout(data, **query)


def start_warm_cache(data: DashData) -> threading.Thread:
    """Warm-up in a daemon thread (serving starts at once): lay out the registry's warm
    pages (:data:`dashboard.registry.WARM_PATHS`)
    once -- which loads their data (the overview's lists, the default cell's Pareto view
    and best table) and pays the process's one-time figure costs (plotly's template and
    validators: over a second on a busy 2-core machine) before a visitor does -- then
    the service warm-up of every cell (``service.warm``). Errors are logged; pages still
    load on demand."""

    def run() -> None:
        t0 = time.perf_counter()
        for path in WARM_PATHS:
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
    links = [dcc.Link(PAGES[p].label, href=p, className="nav-link") for p in NAV_PATHS]
    return html.Header(
        html.Nav(
            [
                html.Span("moedash", className="brand"),
                *links,
                html.A("API docs", href="/docs", className="nav-link right"),
            ],
            className="nav",
            **ui.attrs(aria_label="pages"),
        ),
        className="site-header",
    )


def _drawn_key(pathname: str | None, search: str | None) -> str:
    return ((pathname or "/").rstrip("/") or "/") + (search or "")


def page_of_request() -> tuple[str, str] | None:
    """(path, search) of the page a ``/_dash-layout`` request is for, from its Referer;
    None outside such a request or when the path is not one of ours. The host is not
    compared: behind a reverse proxy the request's Host is the proxy's upstream name, and
    the answer is the page anyone may ask for by that path."""
    if not flask.has_request_context() or not flask.request.path.endswith("_dash-layout"):
        return None
    referrer = urlsplit(flask.request.referrer or "")
    if referrer.scheme not in ("http", "https"):
        return None
    path = referrer.path.rstrip("/") or "/"
    if path not in PAGES:
        return None
    return path, (f"?{referrer.query}" if referrer.query else "")


def _layout_cache_headers(response: flask.Response) -> flask.Response:
    """``/_dash-layout`` answers by the Referer (:func:`page_of_request`) and by the data
    at that moment: a shared cache must neither hand one page's layout to another page
    (``Vary: Referer``) nor keep a stale one (``no-store``)."""
    if flask.request.path.endswith("_dash-layout"):
        response.headers.add("Vary", "Referer")
        response.headers["Cache-Control"] = "no-store"
    return response


def shell_layout(data: DashData, initial: tuple[str, str] | None) -> html.Div:
    """The app's layout; with ``initial`` = (path, search) the page is laid out inside
    it, so a first visit draws with the layout instead of one callback round trip later.
    ``page-drawn`` tells the router which page is already there (see create_dash)."""
    content = None
    if initial:
        try:
            content = render_page(data, *initial)
        except Exception:  # noqa: BLE001 - the router lays the page out (and reports) again
            _log.exception("laying out %s%s with the shell failed", *initial)
            initial = None
    return html.Div(
        [
            dcc.Location(id="url", refresh="callback-nav"),
            dcc.Store(id="page-drawn", data=_drawn_key(*initial) if initial else None),
            _nav(),
            # tabIndex -1: the skip link moves the keyboard focus here, not just the view.
            # A spinner when a page takes over 300 ms to lay out (its own areas have theirs).
            ui.loading(
                html.Main(content, id="page", className="page", tabIndex="-1"),
                "page-loading",
                target_components={"page": "children"},
            ),
        ]
    )


def create_dash(
    data: DashData, plotly_js: str | None = None, regenerator_js: str | None = None
) -> dash.Dash:
    """Build the dashboard over the read path ``data`` (one store). Nothing is loaded
    until a page asks. ``plotly_js``: URL of a plotly.js (partial) bundle to draw with
    (see :func:`plotly_head`); None keeps Dash's own. ``regenerator_js``: URL of
    regenerator-runtime, linked instead of Dash's polyfill (dashboard/shell.py)."""
    app = ShellDash(
        __name__,
        title="moedash",
        url_base_pathname="/",
        suppress_callback_exceptions=True,  # pages add components the router renders
        external_stylesheets=[static_url("moedash.css")],
        update_title=None,
        plotly_js=plotly_js,
        regenerator_js=regenerator_js,
        chart_paths=CHART_PATHS,
    )
    # a function: Dash calls it for every /_dash-layout request (page_of_request)
    app.layout = lambda: shell_layout(data, page_of_request())
    # every dashboard request counts as a visitor being answered: background work
    # (warm-up, the ledger refresh) waits for it (service.foreground)
    app.server.before_request(foreground.enter)
    app.server.teardown_request(lambda _exc: foreground.leave())
    app.server.after_request(_layout_cache_headers)

    @app.callback(
        Output("page", "children"),
        Output("page-drawn", "data"),
        Input("url", "pathname"),
        Input("url", "search"),
        State("page-drawn", "data"),
    )
    def _route(pathname: str | None, search: str | None, drawn: str | None) -> Any:
        # The first call after a layout that already holds this page changes nothing;
        # clearing page-drawn makes every later navigation (back to it as well) render.
        if drawn is not None and drawn == _drawn_key(pathname, search):
            return dash.no_update, None
        return render_page(data, pathname, search), None

    for page in REGISTRY:
        page.module.register(app, data)
    app.server.config["MOEDASH_DATA"] = data  # lets tests and benches reach the cache
    return app
