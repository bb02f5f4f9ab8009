"""Store errors. Database driver exceptions never leave ``db/``; these do."""

from __future__ import annotations


class StoreError(RuntimeError):
    """A database operation failed for a reason the caller cannot fix by changing input."""


class NotFound(StoreError):
    """The requested object (run, token, upload) does not exist."""

    def __init__(self, what: str, ident: object) -> None:
        super().__init__(f"{what} {ident!r} not found")
        self.what = what
        self.ident = ident


class Conflict(StoreError):
    """The write collides with existing data in a way that is not a plain repeat.

    ``field`` names what differs (e.g. ``hardware`` when the same bytes were already
    uploaded with another hardware label).
    """

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
