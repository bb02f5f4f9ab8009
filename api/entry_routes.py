"""Routes of the entry: the JSON 404 for unknown ``/api/...`` paths, and ``/docs`` plus
the OpenAPI schema behind the read token when reads are closed."""

from __future__ import annotations

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import require_read
from api.errors import error_response

OPENAPI_URL = "/api/v1/openapi.json"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def add_closed_docs(app: FastAPI) -> None:
    """Serve the OpenAPI schema and the Swagger page only to a valid token (Bearer, or
    Basic with the token as password: a browser asks for it on the 401)."""

    @app.get(OPENAPI_URL, include_in_schema=False, dependencies=[Depends(require_read)])
    def openapi_schema() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=[Depends(require_read)])
    def swagger() -> HTMLResponse:
        # same origin: the browser sends the Basic credentials again for the schema
        return get_swagger_ui_html(openapi_url=OPENAPI_URL, title=f"{app.title} - docs")


class ApiFallback:
    """Wraps the app mounted at / (the dashboard): a request under ``/api/`` that reached
    it matched no API route, so it answers a JSON 404 (405 with ``Allow`` when the path
    exists for other methods), never the dashboard's HTML: a typo in a CI script must
    fail loudly. (Without a mount at /, Starlette's own 404/405 already answer JSON.)"""

    def __init__(self, api: FastAPI, inner: ASGIApp) -> None:
        self.api = api
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == "/api" or path.startswith("/api/")):
            await self.inner(scope, receive, send)
            return
        allowed = sorted(m for m in _METHODS if self._serves(scope, m))
        if allowed:
            response = error_response(
                405,
                ["path"],
                f"{scope['method']} is not allowed on {path}; allowed: {', '.join(allowed)}",
                "http_405",  # the type Starlette's own 405 has in the envelope
                headers={"Allow": ", ".join(allowed)},
            )
        else:
            response = error_response(
                404,
                ["path"],
                f"no API route at {path}; the routes are listed at /docs ({OPENAPI_URL})",
                "not_found",
            )
        await response(scope, receive, send)

    def _serves(self, scope: Scope, method: str) -> bool:
        probe = {**scope, "method": method}
        return any(
            not isinstance(route, Mount) and route.matches(probe)[0] is Match.FULL
            for route in self.api.router.routes
        )
