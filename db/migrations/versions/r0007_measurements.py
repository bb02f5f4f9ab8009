"""Measurements: the candidate columns every answer reads, one row per run x
configuration x workload, with the run's cell keys (model, hardware, quant), world
size and TensorRT-LLM version on the row and an index led by the cell, so one cell is
read without scanning every candidate (PostgreSQL reads it by index range; DuckDB's
zone maps skip the rest). Per-configuration statistics across runs are aggregated from
it in SQL (``db.stats``). Existing runs are copied in here (backfill); new runs are
written right after their upload commits. Written out literally.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None

_RUN_KEYS = ("model", "hardware", "quant", "world_size", "trtllm_version")
_CANDIDATE_COLUMNS = (
    "candidate_index",
    "num_tokens",
    "parallel_mode",
    "attention_dp",
    "attn",
    "moe_ep_size",
    "moe_tp_size",
    "backend",
    "comm",
    "comm_requested",
    "cuda_graph",
    "low_precision_combine",
    "num_chunks",
    "dispatch",
    "status",
    "failure_category",
    "score_ms",
    "iter_median_ms",
    "iter_stdev_ms",
    "iter_p90_ms",
    "outlier_count",
    "autotune_status",
)


def upgrade() -> None:
    op.create_table(
        "measurements",
        sa.Column("run_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("model", sa.Text()),
        sa.Column("hardware", sa.Text()),
        sa.Column("quant", sa.Text()),
        sa.Column("world_size", sa.BigInteger()),
        sa.Column("trtllm_version", sa.Text()),
        sa.Column("candidate_index", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("num_tokens", sa.BigInteger()),
        sa.Column("parallel_mode", sa.Text()),
        sa.Column("attention_dp", sa.Boolean()),
        sa.Column("attn", sa.Text()),
        sa.Column("moe_ep_size", sa.BigInteger()),
        sa.Column("moe_tp_size", sa.BigInteger()),
        sa.Column("backend", sa.Text()),
        sa.Column("comm", sa.Text()),
        sa.Column("comm_requested", sa.Text()),
        sa.Column("cuda_graph", sa.Boolean()),
        sa.Column("low_precision_combine", sa.Boolean()),
        sa.Column("num_chunks", sa.BigInteger()),
        sa.Column("dispatch", sa.Text()),
        sa.Column("status", sa.Text()),
        sa.Column("failure_category", sa.Text()),
        sa.Column("score_ms", sa.Float(precision=53)),
        sa.Column("iter_median_ms", sa.Float(precision=53)),
        sa.Column("iter_stdev_ms", sa.Float(precision=53)),
        sa.Column("iter_p90_ms", sa.Float(precision=53)),
        sa.Column("outlier_count", sa.BigInteger()),
        sa.Column("autotune_status", sa.Text()),
        sa.PrimaryKeyConstraint("run_id", "candidate_index", name="measurements_pk"),
    )
    op.create_index(
        "measurements_cell",
        "measurements",
        ["model", "hardware", "quant", "run_id", "candidate_index"],
    )
    runs = ", ".join(f"r.{c}" for c in _RUN_KEYS)
    cands = ", ".join(f"c.{c}" for c in _CANDIDATE_COLUMNS)
    names = ", ".join(("run_id", *_RUN_KEYS, *_CANDIDATE_COLUMNS))
    op.execute(
        f"INSERT INTO measurements ({names}) "
        f"SELECT c.run_id, {runs}, {cands} FROM candidates c "
        "JOIN runs r ON r.run_id = c.run_id"
    )


def downgrade() -> None:
    op.drop_index("measurements_cell", table_name="measurements")
    op.drop_table("measurements")
