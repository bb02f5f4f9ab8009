"""Alembic records the schema version from here on: drop the hand-made migrations'
``moedash_schema_version`` table (and, on DuckDB, the sequence behind its key).

A database the hand-made migrations created is stamped at the version that table held
before this runs (see :func:`db.migrations.upgrade`).
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

# What the hand-made migrations recorded, for a downgrade back to their bookkeeping.
_HAND_MADE = (
    (1, "initial schema"),
    (2, "run facet index"),
    (3, "cross-validation: serving imports, workloads, outcomes"),
)


def upgrade() -> None:
    op.drop_table("moedash_schema_version")
    if op.get_bind().dialect.name == "duckdb":
        op.execute("DROP SEQUENCE moedash_schema_version_version_seq")


def downgrade() -> None:
    table = op.create_table(
        "moedash_schema_version",
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("version"),
    )
    now = dt.datetime.now(dt.UTC)
    op.bulk_insert(
        table, [{"version": v, "name": name, "applied_at": now} for v, name in _HAND_MADE]
    )
