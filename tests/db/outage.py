"""Real database outages for tests: a store whose database goes away mid-test.

- DuckDB: the store's connections are closed and its file is overwritten with bytes
  that are not a database, so every new connection fails inside the driver.
- PostgreSQL: the store gets a database of its own; cutting it stops that database from
  taking connections and terminates the store's sessions (``pg_terminate_backend``), so
  the pool's pre-ping reconnect fails too. ``restore()`` lets connections in again.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from db.store import Store

PG_URL = os.environ.get("MOEDASH_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


@dataclasses.dataclass
class Outage:
    """``url`` of a fresh database; ``cut(store)`` takes it away from ``store``."""

    url: str
    cut: Callable[[Store], None]
    restore: Callable[[], None]


@contextmanager
def outage_database(kind: str, tmp_path: Path) -> Iterator[Outage]:
    """A fresh database of ``kind`` (``duckdb`` / ``postgres``) that can be cut."""
    if kind == "duckdb":
        path = tmp_path / "outage.duckdb"

        def cut_file(store: Store) -> None:
            store.close()
            path.write_bytes(b"this is not a DuckDB database\n" * 512)

        def no_restore() -> None:
            raise AssertionError("a DuckDB outage is not restored")

        yield Outage(f"duckdb:///{path}", cut_file, no_restore)
        return
    name = "t_out_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(
        PG_URL.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")

    def cut_database(_: Store) -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            )

    def restore_database() -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")

    base = PG_URL.split("?", 1)[0].rsplit("/", 1)[0]
    try:
        yield Outage(f"{base}/{name}", cut_database, restore_database)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()
