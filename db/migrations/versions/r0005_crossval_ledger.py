"""Cross-validation: the stored ledger (``crossval_ledgers``) and the deployed config's
perfect-routing run on an outcome (``crossval_outcomes.tps_per_user_deployed_perfect_
routing``, nullable: older outcomes have none). Written out literally.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "crossval_ledgers",
        sa.Column("ledger_key", sa.Text(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("n_rows", sa.BigInteger(), nullable=False),
        sa.Column("compute_ms", sa.Float(precision=53), nullable=False),
        sa.Column("ledger_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("ledger_key"),
    )
    op.add_column(
        "crossval_outcomes",
        sa.Column("tps_per_user_deployed_perfect_routing", sa.Float(precision=53)),
    )


def downgrade() -> None:
    op.drop_column("crossval_outcomes", "tps_per_user_deployed_perfect_routing")
    op.drop_table("crossval_ledgers")
