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

import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa

from db import dialects
from db.errors import DatabaseBusy, DatabaseLocked, StoreError, UniqueViolation
from db.group_commit import GroupCommit
from db.timeouts import WATCHDOG, DbTimeouts

T = TypeVar("T")


def normalise_url(url: str) -> str:
    """``postgresql://`` / ``postgres://`` -> the psycopg 3 driver; other URLs unchanged."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


# The timeouts each engine was made with (make_engine), for the Database over it
_TIMEOUTS: weakref.WeakKeyDictionary[sa.Engine, DbTimeouts] = weakref.WeakKeyDictionary()

# DuckDB checkpoints its write-ahead log inside the commit that makes it pass this size
# (DuckDB's default: 16 MB); a server checkpoints earlier, when writes pause
# (db.checkpoint), so that no upload waits for one
INLINE_CHECKPOINT = "128MB"
# DuckDB's allocator hands freed memory back at once instead of caching up to 128 MB per
# thread and 512 MB after a bulk free: a 1M-row cell read left a replica +400 MB, now
# +170 MB (bench/scale_profile.py), at no measurable cost to the read
ALLOCATOR_FLUSH = {
    "allocator_flush_threshold": "0B",
    "allocator_bulk_deallocation_flush_threshold": "0B",
}
# DuckDB's buffer pool keeps the blocks it read up to its memory_limit (DuckDB's own
# default: 80 % of the machine's RAM), and a replica's RSS holds them: at 10M stored
# candidates a 512MB pool left a replica ~250 MB above PostgreSQL's. 128MB keeps a replica
# within 1 GiB at 10M (peak 1015 MiB in an upload's precompute, 1088 at 256MB;
# docs/scale.md) with the one-cell routes as fast, and a 1M-candidate upload into that
# store still commits (8.4 s); what a query needs beyond it spills to a temporary
# directory beside the file. A database URL's own
# ``?memory_limit=`` wins (the driver lays the URL's settings over these).
DUCKDB_MEMORY_LIMIT = "128MB"


def make_engine(url: str, timeouts: DbTimeouts | None = None) -> sa.Engine:
    """Engine for a database URL. DuckDB files get their parent directory created.

    ``timeouts`` (:class:`~db.timeouts.DbTimeouts`; the defaults when None) bound every
    wait: the pool wait on both databases; on PostgreSQL also connecting, each statement
    and each lock wait, plus the watchdog for a server that stops answering
    (:func:`_bound_postgres`). Raises :class:`StoreError` for an in-memory DuckDB URL (each
    pooled connection would see its own empty database) and for a scheme other than
    duckdb/postgresql.
    """
    timeouts = timeouts or DbTimeouts()
    pool_timeout = timeouts.pool_s if timeouts.pool_s > 0 else None
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
            config = {
                "checkpoint_threshold": INLINE_CHECKPOINT,
                "memory_limit": DUCKDB_MEMORY_LIMIT,
                **ALLOCATOR_FLUSH,
            }
            engine = sa.create_engine(
                url,
                pool_size=8,
                max_overflow=8,
                pool_timeout=pool_timeout,
                connect_args={"config": config},
            )
            _TIMEOUTS[engine] = timeouts  # the write lock's wait (Database)
            return engine
        if url.startswith("postgresql"):
            connect_args = {"connect_timeout": max(2, round(timeouts.connect_s))}
            engine = sa.create_engine(
                url,
                pool_size=5,
                max_overflow=10,
                pool_timeout=pool_timeout,
                connect_args=connect_args if timeouts.connect_s > 0 else {},
            )
            _bound_postgres(engine, timeouts)
            return engine
    except sa.exc.SQLAlchemyError as exc:
        raise StoreError(f"database_url: {exc}") from exc
    raise StoreError(
        f"database_url: unsupported scheme in {url!r} (use duckdb:/// or postgresql://)"
    )


def _bound_postgres(engine: sa.Engine, timeouts: DbTimeouts) -> None:
    """Server-side timeouts on every new connection, a ping under the watchdog when a
    pooled connection is handed out (SQLAlchemy's own pre-ping would wait forever on a
    frozen server), and the watchdog around every statement."""
    _TIMEOUTS[engine] = timeouts
    limit = timeouts.watchdog_s

    def guarded(dbapi_conn: Any, statements: list[str]) -> None:
        # the liveness ping and the session SETs answer at once from a live server
        ticket = WATCHDOG.arm(dbapi_conn, timeouts.ping_s)
        try:
            with dbapi_conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
        finally:
            WATCHDOG.disarm(ticket)

    @sa.event.listens_for(engine, "connect")
    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        guarded(dbapi_conn, timeouts.session_settings())
        dbapi_conn.commit()  # SET inside psycopg's implicit transaction: keep it

    @sa.event.listens_for(engine, "checkout")
    def on_checkout(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        try:
            guarded(dbapi_conn, ["SELECT 1"])
            dbapi_conn.rollback()
        except Exception as exc:  # the pool discards it and connects afresh (3 tries)
            raise sa.exc.DisconnectionError(str(exc).splitlines()[0] if str(exc) else "") from exc

    if limit is None:
        return

    @sa.event.listens_for(engine, "before_cursor_execute")
    def arm(conn: sa.Connection, *_: Any) -> None:
        dbapi_conn = conn.connection.dbapi_connection
        conn.info.setdefault("watchdog", []).append(WATCHDOG.arm(dbapi_conn, limit))

    def disarm(conn: sa.Connection | None) -> None:
        tickets = conn.info.get("watchdog") if conn is not None else None
        while tickets:
            WATCHDOG.disarm(tickets.pop())

    @sa.event.listens_for(engine, "after_cursor_execute")
    def after(conn: sa.Connection, *_: Any) -> None:
        disarm(conn)

    @sa.event.listens_for(engine, "handle_error")
    def failed(ctx: sa.engine.ExceptionContext) -> None:
        disarm(ctx.connection)


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
        timeouts = _TIMEOUTS.get(engine) or DbTimeouts()
        # how long a DuckDB write waits for the one before it (-1: for ever)
        self._lock_wait = timeouts.lock_s if timeouts.lock_s > 0 else -1.0
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
        lock = self._bounded_lock(op) if self._write_lock is not None else nullcontext()
        try:
            with self.translating(op, writing=True), lock, self.engine.begin() as conn:
                yield conn
        finally:
            self.last_write = time.monotonic()

    @contextmanager
    def _bounded_lock(self, op: str) -> Iterator[None]:
        """The DuckDB write lock, waited for at most the lock timeout."""
        assert self._write_lock is not None
        if not self._write_lock.acquire(timeout=self._lock_wait):
            raise DatabaseBusy(
                f"{op} failed: the database is busy with other writes (waited "
                f"{self._lock_wait:g} s, setting MOEDASH_DB_LOCK_TIMEOUT_S)"
            )
        try:
            yield
        finally:
            self._write_lock.release()

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


# Where the database is (host, address, port, socket path) is the operator's business,
# not every client's: an error text names the server only as "the database server".
_WHERE = [
    re.compile(r'(?:connection to )?server at "[^"]*"(?: \([^)]*\))?,? port \d+'),
    re.compile(r'(?:connection to )?server on socket "[^"]*"'),
    re.compile(r'\b(?:host|hostaddr|port)\s*=\s*"?[^\s",]+"?'),
    re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"),
    re.compile(r"\[[0-9a-fA-F:]+\](?::\d+)?"),
]


# PostgreSQL's codes for a statement cancelled by statement_timeout (57014) and a lock
# not granted within lock_timeout (55P03)
_TIMED_OUT = frozenset({"57014", "55P03"})


def scrub(text: str) -> str:
    """``text`` without the database's host, address, port or socket path."""
    for pattern in _WHERE:
        text = pattern.sub("the database server", text)
    return text


def _translate(op: str, exc: Exception, *, writing: bool) -> StoreError:
    orig: Any = getattr(exc, "orig", None) or exc
    holder = dialects.lock_holder(orig)
    if holder is not None:
        return DatabaseLocked(*holder)
    if isinstance(exc, sa.exc.TimeoutError):  # the pool had no connection free in time
        return DatabaseBusy(
            f"{op} failed: no database connection free in time (setting MOEDASH_DB_POOL_TIMEOUT_S)"
        )
    # First line only: DuckDB appends the offending SQL, PostgreSQL its DETAIL/HINT
    # lines; the full text stays on ``__cause__`` for the server log.
    lines = str(orig).strip().splitlines()
    text = scrub(f"{op} failed: {lines[0] if lines else type(orig).__name__}")
    if getattr(orig, "sqlstate", None) in _TIMED_OUT:
        return DatabaseBusy(text)
    driver_level = isinstance(exc, sa.exc.DBAPIError) or not isinstance(exc, sa.exc.SQLAlchemyError)
    if writing and driver_level and dialects.is_unique_violation(exc):
        return UniqueViolation(text)
    return StoreError(text)
