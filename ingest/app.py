"""The application factory: FastAPI (API under /api/v1, OpenAPI at /docs), the Dash
dashboard mounted at / and ``static/`` at /static, all in one process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from db import migrations
from db.errors import StoreError
from db.store import Store, open_store
from ingest import api_analysis, api_crossval, api_planner, api_runs
from ingest.auth import DashboardGate, get_store, require_read
from ingest.settings import Settings

# A source checkout keeps static/ beside the packages; an installed package (the Docker
# image) finds it in the working directory instead.
STATIC_DIRS = (Path(__file__).resolve().parent.parent / "static", Path.cwd() / "static")


def create_app(settings: Settings | None = None, store: Store | None = None) -> FastAPI:
    """Build the app. ``store`` lets tests share one store with the app; otherwise the
    store is opened from ``settings.database_url`` (schema upgraded when
    ``migrate_on_start``) and closed at shutdown."""
    settings = settings or Settings()
    owned = store is None
    store = store or open_store(settings.database_url, upgrade=settings.migrate_on_start)

    on_start: list[Callable[[], object]] = []  # run once the server starts

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        for hook in on_start:
            hook()
        yield
        if owned:
            store.close()

    app = FastAPI(
        title="moedash API",
        version="1",
        description="Ingest and analyse TensorRT-LLM bench_moe MoE sweeps.",
        lifespan=lifespan,
        docs_url="/docs",
        openapi_url="/api/v1/openapi.json",
    )
    app.state.settings = settings
    app.state.store = store

    from ingest.limits import BodyLimitMiddleware

    app.add_middleware(BodyLimitMiddleware, limit=settings.max_upload_bytes)

    @app.exception_handler(StoreError)
    async def store_error(_: Request, exc: StoreError) -> JSONResponse:
        return JSONResponse(
            status_code=503,
            content={"detail": [{"loc": [], "msg": str(exc), "type": "store_error"}]},
        )

    v1 = APIRouter(prefix="/api/v1")

    @v1.get("/health", tags=["meta"], summary="Liveness and database check")
    def health(s: Store = Depends(get_store)) -> dict[str, object]:
        with s.engine.connect() as conn:
            version = migrations.current_version(conn)
        return {"status": "ok", "database": s.dialect, "schema_version": version}

    @v1.get(
        "/coverage", tags=["runs"], summary="What is stored", dependencies=[Depends(require_read)]
    )
    def coverage(s: Store = Depends(get_store)) -> object:
        from ingest.jsonio import FastJSONResponse, frame_records

        return FastJSONResponse({"items": frame_records(s.coverage())})

    for module in (api_runs, api_analysis, api_crossval, api_planner):
        v1.include_router(module.router)
    app.include_router(v1)

    static = next((d for d in STATIC_DIRS if d.is_dir()), None)
    if static is not None:
        app.mount("/static", StaticFiles(directory=static), name="static")
    if settings.enable_dashboard:
        _mount_dashboard(app, store, settings, on_start)
    return app


def _mount_dashboard(
    app: FastAPI, store: Store, settings: Settings, on_start: list[Callable[[], object]]
) -> None:
    from a2wsgi import WSGIMiddleware

    from dashboard.app import create_dash  # lazy: the API alone never loads Dash
    from ingest.compress import CachedGZipMiddleware

    dash_app = create_dash(store, settings)
    # a2wsgi runs the Flask/Dash callbacks in its own threads, so a slow callback never
    # stalls the event loop serving the API (measured in stack-notes). Responses are
    # gzipped, the JS bundles compressed once (ingest/compress.py).
    ui: Any = CachedGZipMiddleware(WSGIMiddleware(dash_app.server))  # type: ignore[arg-type]
    if settings.read_requires_token:
        # closed reads close the dashboard too (HTTP Basic, password = API token)
        ui = DashboardGate(ui, store)
    app.mount("/", ui)
    if settings.warm_cache:  # a daemon thread: serving starts at once
        from dashboard.app import start_warm_cache

        on_start.append(lambda: start_warm_cache(dash_app.server.config["MOEDASH_DATA"]))
