"""Errors a service function raises for a question it cannot answer.

They name the input at fault (``field``) so each front end can say so in its own way:
the API maps :class:`InvalidQuery` to 422 and :class:`NoData` to 404, both in the
``{"detail": [{"loc", "msg", "type"}]}`` envelope; a page shows ``msg`` as an empty state.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A question the service cannot answer: ``field`` is the input at fault, ``msg``
    says why in words, ``type`` is a short machine-readable reason."""

    def __init__(self, field: str, msg: str, type: str) -> None:
        super().__init__(f"{field}: {msg}")
        self.field = field
        self.msg = msg
        self.type = type


class InvalidQuery(ServiceError):
    """The inputs are well-formed but do not describe something answerable (an unknown
    model, a missing shape)."""


class NoData(ServiceError):
    """The inputs are fine but the store holds nothing to answer from."""
