"""Errors raised for bad input, carrying the field path and an HTTP status.

Parsers raise :class:`InputError`; the API turns it into a JSON error body
``{"detail": [{"loc": [...], "msg": ...}]}`` with ``status``; the CLI prints
``<file>: <field>: <problem>`` and exits non-zero.
"""

from __future__ import annotations


class InputError(ValueError):
    """The input is unusable. ``field`` is a dotted/indexed path such as
    ``results[3].latency_ms.score`` ("" for the whole document)."""

    def __init__(self, field: str, problem: str, status: int = 422) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem
        self.status = status


class UnsupportedFormat(InputError):
    """The document is recognisably something we do not ingest (HTTP 415/422)."""

    def __init__(self, problem: str, field: str = "", status: int = 422) -> None:
        super().__init__(field, problem, status)
