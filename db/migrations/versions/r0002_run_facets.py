"""Index on the run facets the dashboard and the API filter by (hand-made migration 2)."""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_index("runs_facets", "runs", ["model", "hardware", "quant", "world_size"])


def downgrade() -> None:
    op.drop_index("runs_facets", table_name="runs")
