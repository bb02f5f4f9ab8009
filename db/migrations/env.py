"""Alembic's entry point, run by ``alembic.command`` from :mod:`db.migrations`.

Migrates the connection handed over in ``Config.attributes["connection"]`` inside the
caller's transaction (alembic sees it is already in one and leaves commit or rollback
to the caller). There is no offline (SQL script) mode and no ``alembic.ini``.
"""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("db.migrations: run alembic through db.migrations.upgrade()")
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
