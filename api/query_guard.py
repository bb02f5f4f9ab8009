"""One check of every query parameter of a read (GET, HEAD) under /api/, before routing
and so before any database call: a control character (Unicode category Cc: C0, DEL, C1)
in a name or value, or a value longer than :data:`MAX_VALUE_CHARS`, answers 422 naming
the parameter.

Why here and not per route: PostgreSQL refuses NUL in text (the driver raises, which
answered 503 ``store_error``) while DuckDB accepts it, so the same request answered
differently on the two databases; no label we store holds a control character, so none
can match. The refusal names the parameter and the character's code point, never the value.
Integer and number bounds are declared per parameter (``Query(ge=, le=)``) and checked by
FastAPI; this layer does not know the routes' types.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import parse_qsl

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import error_body, error_item

# Above the longest declared parameter (an upload's notes: 4000 characters); a longer
# value is refused here, before the route's model even sees it.
MAX_VALUE_CHARS = 4096
PREFIX = "/api/"
_READS = frozenset({"GET", "HEAD"})


def _control_character(text: str) -> str | None:
    """The first control character of ``text``, or None."""
    if text.isprintable():  # fast path: no Cc (nor other non-printables) at all
        return None
    return next((c for c in text if unicodedata.category(c) == "Cc"), None)


def query_problems(query_string: bytes) -> list[dict[str, object]]:
    """The envelope items for what is wrong in a raw query string (empty: nothing)."""
    # decoded as Starlette decodes it, so the names are the ones the routes see
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    items: list[dict[str, object]] = []
    for name, value in pairs:
        loc = ["query", name if _control_character(name) is None else "<invalid name>"]
        bad = _control_character(name) or _control_character(value)
        if bad is not None:
            msg = f"control character U+{ord(bad):04X} is not allowed in a query parameter"
            items.append(
                error_item(loc, msg, "control_character", ctx={"char": f"U+{ord(bad):04X}"})
            )
        elif len(value) > MAX_VALUE_CHARS:
            msg = f"String should have at most {MAX_VALUE_CHARS} characters (got {len(value)})"
            items.append(
                error_item(loc, msg, "string_too_long", ctx={"max_length": MAX_VALUE_CHARS})
            )
    return items


class QueryGuardMiddleware:
    """Answers 422 (the error envelope) for an /api/ request whose query string
    :func:`query_problems` finds fault with; anything else passes untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" else b""
        # reads only: an upload's metadata (POST /api/v1/runs?notes=...) has its own,
        # finer rules (ingest/metadata.py: tabs allowed in notes, each field named)
        if (
            query
            and scope.get("method") in _READS
            and str(scope.get("path", "")).startswith(PREFIX)
        ):
            items = query_problems(query)
            if items:
                await JSONResponse(error_body(*items), status_code=422)(scope, receive, send)
                return
        await self.app(scope, receive, send)
