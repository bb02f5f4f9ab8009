"""The FastAPI application: /api/v1 routers, OpenAPI at /docs, the entry layer
(api/entry.py), one error envelope. The composition root mounts the dashboard (behind
a JSON 404 for unknown /api paths) and static files beside it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import APIRouter, Depends, FastAPI, Request

from api.auth import get_store, require_read
from api.config import ApiConfig
from api.entry import EntryLimits, EntryMiddleware
from api.entry_routes import add_docs
from api.errors import install_error_handlers
from api.jsonio import FastJSONResponse, frame_records
from api.limits import AuthFailureLimiter, ParseBudget
from api.query_guard import QueryGuardMiddleware
from api.routes import (
    analysis,
    compare,
    crossovers,
    crossval,
    crossval_fit,
    planner,
    points,
    predictions,
    routing,
    runs,
    thresholds,
)
from api.schemas import document
from api.schemas.errors import READ_NO_PARAMS, errors
from api.schemas.runs import Coverage, Health
from db.store import Store
from service.crossval_refresh import LedgerRefresher

# the one JSON route whose body is a list of records rather than a form
OUTCOMES_PATH = "/api/v1/crossval/outcomes"


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
        app.state.ledger_refresher.wait(30)  # let a running refresh finish before close
        for hook in stops:
            hook()

    app = FastAPI(
        title="moedash API",
        version="1",
        description="Ingest and analyse TensorRT-LLM bench_moe MoE sweeps.",
        lifespan=lifespan,
        # /docs from local assets (add_docs); no /redoc (its bundle loads a CDN logo)
        docs_url=None,
        redoc_url=None,
        openapi_url=None if config.read_requires_token else "/api/v1/openapi.json",
    )
    app.state.api_config = config
    app.state.store = store
    app.state.parse_budget = ParseBudget(config.parse_budget_bytes)
    app.state.ledger_refresher = LedgerRefresher(store)
    app.state.auth_limiter = AuthFailureLimiter(config.auth_failures_per_minute)

    install_error_handlers(app)
    # before routing, so before any token check or database call (api/query_guard.py)
    app.add_middleware(QueryGuardMiddleware)
    # added last, so outermost: it sees every request first (API, dashboard, static)
    app.add_middleware(EntryMiddleware, limits=entry_limits(config))

    v1 = APIRouter(prefix="/api/v1")

    @v1.get(
        "/health",
        tags=["meta"],
        summary="Liveness and database check",
        response_model=Health,
        responses=errors(503),
    )
    def health(request: Request, s: Store = Depends(get_store)) -> dict[str, object]:
        # reads the database, so an outage answers 503 (the store error envelope);
        # parse_pool: its workers ready of its size (None: uploads parse in the server)
        pool = getattr(request.app.state, "parse_pool", None)
        return {
            "status": "ok",
            "database": s.dialect,
            "schema_version": s.schema_version(),
            "parse_pool": None if pool is None else pool.status(),
        }

    @v1.get(
        "/coverage",
        tags=["runs"],
        summary="What is stored",
        dependencies=[Depends(require_read)],
        response_model=Coverage,
        responses=errors(*READ_NO_PARAMS),
    )
    def coverage(s: Store = Depends(get_store)) -> object:
        return FastJSONResponse({"items": frame_records(s.coverage())})

    for module in (
        runs,
        analysis,
        crossval,
        crossval_fit,
        planner,
        thresholds,
        points,
        crossovers,
        routing,
        compare,
        predictions,
    ):
        v1.include_router(module.router)
    app.include_router(v1)
    document.install(app)
    add_docs(app, closed=config.read_requires_token)
    return app


def entry_limits(config: ApiConfig) -> EntryLimits:
    """The entry layer's limits from the API config."""
    return EntryLimits(
        api_body_bytes=config.max_upload_bytes,
        json_body_bytes=config.max_json_body_bytes,
        route_body_bytes={OUTCOMES_PATH: config.max_outcomes_body_bytes},
        page_body_bytes=config.max_page_body_bytes,
        buffered_bytes=config.max_buffered_body_bytes,
        body_idle_s=config.body_idle_s,
        body_grace_s=config.body_grace_s,
        body_min_rate=config.body_min_rate,
        max_uploads=config.max_concurrent_uploads,
        max_uploads_per_token=config.max_uploads_per_token,
        max_expensive=config.max_expensive_requests,
    )
