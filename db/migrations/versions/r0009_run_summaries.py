"""Per-run summaries of the measurements: per run x workload (num_tokens, parallel_mode,
cuda_graph) the rows stored and succeeded, per run x backend x comm the rows succeeded.
The coverage table and the capabilities read these (a few dozen rows per run) instead
of every measurement row. The runs recorded before this revision are summarised here
(backfill); later runs are summarised in the transaction that records them. Written
out literally.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "run_workloads",
        sa.Column("run_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("num_tokens", sa.BigInteger()),
        sa.Column("parallel_mode", sa.Text()),
        sa.Column("cuda_graph", sa.Boolean()),
        sa.Column("n_rows", sa.BigInteger(), nullable=False),
        sa.Column("n_success", sa.BigInteger(), nullable=False),
    )
    op.create_index("run_workloads_run", "run_workloads", ["run_id"])
    op.create_table(
        "run_capabilities",
        sa.Column("run_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("backend", sa.Text()),
        sa.Column("comm", sa.Text()),
        sa.Column("n_success", sa.BigInteger(), nullable=False),
    )
    op.create_index("run_capabilities_run", "run_capabilities", ["run_id"])
    op.execute(
        "INSERT INTO run_workloads (run_id, num_tokens, parallel_mode, cuda_graph, n_rows, "
        "n_success) SELECT run_id, num_tokens, parallel_mode, cuda_graph, count(*), "
        "sum(CASE WHEN status = 'success' THEN 1 ELSE 0 END) FROM measurements "
        "GROUP BY run_id, num_tokens, parallel_mode, cuda_graph"
    )
    op.execute(
        "INSERT INTO run_capabilities (run_id, backend, comm, n_success) "
        "SELECT run_id, backend, comm, count(*) FROM measurements "
        "WHERE status = 'success' GROUP BY run_id, backend, comm"
    )


def downgrade() -> None:
    op.drop_index("run_capabilities_run", table_name="run_capabilities")
    op.drop_table("run_capabilities")
    op.drop_index("run_workloads_run", table_name="run_workloads")
    op.drop_table("run_workloads")
