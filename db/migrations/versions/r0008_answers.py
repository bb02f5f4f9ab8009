"""Shared answers: results computed once per cell version (Best, the Pareto table,
per-configuration statistics ...) that every replica reads instead of computing them
again from the cell's rows. One row per answer kind x parameters; the cells' version
it was computed on is on the row, so a stale row is simply not used and is replaced by
the next computation. Written out literally.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "answers",
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("params", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("cells", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "params", name="answers_pk"),
    )


def downgrade() -> None:
    op.drop_table("answers")
