"""Routes of the entry: the JSON 404 for unknown ``/api/...`` paths, and ``/docs``
(Swagger UI) from local assets, plus the OpenAPI schema behind the read token when
reads are closed.

The docs page loads nothing from another host: Swagger UI's JavaScript/CSS come from
the ``fastapi-offline`` package's bundled copies, served at :data:`DOCS_ASSETS`; the
favicon is local; the online validator badge is off. (FastAPI's defaults fetch these
from a CDN.) There is no ``/redoc``: ReDoc's standalone bundle loads its logo from
cdn.redoc.ly."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.auth import require_read
from api.errors import error_response

OPENAPI_URL = "/api/v1/openapi.json"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


DOCS_ASSETS = "/docs-assets"
# fastapi-offline ships a Swagger UI build (Apache-2.0) in static/
_ASSET_DIR = Path(str(files("fastapi_offline") / "static"))


def add_docs(app: FastAPI, *, closed: bool) -> None:
    """``/docs`` (Swagger UI) over local assets; with ``closed`` the pages
    and the OpenAPI schema need a valid token (Bearer, or Basic with the token as
    password: a browser asks for it on the 401). The assets themselves hold no data and
    stay open, like /static."""
    app.mount(DOCS_ASSETS, StaticFiles(directory=_ASSET_DIR), name="docs-assets")
    deps: list[Any] = [Depends(require_read)] if closed else []
    title = f"{app.title} - docs"

    if closed:

        @app.get(OPENAPI_URL, include_in_schema=False, dependencies=deps)
        def openapi_schema() -> JSONResponse:
            return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=deps)
    def swagger() -> HTMLResponse:
        # same origin: the browser sends the Basic credentials again for the schema
        return get_swagger_ui_html(
            openapi_url=OPENAPI_URL,
            title=title,
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
            # null: no badge image fetched from validator.swagger.io
            swagger_ui_parameters={"validatorUrl": None},
        )


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


# Cache-Control by URL: a versioned URL (``?v=…``, as the page shell links the vendored
# plotly.js) never changes, so browsers keep it a year without asking again; other static
# files are revalidated on every use (their ETag makes that a cheap 304). An answer that
# already carries Cache-Control (Dash's fingerprinted bundles) keeps its own.
IMMUTABLE = b"public, max-age=31536000, immutable"
REVALIDATE = b"no-cache"


class CacheHeaders:
    """Adds ``Cache-Control`` to successful GET/HEAD answers of the wrapped static app
    (see above)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.inner(scope, receive, send)
            return
        query = scope.get("query_string", b"")
        versioned = any(part.startswith(b"v=") and len(part) > 2 for part in query.split(b"&"))
        value = IMMUTABLE if versioned else REVALIDATE

        async def with_cache_control(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in (200, 304):
                headers = list(message.get("headers", []))
                if not any(k.lower() == b"cache-control" for k, _ in headers):
                    message = {**message, "headers": [*headers, (b"cache-control", value)]}
            await send(message)

        await self.inner(scope, receive, with_cache_control)


class JsonErrors:
    """Wraps the dashboard: an error answer to a Dash request (``/_dash-…``: callbacks,
    layout, dependencies) that is not JSON already (Flask's HTML 400 for a body it cannot
    parse, its HTML 500 for a callback that raised) becomes the API's error envelope with
    the same status. The HTML page itself is dropped unread: it can quote the request.

    A callback request is checked first (``is_callback``: a JSON object naming a
    registered output, with a list of inputs): anything else is the client's mistake and
    answers 400 here instead of a 500 from inside Dash. The entry layer has read the body
    already (api/entry.py), so reading it again here costs no wait."""

    CALLBACK = "/_dash-update-component"

    def __init__(self, inner: ASGIApp, is_callback: Callable[[object], bool]) -> None:
        self.inner = inner
        self.is_callback = is_callback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith("/_dash-"):
            await self.inner(scope, receive, send)
            return
        if path == self.CALLBACK and scope["method"] == "POST":
            body = await _read_body(receive)
            try:
                ok = self.is_callback(json.loads(body))
            except ValueError:  # not JSON / not UTF-8
                ok = False
            if not ok:
                await error_response(400, *_dash_error(400))(scope, receive, send)
                return
            receive = _replay(body, receive)
        replaced = False

        async def enveloping_send(message: Message) -> None:
            nonlocal replaced
            if replaced:
                return  # the original error body: dropped
            if message["type"] == "http.response.start" and message["status"] >= 400:
                headers = dict(message.get("headers", []))
                if not headers.get(b"content-type", b"").startswith(b"application/json"):
                    replaced = True
                    status = int(message["status"])
                    await error_response(status, *_dash_error(status))(scope, receive, send)
                    return
            await send(message)

        await self.inner(scope, receive, enveloping_send)


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _dash_error(status: int) -> tuple[list[str | int], str, str]:
    if status >= 500:
        return [], "dashboard callback failed; the server log has the details", "internal_error"
    if status == 400:
        return ["body"], "not a valid dashboard callback request", "bad_request"
    return [], f"dashboard request refused (HTTP {status})", f"http_{status}"
