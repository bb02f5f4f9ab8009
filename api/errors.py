"""The one error envelope: every error the API answers is
``{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}``.

``loc`` is the path of what was wrong (``["query", "limit"]``, ``["body", "runs", 0]``;
empty when nothing the client sent is to blame), ``msg`` a sentence for a person,
``type`` a stable machine word. :func:`install_error_handlers` makes every path answer
so: store failures (503; a :class:`NotFound` / :class:`Conflict` that a route did not
turn into its own answer: 404 / 409), ``HTTPException`` (its status, its detail wrapped
when it is plain text), request validation (422 naming the field and the problem; the
offending value is never echoed back, so a hostile body costs no second copy and an
error page reflects nothing the client sent) and anything unexpected (500, logged with
its traceback here, never sent to the client).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from db.errors import Conflict, NotFound, StoreError

log = logging.getLogger("moedash.api")

# Retry-After of a 503 answered for a database failure, in seconds
STORE_RETRY_AFTER_S = 5

Loc = Sequence[str | int]

# Echoed input is cut to this many characters / items: an invalid 2 MB body must not
# come back whole in its own error.
_MAX_TEXT = 200
_MAX_ITEMS = 50
_MAX_DEPTH = 4


def error_item(loc: Loc, msg: str, kind: str, **extra: Any) -> dict[str, Any]:
    """One entry of ``detail``; ``extra`` (e.g. ``input``) is added as given."""
    return {"loc": list(loc), "msg": msg, "type": kind, **extra}


def error_body(*items: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope around ``items``."""
    return {"detail": [dict(i) for i in items]}


def error_response(
    status: int, loc: Loc, msg: str, kind: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A JSON response holding one error."""
    return JSONResponse(
        error_body(error_item(loc, msg, kind)), status_code=status, headers=dict(headers or {})
    )


def http_error(status: int, loc: Loc, msg: str, kind: str) -> HTTPException:
    """An ``HTTPException`` a route raises; it answers with the envelope."""
    return HTTPException(status_code=status, detail=[error_item(loc, msg, kind)])


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as something strict JSON can carry, for echoing input back: non-finite
    floats become ``"NaN"`` / ``"Infinity"`` / ``"-Infinity"``, bytes are decoded
    (undecodable bytes replaced), anything else unknown becomes its ``str``; long text,
    long lists and deep nesting are cut (``"…"`` marks a cut)."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, bytes | bytearray | memoryview):
        value = bytes(value[: _MAX_TEXT * 4]).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + "…"
    if depth >= _MAX_DEPTH:
        return "…"
    if isinstance(value, Mapping):
        items = list(value.items())
        out = {str(k): json_safe(v, depth + 1) for k, v in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            out["…"] = f"{len(items) - _MAX_ITEMS} more"
        return out
    if isinstance(value, list | tuple | set | frozenset):
        seq = list(value)
        out_list = [json_safe(v, depth + 1) for v in seq[:_MAX_ITEMS]]
        return out_list + ["…"] if len(seq) > _MAX_ITEMS else out_list
    return json_safe(str(value), depth)


# A validation message longer than this is cut: ours name the rule, never the value,
# but a library's message could quote what it was given.
_MAX_MSG = 300
# ``ctx`` keys that describe the rule (a bound, a pattern, the expected values); others
# (``error``: the validator's exception, which may quote the input) are left out.
_RULE_CTX = frozenset(
    {"ge", "gt", "le", "lt", "min_length", "max_length", "pattern", "expected", "multiple_of"}
)
# Validation errors reported per request: a body of a million bad items gets the first
# ones, not a million-line answer.
_MAX_ERRORS = 20


def _validation_items(exc: RequestValidationError) -> list[dict[str, Any]]:
    items = []
    errs = exc.errors()
    for err in errs[:_MAX_ERRORS]:
        extra: dict[str, Any] = {}
        ctx = {k: v for k, v in (err.get("ctx") or {}).items() if k in _RULE_CTX}
        if ctx:
            extra["ctx"] = json_safe(ctx)
        # a key of the client's own body can be part of loc: cut like any text
        loc = [x if isinstance(x, int) else json_safe(str(x)) for x in err.get("loc", ())]
        msg = str(err.get("msg", ""))
        if len(msg) > _MAX_MSG:
            msg = msg[:_MAX_MSG] + "…"
        items.append(error_item(loc, msg, str(err.get("type", "")), **extra))
    if len(errs) > _MAX_ERRORS:
        items.append(
            error_item([], f"{len(errs) - _MAX_ERRORS} more validation errors", "more_errors")
        )
    return items


async def validation_error(_: Request, exc: Exception) -> JSONResponse:
    """422 for a request that does not fit the route's parameters or body model."""
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(error_body(*_validation_items(exc)), status_code=422)


def _is_envelope(detail: Any) -> bool:
    return (
        isinstance(detail, list)
        and bool(detail)
        and all(isinstance(i, dict) and {"loc", "msg", "type"} <= i.keys() for i in detail)
    )


async def http_exception(_: Request, exc: Exception) -> JSONResponse:
    """An ``HTTPException`` (ours or Starlette's own 404/405): its status and headers;
    a detail already in the envelope passes as it is, anything else is wrapped."""
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    if _is_envelope(exc.detail):
        return JSONResponse({"detail": exc.detail}, exc.status_code, headers)
    kind = "not_found" if exc.status_code == 404 else f"http_{exc.status_code}"
    return error_response(exc.status_code, [], str(exc.detail), kind, headers)


async def store_error(request: Request, exc: Exception) -> JSONResponse:
    """503 when the database failed; 404 / 409 for a NotFound / Conflict no route
    answered itself."""
    assert isinstance(exc, StoreError)
    if isinstance(exc, NotFound):
        return error_response(404, [], str(exc), "not_found")
    if isinstance(exc, Conflict):
        return error_response(409, [exc.field], str(exc), "conflict")
    # the driver's own text (and the SQL) stays in the log, on __cause__; the message
    # names no host or port (db.session scrubs it). Retry-After: an outage or a busy
    # database is worth retrying (the upload CLI retries every 5xx)
    log.warning("store error on %s %s: %s", request.method, request.url.path, exc, exc_info=exc)
    return error_response(
        503, [], str(exc), "store_error", headers={"Retry-After": str(STORE_RETRY_AFTER_S)}
    )


class UnexpectedErrorMiddleware:
    """Any exception that escapes the app answers a JSON 500 envelope and is logged with
    its traceback here; the client learns only that it happened. (Starlette's own
    handler for ``Exception`` would re-raise after answering, so the server would log
    it a second time.) Once a response has started, the exception is re-raised: a
    second response cannot be sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = error_response(
                500, [], "internal error; the server log has the details", "internal_error"
            )
            await response(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    """Make every error ``app`` answers use the envelope (see the module docstring)."""
    app.add_exception_handler(StoreError, store_error)
    app.add_exception_handler(StarletteHTTPException, http_exception)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_middleware(UnexpectedErrorMiddleware)
