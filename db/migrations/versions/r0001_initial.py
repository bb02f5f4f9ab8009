"""Initial schema: uploads, runs, candidates, API tokens (hand-made migration 1).

Also the hand-made migrations' own bookkeeping table, ``moedash_schema_version``, which
every database they created holds; revision 0004 drops it. Written out literally (never
from ``db.schema``): this revision is what it was when databases were created with it.
The id columns take their values from explicit sequences that ``db.schema`` names on
insert, so they carry no server default (``autoincrement=False``); the bookkeeping
table's ``version`` is the one autoincrementing key (SERIAL on PostgreSQL, a sequence
named ``moedash_schema_version_version_seq`` on DuckDB).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "moedash_schema_version",
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("version"),
    )
    op.execute("CREATE SEQUENCE upload_id_seq")
    op.create_table(
        "uploads",
        sa.Column("upload_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("sha256", sa.Text(), nullable=False),
        sa.Column("filename", sa.Text()),
        sa.Column("source_format", sa.Text(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("compression", sa.Text(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("meta_json", sa.Text(), nullable=False),
        sa.Column("uploaded_by", sa.Text()),
        sa.Column("uploaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("upload_id"),
        sa.UniqueConstraint("sha256"),
    )
    op.execute("CREATE SEQUENCE run_id_seq")
    op.create_table(
        "runs",
        # No FOREIGN KEY: DuckDB rejects deleting a parent row in the transaction that
        # deleted its children; the runs repository keeps the reference consistent.
        sa.Column("run_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("upload_id", sa.BigInteger(), nullable=False),
        sa.Column("run_key", sa.Text(), nullable=False),
        sa.Column("sweep_key", sa.Text(), nullable=False),
        sa.Column("source_format", sa.Text()),
        sa.Column("model", sa.Text()),
        sa.Column("num_experts", sa.BigInteger()),
        sa.Column("top_k", sa.BigInteger()),
        sa.Column("hidden_size", sa.BigInteger()),
        sa.Column("intermediate_size", sa.BigInteger()),
        sa.Column("quant", sa.Text()),
        sa.Column("hardware", sa.Text()),
        sa.Column("world_size", sa.BigInteger()),
        sa.Column("trtllm_version", sa.Text()),
        sa.Column("trtllm_commit", sa.Text()),
        sa.Column("run_date", sa.Text()),
        sa.Column("synthetic", sa.Boolean()),
        sa.Column("device_name", sa.Text()),
        sa.Column("sm", sa.BigInteger()),
        sa.Column("cuda_version", sa.Text()),
        sa.Column("torch_version", sa.Text()),
        sa.Column("driver_version", sa.Text()),
        sa.Column("routing_method", sa.Text()),
        sa.Column("ci_url", sa.Text()),
        sa.Column("notes", sa.Text()),
        sa.Column("dispatch", sa.Text()),
        sa.Column("model_json", sa.Text()),
        sa.Column("environment_json", sa.Text()),
        sa.Column("search_json", sa.Text()),
        sa.Column("base_config_json", sa.Text()),
        sa.Column("rankings_json", sa.Text()),
        sa.Column("extra_json", sa.Text()),
        sa.Column("warnings_json", sa.Text()),
        sa.Column("n_candidates", sa.BigInteger(), nullable=False),
        sa.Column("n_success", sa.BigInteger(), nullable=False),
        sa.Column("n_failed", sa.BigInteger(), nullable=False),
        sa.Column("n_skipped", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
        sa.UniqueConstraint("run_key"),
    )
    op.create_table(
        "candidates",
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("candidate_index", sa.BigInteger(), nullable=False),
        sa.Column("num_tokens", sa.BigInteger()),
        sa.Column("per_rank_num_tokens", sa.Text()),
        sa.Column("parallel_mode", sa.Text()),
        sa.Column("attention_dp", sa.Boolean()),
        sa.Column("attn", sa.Text()),
        sa.Column("moe_ep_size", sa.BigInteger()),
        sa.Column("moe_tp_size", sa.BigInteger()),
        sa.Column("backend", sa.Text()),
        sa.Column("requested_backend", sa.Text()),
        sa.Column("comm", sa.Text()),
        sa.Column("comm_requested", sa.Text()),
        sa.Column("comm_actual", sa.Text()),
        sa.Column("cuda_graph", sa.Boolean()),
        sa.Column("low_precision_combine", sa.Boolean()),
        sa.Column("dispatch", sa.Text()),
        sa.Column("status", sa.Text()),
        sa.Column("failure_category", sa.Text()),
        sa.Column("skip_reason", sa.Text()),
        sa.Column("score_ms", sa.Float(precision=53)),
        sa.Column("raw_score_ms", sa.Float(precision=53)),
        sa.Column("score_type", sa.Text()),
        sa.Column("iter_mean_ms", sa.Float(precision=53)),
        sa.Column("iter_median_ms", sa.Float(precision=53)),
        sa.Column("iter_stdev_ms", sa.Float(precision=53)),
        sa.Column("iter_min_ms", sa.Float(precision=53)),
        sa.Column("iter_max_ms", sa.Float(precision=53)),
        sa.Column("iter_p90_ms", sa.Float(precision=53)),
        sa.Column("outlier_count", sa.BigInteger()),
        sa.Column("n_iters", sa.BigInteger()),
        sa.Column("autotune_status", sa.Text()),
        sa.Column("bottleneck", sa.Text()),
        sa.Column("scheduler_kind", sa.Text()),
        sa.Column("num_chunks", sa.BigInteger()),
        sa.Column("routing_status", sa.Text()),
        sa.Column("off_diagonal_ratio", sa.Float(precision=53)),
        sa.Column("active_experts", sa.BigInteger()),
        sa.Column("source_rank", sa.BigInteger()),
        sa.Column("per_rank_json", sa.Text()),
        sa.Column("extra_json", sa.Text()),
        sa.PrimaryKeyConstraint("run_id", "candidate_index", name="candidates_pk"),
    )
    op.execute("CREATE SEQUENCE token_id_seq")
    op.create_table(
        "api_tokens",
        sa.Column("token_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("scopes", sa.Text(), nullable=False),
        sa.Column("token_hash", sa.Text(), nullable=False),
        sa.Column("prefix", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
        sa.Column("last_used_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("token_id"),
        sa.UniqueConstraint("name"),
        sa.UniqueConstraint("token_hash"),
    )


def downgrade() -> None:
    for table, sequence in (
        ("api_tokens", "token_id_seq"),
        ("candidates", None),
        ("runs", "run_id_seq"),
        ("uploads", "upload_id_seq"),
    ):
        op.drop_table(table)
        if sequence:
            op.execute(f"DROP SEQUENCE {sequence}")
    op.drop_table("moedash_schema_version")
    if op.get_bind().dialect.name == "duckdb":
        op.execute("DROP SEQUENCE moedash_schema_version_version_seq")
