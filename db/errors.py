"""Store errors. Database driver exceptions never leave ``db/``; these do.

:class:`db.session.Database` turns every SQLAlchemy or driver error raised inside one of
its connections into a :class:`StoreError` (a write stopped by a unique or primary-key
constraint into :class:`UniqueViolation`), so callers handle one family of exceptions
whatever the database and whether the call read or wrote.
"""

from __future__ import annotations


class StoreError(RuntimeError):
    """A database operation failed for a reason the caller cannot fix by changing input."""


class UniqueViolation(StoreError):
    """A write collided with a unique or primary key (or, on DuckDB, with a concurrent
    transaction writing the same key). Repositories catch it to retry an idempotent write
    or to raise a :class:`Conflict` naming the field; one that escapes is a plain
    store failure."""


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


class DatabaseLocked(StoreError):
    """An embedded DuckDB file is held by another process. The message is one line naming
    the file, the holding process and the remedy (stop it, or use PostgreSQL, which serves
    any number of processes)."""

    def __init__(self, path: str, program: str, pid: int) -> None:
        super().__init__(
            f"database file {path} is in use by another process (PID {pid}, {program}): "
            "an embedded DuckDB file serves one process at a time; stop that process, or "
            "use PostgreSQL (MOEDASH_DATABASE_URL=postgresql://...) to run several"
        )
        self.path = path
        self.program = program
        self.pid = pid


class DatabaseBusy(StoreError):
    """A wait for the database ran out (a pooled connection, the DuckDB write lock, a
    statement or lock timeout): the request may succeed when retried a little later."""
