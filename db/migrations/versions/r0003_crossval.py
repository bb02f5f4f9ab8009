"""Cross-validation: serving imports, mapped workloads, end-to-end outcomes (hand-made
migration 3), plus the index behind /crossval/workloads' filters. Written out literally.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE serving_import_id_seq")
    op.create_table(
        "serving_imports",
        sa.Column("import_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column("source", sa.Text()),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("n_entries", sa.BigInteger(), nullable=False),
        sa.Column("n_points", sa.BigInteger(), nullable=False),
        sa.Column("n_workloads", sa.BigInteger(), nullable=False),
        sa.Column("n_mappable", sa.BigInteger(), nullable=False),
        sa.Column("n_new_workloads", sa.BigInteger(), nullable=False),
        sa.Column("n_updated_workloads", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("import_id"),
        sa.UniqueConstraint("content_hash"),
    )
    op.create_table(
        "serving_workloads",
        sa.Column("workload_id", sa.Text(), nullable=False),
        sa.Column("import_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_import_id", sa.BigInteger(), nullable=False),
        sa.Column("ordinal", sa.BigInteger(), nullable=False),
        sa.Column("point_id", sa.Text(), nullable=False),
        sa.Column("phase", sa.Text(), nullable=False),
        sa.Column("model", sa.Text()),
        sa.Column("quant", sa.Text()),
        sa.Column("hardware", sa.Text()),
        sa.Column("world_size", sa.BigInteger()),
        sa.Column("num_tokens", sa.BigInteger()),
        sa.Column("cuda_graph", sa.Boolean()),
        sa.Column("attention_dp", sa.Boolean()),
        sa.Column("backend", sa.Text()),
        sa.Column("moe_ep_size", sa.BigInteger()),
        sa.Column("moe_tp_size", sa.BigInteger()),
        sa.Column("comm", sa.Text()),
        sa.Column("comm_forced", sa.Boolean()),
        sa.Column("mappable", sa.Boolean(), nullable=False),
        sa.Column("unmapped_reason", sa.Text()),
        sa.Column("entry", sa.Text(), nullable=False),
        sa.Column("conc", sa.BigInteger()),
        sa.Column("isl", sa.BigInteger()),
        sa.Column("osl", sa.BigInteger()),
        sa.Column("config_file", sa.Text()),
        sa.Column("row_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("workload_id"),
    )
    op.create_table(
        "crossval_outcomes",
        sa.Column("workload_id", sa.Text(), nullable=False),
        sa.Column("tps_per_user_deployed", sa.Float(precision=53), nullable=False),
        sa.Column("tps_per_user_candidate", sa.Float(precision=53), nullable=False),
        sa.Column("tps_per_user_candidate_perfect_routing", sa.Float(precision=53)),
        sa.Column("source", sa.Text()),
        sa.Column("notes", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("workload_id"),
    )
    # Filters of /crossval/workloads and the ledger's model/hardware restriction.
    op.create_index("serving_workloads_facets", "serving_workloads", ["model", "hardware", "phase"])


def downgrade() -> None:
    op.drop_index("serving_workloads_facets", table_name="serving_workloads")
    op.drop_table("crossval_outcomes")
    op.drop_table("serving_workloads")
    op.drop_table("serving_imports")
    op.execute("DROP SEQUENCE serving_import_id_seq")
