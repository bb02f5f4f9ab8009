"""One managed session: the only way code in ``db/`` reaches the database.

:class:`Database` owns the engine and hands out connections through :meth:`Database.read`
and :meth:`Database.write`. Both translate every SQLAlchemy and driver error raised while
the connection is open (also while it is being opened or closed) into a
:class:`~db.errors.StoreError`, so a database outage answers the same way on a read as
on a write. Repositories never hold the engine themselves; a public method that touches
the database without one of these two blocks is a bug (``tests/db/test_session.py``
breaks the database under every public method to prove none does).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa

from db import dialects
from db.errors import DatabaseLocked, StoreError, UniqueViolation
from db.group_commit import GroupCommit

T = TypeVar("T")


def normalise_url(url: str) -> str:
    """``postgresql://`` / ``postgres://`` -> the psycopg 3 driver; other URLs unchanged."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


# DuckDB checkpoints its write-ahead log inside the commit that makes it pass this size
# (DuckDB's default: 16 MB); a server checkpoints earlier, when writes pause
# (db.checkpoint), so that no upload waits for one
INLINE_CHECKPOINT = "128MB"


def make_engine(url: str) -> sa.Engine:
    """Engine for a database URL. DuckDB files get their parent directory created.

    Raises :class:`StoreError` for an in-memory DuckDB URL (each pooled connection would
    see its own empty database) and for a scheme other than duckdb/postgresql.
    """
    url = normalise_url(url)
    try:
        if url.startswith("duckdb:"):
            path = url.split(":///", 1)[1] if ":///" in url else ""
            if not path or path.startswith(":memory:"):
                raise StoreError(
                    "database_url: in-memory DuckDB gives each pooled connection its own "
                    "empty database; use a file, e.g. duckdb:///var/moedash.duckdb"
                )
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            config = {"checkpoint_threshold": INLINE_CHECKPOINT}
            return sa.create_engine(
                url, pool_size=8, max_overflow=8, connect_args={"config": config}
            )
        if url.startswith("postgresql"):
            return sa.create_engine(url, pool_size=5, max_overflow=10, pool_pre_ping=True)
    except sa.exc.SQLAlchemyError as exc:
        raise StoreError(f"database_url: {exc}") from exc
    raise StoreError(
        f"database_url: unsupported scheme in {url!r} (use duckdb:/// or postgresql://)"
    )


class Database:
    """An engine plus the rules for using it: translated errors, serialised DuckDB writes."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        # Errors the drivers raise unwrapped: the bulk paths (DuckDB register, PostgreSQL
        # COPY, DuckDB Arrow reads) talk to the raw driver connection.
        self._driver_error: type[Exception] = engine.dialect.loaded_dbapi.Error
        # DuckDB is one process by design; concurrent writers inside it conflict on the
        # same keys instead of waiting, so writes are serialised here.
        self._write_lock = threading.Lock() if dialects.is_duckdb(engine) else None
        self.last_write = 0.0  # time.monotonic() when the last write transaction ended
        self._groups: dict[str, GroupCommit] = {}

    @property
    def dialect(self) -> str:
        """``duckdb`` or ``postgresql``."""
        return self.engine.dialect.name

    @contextmanager
    def read(self, op: str, *, single: bool = False) -> Iterator[sa.Connection]:
        """A connection for reads; nothing it does is committed. ``op`` names the public
        operation in the error message (``"list_runs failed: ..."``). ``single``: the
        block runs one statement, or statements that need not see one snapshot, so the
        connection runs in autocommit (no BEGIN and ROLLBACK round trips: on DuckDB two
        calls that each wait for the interpreter lock again, on every upload)."""
        with self.translating(op, writing=False), self.engine.connect() as conn:
            if single:
                conn.execution_options(isolation_level="AUTOCOMMIT")
            yield conn

    @contextmanager
    def write(self, op: str) -> Iterator[sa.Connection]:
        """One write transaction: commit on success, roll back on any error (ours or the
        database's). A unique/primary-key collision raises :class:`UniqueViolation`."""
        lock = self._write_lock if self._write_lock is not None else nullcontext()
        try:
            with self.translating(op, writing=True), lock, self.engine.begin() as conn:
                yield conn
        finally:
            self.last_write = time.monotonic()

    @property
    def write_lock(self) -> threading.Lock | None:
        """The lock DuckDB writes hold (None on PostgreSQL)."""
        return self._write_lock

    def write_grouped(
        self,
        op: str,
        fn: Callable[[sa.Connection], T],
        *,
        item: Any = None,
        combine: Callable[[sa.Connection, list[Any]], list[Any]] | None = None,
    ) -> T:
        """``fn(conn)`` in a write transaction like :meth:`write`; on DuckDB, concurrent
        calls with the same ``op`` share transactions (:mod:`db.group_commit`: one
        commit for several uploads; each stays all-or-nothing). ``fn`` may run twice (a
        shared transaction that failed is retried member by member). ``item`` and
        ``combine``: the members of a shared transaction written together
        (:class:`db.group_commit.GroupCommit`; the first call of ``op`` sets
        ``combine``)."""
        if self._write_lock is None:  # PostgreSQL: concurrent transactions, own commits
            with self.write(op) as conn:
                return fn(conn)
        group = self._groups.get(op)
        if group is None:  # setdefault is atomic: racing callers end up with one group
            # a shared transaction writes the members' candidates in one statement
            group = self._groups.setdefault(
                op,
                GroupCommit(
                    lambda: self.write(op), shared=dialects.deferred_inserts, combine=combine
                ),
            )
        return group.run(fn, item)

    @contextmanager
    def translating(self, op: str, *, writing: bool) -> Iterator[None]:
        """Re-raise SQLAlchemy and driver errors of the block as :class:`StoreError`
        (the original stays as ``__cause__``); every other exception passes unchanged."""
        try:
            yield
        except (sa.exc.SQLAlchemyError, self._driver_error) as exc:
            raise _translate(op, exc, writing=writing) from exc

    def close(self) -> None:
        """Close every pooled connection (the engine reconnects if used again)."""
        with self.translating("close", writing=False):
            self.engine.dispose()


def _translate(op: str, exc: Exception, *, writing: bool) -> StoreError:
    orig: Any = getattr(exc, "orig", None) or exc
    holder = dialects.lock_holder(orig)
    if holder is not None:
        return DatabaseLocked(*holder)
    # First line only: DuckDB appends the offending SQL, PostgreSQL its DETAIL/HINT
    # lines; the full text stays on ``__cause__`` for the server log.
    lines = str(orig).strip().splitlines()
    text = f"{op} failed: {lines[0] if lines else type(orig).__name__}"
    driver_level = isinstance(exc, sa.exc.DBAPIError) or not isinstance(exc, sa.exc.SQLAlchemyError)
    if writing and driver_level and dialects.is_unique_violation(exc):
        return UniqueViolation(text)
    return StoreError(text)
