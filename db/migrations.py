"""Schema creation and upgrades, applied automatically when a store opens.

Each migration has a version number and runs once, inside one transaction, in order.
On PostgreSQL the whole upgrade holds a transaction-scoped advisory lock so several
app replicas (or the compose one-shot ``migrate`` step) starting at once apply each
migration exactly once; DuckDB has a single writer process by construction.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

import sqlalchemy as sa

from db import schema, schema_crossval

# Arbitrary constant naming moedash's advisory lock on PostgreSQL.
_PG_LOCK_KEY = 0x6D6F6564  # "moed"


@dataclasses.dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sa.Connection], None]


def _v1_initial(conn: sa.Connection) -> None:
    tables = [schema.uploads, schema.runs, schema.candidates, schema.api_tokens]
    schema.metadata.create_all(conn, tables=tables)


def _v2_indexes(conn: sa.Connection) -> None:
    # Filters the dashboard and the API use on the runs table.
    conn.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS runs_facets ON runs (model, hardware, quant, world_size)"
    )


def _v3_crossval(conn: sa.Connection) -> None:
    schema.metadata.create_all(conn, tables=list(schema_crossval.CROSSVAL_TABLES))
    # Filters of /crossval/workloads and the ledger's model/hardware restriction.
    conn.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS serving_workloads_facets "
        "ON serving_workloads (model, hardware, phase)"
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _v1_initial),
    Migration(2, "run facet index", _v2_indexes),
    Migration(3, "cross-validation: serving imports, workloads, outcomes", _v3_crossval),
)


def current_version(conn: sa.Connection) -> int:
    """Highest applied migration version (0 for an empty database)."""
    schema.schema_version.create(conn, checkfirst=True)
    value = conn.execute(sa.select(sa.func.max(schema.schema_version.c.version))).scalar()
    return int(value or 0)


def upgrade(engine: sa.Engine) -> int:
    """Apply every pending migration; return the resulting schema version."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
        version = current_version(conn)
        for migration in MIGRATIONS:
            if migration.version <= version:
                continue
            migration.apply(conn)
            conn.execute(
                schema.schema_version.insert().values(
                    version=migration.version,
                    name=migration.name,
                    applied_at=dt.datetime.now(dt.UTC),
                )
            )
            version = migration.version
    return version
