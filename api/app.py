"""The FastAPI application: /api/v1 routers, OpenAPI at /docs, body limit, one error
envelope. The composition root mounts the dashboard and static files beside it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import APIRouter, Depends, FastAPI

from api.auth import get_store, require_read
from api.config import ApiConfig
from api.errors import install_error_handlers
from api.jsonio import FastJSONResponse, frame_records
from api.limits import BodyLimitMiddleware
from api.routes import analysis, crossval, planner, runs
from db.store import Store


def create_api(
    store: Store,
    config: ApiConfig,
    on_start: list[Callable[[], object]] | None = None,
    on_stop: list[Callable[[], object]] | None = None,
) -> FastAPI:
    """The API over ``store``. ``on_start`` / ``on_stop`` hooks run in the lifespan."""
    starts = on_start if on_start is not None else []
    stops = on_stop if on_stop is not None else []

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        for hook in starts:
            hook()
        yield
        for hook in stops:
            hook()

    app = FastAPI(
        title="moedash API",
        version="1",
        description="Ingest and analyse TensorRT-LLM bench_moe MoE sweeps.",
        lifespan=lifespan,
        docs_url="/docs",
        openapi_url="/api/v1/openapi.json",
    )
    app.state.api_config = config
    app.state.store = store
    app.add_middleware(BodyLimitMiddleware, limit=config.max_upload_bytes)

    install_error_handlers(app)

    v1 = APIRouter(prefix="/api/v1")

    @v1.get("/health", tags=["meta"], summary="Liveness and database check")
    def health(s: Store = Depends(get_store)) -> dict[str, object]:
        # reads the database, so an outage answers 503 (the store error envelope)
        return {"status": "ok", "database": s.dialect, "schema_version": s.schema_version()}

    @v1.get(
        "/coverage", tags=["runs"], summary="What is stored", dependencies=[Depends(require_read)]
    )
    def coverage(s: Store = Depends(get_store)) -> object:
        return FastJSONResponse({"items": frame_records(s.coverage())})

    for module in (runs, analysis, crossval, planner):
        v1.include_router(module.router)
    app.include_router(v1)
    return app
