"""The error envelope as a model, and the ``responses=`` entries that document it.

Every error the API answers is ``{"detail": [{"loc": [...], "msg": ..., "type": ...}]}``
(:mod:`api.errors`); :func:`errors` lists the statuses a route can answer with that body
and an example of each, so the OpenAPI document says what a client must handle."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ErrorItem(BaseModel):
    """One thing wrong with a request."""

    model_config = ConfigDict(extra="allow")

    loc: list[str | int] = Field(
        description='Path of what was wrong, e.g. ["query", "limit"] or '
        '["body", "runs", 0]; empty when nothing the client sent is to blame'
    )
    msg: str = Field(description="A sentence for a person")
    type: str = Field(description="A stable machine word, e.g. not_found, missing, conflict")


class ErrorEnvelope(BaseModel):
    """Every error answer of the API. Request validation errors (422) add ``ctx`` (the
    rule's bounds) to an item; the offending value is never echoed back."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "detail": [
                        {
                            "loc": ["query", "limit"],
                            "msg": "Input should be less than or equal to 1000",
                            "type": "less_than_equal",
                            "ctx": {"le": 1000},
                        }
                    ]
                }
            ]
        }
    )

    detail: list[ErrorItem] = Field(min_length=1, description="What was wrong, one item each")


_ITEMS: dict[int, tuple[str, list[str | int], str, str]] = {
    400: ("Empty body", ["body"], "the request body is empty", "empty"),
    401: (
        "Missing or invalid token (reads too, when MOEDASH_READ_REQUIRES_TOKEN is set)",
        ["header", "Authorization"],
        "the token is unknown or revoked",
        "unauthorized",
    ),
    403: (
        "The token lacks the scope this route needs",
        ["header", "Authorization"],
        "token 'ci' lacks the 'admin' scope",
        "forbidden",
    ),
    404: ("Not found", ["path", "run_id"], "run 42 not found", "not_found"),
    408: (
        "The body arrived too slowly (idle or below the minimum rate)",
        ["body"],
        "request body too slow: no data for 30 s",
        "timeout",
    ),
    409: (
        "Contradicts what is stored",
        ["query", "hardware"],
        "these bytes are stored with hardware 'GB300', not 'B300'",
        "conflict",
    ),
    413: (
        "Body larger than MOEDASH_MAX_UPLOAD_BYTES",
        ["body"],
        "request body exceeds the limit of 536870912 bytes (setting MOEDASH_MAX_UPLOAD_BYTES)",
        "too_large",
    ),
    415: (
        "Unsupported content type",
        ["header", "Content-Type"],
        "unsupported content type 'image/png'",
        "unsupported_media_type",
    ),
    422: (
        "A parameter or the body is invalid (its path in detail[].loc)",
        ["query", "limit"],
        "Input should be less than or equal to 1000",
        "less_than_equal",
    ),
    429: (
        "Too many failed authentications from this address (Retry-After says when to retry)",
        ["header", "Authorization"],
        "too many failed authentications from this address; retry after 60 s",
        "too_many_failures",
    ),
    503: ("The database failed; retry later", [], "database unavailable", "store_error"),
}

READ = (401, 422, 429, 503)
"""What every read route can answer: a token error when reads are closed, a bad
parameter, the database down."""


READ_NO_PARAMS = (401, 429, 503)
"""A read route without parameters: no 422."""


Example = tuple[list[str | int], str, str]
JSON_BODY_400: Example = ([], "There was an error parsing the body", "http_400")
"""What FastAPI answers for a JSON body that does not parse."""


def errors(
    *codes: int, examples: dict[int, Example] | None = None, **why: str
) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for ``codes``, each with the envelope model and an example;
    ``why`` (``e404="No such run"``) replaces a status's default description,
    ``examples`` a status's example ``(loc, msg, type)``."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in sorted(set(codes)):
        text, loc, msg, kind = _ITEMS[code]
        if examples and code in examples:
            loc, msg, kind = examples[code]
        example = {"detail": [{"loc": loc, "msg": msg, "type": kind}]}
        out[code] = {
            "model": ErrorEnvelope,
            "description": why.get(f"e{code}", text),
            "content": {"application/json": {"example": example}},
        }
    return out


def read_errors(*extra: int) -> dict[int | str, dict[str, Any]]:
    """A read route over a query: :data:`READ`, ``extra``, and 404 when the store holds
    nothing to answer from (``detail[].loc`` names the parameter)."""
    return errors(
        *READ,
        404,
        *extra,
        e404="The store holds nothing to answer this query (detail[].loc names the "
        "parameter to change)",
        examples={404: (["query", "model"], "no stored data for model 'llama'", "no_data")},
    )


def run_errors(*extra: int) -> dict[int | str, dict[str, Any]]:
    """A read route under /runs/{run_id}: :data:`READ`, ``extra``, and 404 for a run
    (or sighting, candidate) not stored."""
    return errors(*READ, 404, *extra, e404="No such run (or sighting, candidate)")
