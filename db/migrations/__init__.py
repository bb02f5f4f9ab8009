"""Schema revisions (alembic), applied when a store opens and by ``moedash migrate``.

The revisions in ``versions/`` are frozen: each spells out its tables, columns and
indexes literally and never reads :mod:`db.schema`, so a database created fresh and one
upgraded revision by revision end at the same schema (``tests/db/test_migrations.py``
checks both, and that head matches :mod:`db.schema`). To change the schema, add a
revision (copy the newest file, set ``revision`` / ``down_revision`` to the next
four-digit number, write the ``op.*`` calls out) and change :mod:`db.schema` to match.
Revision ids stay numbers: the store and ``/api/v1/health`` report them as integers.

Revisions 0001-0003 are the three versions of the hand-made migrations they replace,
which recorded their version in a ``moedash_schema_version`` table; a database they
created is recognised on its first upgrade, stamped at that version and upgraded from
there (0004 drops the old table). Alembic runs programmatically over the store's own
connection (no ``alembic.ini``): ``env.py`` takes it from ``Config.attributes``.

The whole upgrade is one transaction (DuckDB and PostgreSQL both have transactional
DDL): a failing revision leaves the database as it was. On PostgreSQL the transaction
holds an advisory lock so several app replicas (or the compose one-shot ``migrate``
step) starting at once apply each revision exactly once; DuckDB has a single writer
process by construction.
"""

from __future__ import annotations

from pathlib import Path

# Registers alembic's DuckDB implementation (the dialect does so on its own only when
# alembic was imported before its first connection).
import duckdb_sqlalchemy.alembic_impl  # noqa: F401
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError

from db.errors import StoreError
from db.session import Database

SCRIPTS = Path(__file__).resolve().parent
# The hand-made migrations' bookkeeping table (revisions 0001-0003 / versions 1-3).
LEGACY_VERSION_TABLE = "moedash_schema_version"
# Arbitrary constant naming moedash's advisory lock on PostgreSQL.
_PG_LOCK_KEY = 0x6D6F6564  # "moed"


def alembic_config(conn: sa.Connection | None = None) -> Config:
    """An alembic configuration over ``versions/``; ``env.py`` migrates ``conn``."""
    cfg = Config()
    # configparser interpolation: a literal % in the path must be doubled
    cfg.set_main_option("script_location", str(SCRIPTS).replace("%", "%%"))
    if conn is not None:
        cfg.attributes["connection"] = conn
    return cfg


def head_revision() -> int:
    """Number of the newest revision."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    return int(head or 0)


def upgrade(db: Database, revision: str = "head") -> int:
    """Apply every pending revision up to ``revision`` in one transaction; return the
    resulting schema revision number. A database the hand-made migrations created is
    stamped at its version first. A revision unknown to this code (a database newer
    than moedash) raises :class:`StoreError` and changes nothing."""
    with db.write("upgrade") as conn:
        if db.dialect == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
        cfg = alembic_config(conn)
        try:
            _adopt_hand_made(conn, cfg)
            command.upgrade(cfg, revision)
        except CommandError as exc:
            raise StoreError(f"upgrade failed: {exc}") from exc
        return _current(conn)


def schema_version(db: Database) -> int:
    """The revision the database is at: alembic's record, else the hand-made
    migrations' version (a database not upgraded since), else 0 (empty database)."""
    with db.read("schema_version") as conn:
        current = _current(conn)
        if current or not sa.inspect(conn).has_table(LEGACY_VERSION_TABLE):
            return current
        return _legacy_version(conn)


def _current(conn: sa.Connection) -> int:
    revision = MigrationContext.configure(conn).get_current_revision()
    return int(revision) if revision else 0


def _legacy_version(conn: sa.Connection) -> int:
    value = conn.execute(sa.text(f"SELECT max(version) FROM {LEGACY_VERSION_TABLE}")).scalar()
    return int(value or 0)


def _adopt_hand_made(conn: sa.Connection, cfg: Config) -> None:
    """Stamp a database of the hand-made migrations at the revision of its version."""
    inspector = sa.inspect(conn)
    if inspector.has_table("alembic_version") or not inspector.has_table(LEGACY_VERSION_TABLE):
        return
    version = _legacy_version(conn)
    if version == 0:
        # The bookkeeping table alone, holding nothing: the old code created it on a
        # read (its health check); revision 0001 creates it again.
        conn.execute(sa.text(f"DROP TABLE {LEGACY_VERSION_TABLE}"))
        return
    if version > 3:
        raise StoreError(
            f"upgrade failed: {LEGACY_VERSION_TABLE} records version {version}; the "
            "hand-made migrations ended at 3"
        )
    command.stamp(cfg, f"{version:04d}")
