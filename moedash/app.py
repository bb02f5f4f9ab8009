"""``create_app(settings)``: the API, the Dash dashboard mounted at / and ``static/`` at
/static, in one process over one store. The API's entry layer (``api/entry.py``: body
limits, read timeouts, the upload cap) is the outermost middleware of the app, so it
guards the dashboard mount and the static files as well as the API."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from api.app import create_api
from api.config import ApiConfig
from db.store import Store, open_store
from ingest.parse_pool import ParsePool, default_workers
from moedash.assets import REGENERATOR, plotly_bundle, vendored_url
from moedash.settings import Settings
from service.allocator import limit_arenas

# A source checkout keeps static/ beside the packages; an installed package (the Docker
# image) finds it in the working directory instead.
STATIC_DIRS = (Path(__file__).resolve().parent.parent / "static", Path.cwd() / "static")


def create_app(
    settings: Settings | None = None,
    store: Store | None = None,
    parse_pool: ParsePool | None = None,
) -> FastAPI:
    """Build the app. ``store`` lets tests share one store with the app; otherwise the
    store is opened from ``settings.database_url`` (schema upgraded when
    ``migrate_on_start``) and closed at shutdown. ``parse_pool``: worker processes that
    parse small uploads (:func:`make_parse_pool`; ``moedash serve`` passes one), owned
    by the caller; without it uploads parse in the server process."""
    limit_arenas()  # before the server's threads: freed cell reads not held per thread
    settings = settings or Settings()
    owned = store is None
    store = store or open_store(
        settings.database_url, upgrade=settings.migrate_on_start, timeouts=settings.db_timeouts()
    )
    on_start: list[Callable[[], object]] = []
    on_stop: list[Callable[[], object]] = [store.close] if owned else []
    if owned:  # DuckDB: checkpoint when uploads pause, not inside one (db.checkpoint)
        on_start.append(store.checkpoint_when_idle)
    config = ApiConfig(
        max_upload_bytes=settings.max_upload_bytes,
        max_json_body_bytes=settings.max_json_body_bytes,
        max_outcomes_body_bytes=settings.max_outcomes_body_bytes,
        max_page_body_bytes=settings.max_page_body_bytes,
        max_buffered_body_bytes=settings.max_buffered_body_bytes,
        body_idle_s=settings.body_idle_s,
        body_grace_s=settings.body_grace_s,
        body_min_rate=settings.body_min_rate,
        max_concurrent_uploads=settings.max_concurrent_uploads,
        max_uploads_per_token=settings.max_uploads_per_token,
        max_expensive_requests=settings.max_expensive_requests,
        parse_budget_bytes=settings.parse_budget_bytes,
        read_requires_token=settings.read_requires_token,
        auth_failures_per_minute=settings.auth_failures_per_minute,
    )
    app = create_api(store, config, on_start=on_start, on_stop=on_stop)
    app.state.settings = settings
    app.state.parse_pool = parse_pool
    static = next((d for d in STATIC_DIRS if d.is_dir()), None)
    if static is not None:
        from api.compress import CachedGZipMiddleware
        from api.entry_routes import CacheHeaders

        # gzip (each file compressed once) and Cache-Control (versioned URLs immutable)
        files = CacheHeaders(CachedGZipMiddleware(StaticFiles(directory=static)))
        app.mount("/static", files, name="static")
    if settings.enable_dashboard:
        _mount_dashboard(app, store, settings, on_start, static)
    return app


# the parse pool's task: parse, fingerprint, compress (api/parse_task.py)
PARSE_TASK = "api.parse_task:parse_and_prepare"


def make_parse_pool(settings: Settings) -> ParsePool | None:
    """The parse pool ``settings.parse_workers`` asks for (None for 0)."""
    workers = settings.parse_workers
    if workers is None:
        workers = default_workers()
    return ParsePool(PARSE_TASK, workers) if workers > 0 else None


def _mount_dashboard(
    app: FastAPI,
    store: Store,
    settings: Settings,
    on_start: list[Callable[[], object]],
    static: Path | None,
) -> None:
    from a2wsgi import WSGIMiddleware
    from plotly.offline import get_plotlyjs_version

    from api.auth import DashboardGate
    from api.compress import CachedGZipMiddleware
    from api.entry_routes import ApiFallback, JsonErrors
    from dashboard.app import create_dash  # lazy: the API alone never loads Dash
    from service.frames import DashData

    app.state.data = DashData(store)  # one read path: the API's answers and the pages'
    app.state.data.warm_predictions = settings.warm_predictions
    # the plotly.js partial bundle `make assets` vendors, when it matches plotly.py
    plotly_js = plotly_bundle(static, get_plotlyjs_version()) if settings.plotly_partial else None
    dash_app = create_dash(
        app.state.data, plotly_js=plotly_js, regenerator_js=vendored_url(static, REGENERATOR)
    )
    # a2wsgi runs the Flask/Dash callbacks in its own threads, so a slow callback never
    # stalls the event loop serving the API (measured in stack-notes). Responses are
    # gzipped, the JS bundles compressed once (api/compress.py).
    # Dash's own error pages (HTML) answer in the API's JSON envelope (api/entry_routes.py)
    callbacks = dash_app.callback_map

    def is_callback(body: object) -> bool:
        return (
            isinstance(body, dict)
            and isinstance(body.get("output"), str)
            and body["output"] in callbacks
            and isinstance(body.get("inputs", []), list)
        )

    gzipped = CachedGZipMiddleware(WSGIMiddleware(dash_app.server))  # type: ignore[arg-type]
    ui: Any = JsonErrors(gzipped, is_callback)
    if settings.read_requires_token:
        # closed reads close the dashboard too (HTTP Basic, password = API token)
        ui = DashboardGate(ui, store, app.state.auth_limiter)
    # an /api/... path no API route served gets a JSON 404/405, not the dashboard's page
    app.mount("/", ApiFallback(app, ui))
    if settings.warm_cache:  # a daemon thread: serving starts at once
        from dashboard.app import start_warm_cache
        from dashboard.pages.crossval import start_warm as start_crossval_warm

        on_start.append(lambda: start_warm_cache(dash_app.server.config["MOEDASH_DATA"]))
        on_start.append(lambda: start_crossval_warm(dash_app.server.config["MOEDASH_DATA"]))
