"""Table definitions (SQLAlchemy Core), shared by DuckDB and PostgreSQL.

These are what queries are built from; the database gets its tables from the frozen
revisions in :mod:`db.migrations` (``tests/db/test_migrations.py`` checks the two agree).

Candidate columns come from ``analysis.columns`` so the table, the parsers and the
analysis agree on names by construction.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from analysis import columns as C
from ingest.records import RUN_EXTRA_KEYS

metadata = sa.MetaData()

# DuckDB has no SERIAL/IDENTITY through SQLAlchemy; explicit sequences work on both.
upload_id_seq = sa.Sequence("upload_id_seq", metadata=metadata)
run_id_seq = sa.Sequence("run_id_seq", metadata=metadata)
token_id_seq = sa.Sequence("token_id_seq", metadata=metadata)
sighting_id_seq = sa.Sequence("sighting_id_seq", metadata=metadata)


def _column_type(name: str) -> sa.types.TypeEngine[Any]:
    if name in C.INT_COLUMNS:
        return sa.BigInteger()
    if name in C.FLOAT_COLUMNS:
        return sa.Float(precision=53)
    if name in C.BOOL_COLUMNS:
        return sa.Boolean()
    return sa.Text()


uploads = sa.Table(
    "uploads",
    metadata,
    sa.Column("upload_id", sa.BigInteger, upload_id_seq, primary_key=True),
    sa.Column("sha256", sa.Text, nullable=False, unique=True),
    sa.Column("filename", sa.Text),
    sa.Column("source_format", sa.Text, nullable=False),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("compression", sa.Text, nullable=False),
    sa.Column("content", sa.LargeBinary, nullable=False),
    sa.Column("meta_json", sa.Text, nullable=False),
    sa.Column("uploaded_by", sa.Text),
    sa.Column("uploaded_at", sa.DateTime(timezone=True), nullable=False),
)

_run_cols = [c for c in C.RUN_COLUMNS if c != C.RUN_ID]
runs = sa.Table(
    "runs",
    metadata,
    sa.Column(C.RUN_ID, sa.BigInteger, run_id_seq, primary_key=True),
    # No FOREIGN KEY: DuckDB rejects deleting a parent row in the transaction that
    # deleted its children; RunRepository.delete_run keeps the reference consistent.
    sa.Column("upload_id", sa.BigInteger, nullable=False),
    sa.Column("run_key", sa.Text, nullable=False, unique=True),
    sa.Column("sweep_key", sa.Text, nullable=False),
    *[sa.Column(c, _column_type(c)) for c in _run_cols],
    *[sa.Column(c, sa.BigInteger() if c == "sm" else sa.Text()) for c in RUN_EXTRA_KEYS],
    sa.Column("n_candidates", sa.BigInteger, nullable=False),
    sa.Column("n_success", sa.BigInteger, nullable=False),
    sa.Column("n_failed", sa.BigInteger, nullable=False),
    sa.Column("n_skipped", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    # Filters the dashboard and the API use on the runs table.
    sa.Index("runs_facets", "model", "hardware", "quant", "world_size"),
)

candidates = sa.Table(
    "candidates",
    metadata,
    sa.Column(C.RUN_ID, sa.BigInteger, nullable=False),
    *[sa.Column(c, _column_type(c)) for c in C.CANDIDATE_COLUMNS],
    sa.PrimaryKeyConstraint(C.RUN_ID, C.CANDIDATE_INDEX, name="candidates_pk"),
)

# The cell keys and facts each measurement row carries from its run (revision 0007).
MEASUREMENT_RUN_KEYS: tuple[str, ...] = (
    C.MODEL,
    C.HARDWARE,
    C.QUANT,
    C.WORLD_SIZE,
    C.TRTLLM_VERSION,
)
# The candidate columns every answer reads: configuration identity, workload, status,
# score and iteration spread (no JSON, no long texts).
MEASUREMENT_COLUMNS: tuple[str, ...] = (
    C.CANDIDATE_INDEX,
    C.NUM_TOKENS,
    C.PARALLEL_MODE,
    C.ATTENTION_DP,
    C.ATTN,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.BACKEND,
    C.COMM,
    C.COMM_REQUESTED,
    C.CUDA_GRAPH,
    C.LOW_PRECISION_COMBINE,
    C.NUM_CHUNKS,
    C.DISPATCH,
    C.STATUS,
    C.FAILURE_CATEGORY,
    C.SCORE_MS,
    C.ITER_MEDIAN_MS,
    C.ITER_STDEV_MS,
    C.ITER_P90_MS,
    C.OUTLIER_COUNT,
    C.AUTOTUNE_STATUS,
)

# One row per run x configuration x workload with its cell on the row (see db.stats).
measurements = sa.Table(
    "measurements",
    metadata,
    sa.Column(C.RUN_ID, sa.BigInteger, nullable=False, autoincrement=False),
    *[sa.Column(c, _column_type(c)) for c in MEASUREMENT_RUN_KEYS],
    *[
        sa.Column(c, _column_type(c), nullable=c != C.CANDIDATE_INDEX, autoincrement=False)
        for c in MEASUREMENT_COLUMNS
    ],
    sa.PrimaryKeyConstraint(C.RUN_ID, C.CANDIDATE_INDEX, name="measurements_pk"),
    sa.Index("measurements_cell", C.MODEL, C.HARDWARE, C.QUANT, C.RUN_ID, C.CANDIDATE_INDEX),
)

# Per-run summaries written in the transaction that writes the run's measurements
# (revision 0009; see db.summaries): what the coverage table and the capabilities
# aggregate over, a few dozen rows per run instead of its every candidate.
run_workloads = sa.Table(
    "run_workloads",
    metadata,
    sa.Column(C.RUN_ID, sa.BigInteger, nullable=False, autoincrement=False),
    sa.Column(C.NUM_TOKENS, sa.BigInteger),
    sa.Column(C.PARALLEL_MODE, sa.Text),
    sa.Column(C.CUDA_GRAPH, sa.Boolean),
    sa.Column("n_rows", sa.BigInteger, nullable=False),
    sa.Column("n_success", sa.BigInteger, nullable=False),
    sa.Index("run_workloads_run", C.RUN_ID),
)
run_capabilities = sa.Table(
    "run_capabilities",
    metadata,
    sa.Column(C.RUN_ID, sa.BigInteger, nullable=False, autoincrement=False),
    sa.Column(C.BACKEND, sa.Text),
    sa.Column(C.COMM, sa.Text),
    sa.Column("n_success", sa.BigInteger, nullable=False),
    sa.Index("run_capabilities_run", C.RUN_ID),
)

# Answers computed once per cell version and shared by every replica (revision 0008;
# see db.answers): one row per kind x parameters, replaced when the cells change.
answers = sa.Table(
    "answers",
    metadata,
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("params", sa.Text, nullable=False),
    sa.Column("version", sa.Text, nullable=False),
    sa.Column("cells", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("payload", sa.LargeBinary, nullable=False),
    sa.PrimaryKeyConstraint("kind", "params", name="answers_pk"),
)

api_tokens = sa.Table(
    "api_tokens",
    metadata,
    sa.Column("token_id", sa.BigInteger, token_id_seq, primary_key=True),
    sa.Column("name", sa.Text, nullable=False, unique=True),
    sa.Column("scopes", sa.Text, nullable=False),
    sa.Column("token_hash", sa.Text, nullable=False, unique=True),
    sa.Column("prefix", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("revoked_at", sa.DateTime(timezone=True)),
    sa.Column("last_used_at", sa.DateTime(timezone=True)),
)

# Later arrivals of stored measurements (revision 0006; see db.sightings).
upload_sightings = sa.Table(
    "upload_sightings",
    metadata,
    sa.Column("sighting_id", sa.BigInteger, sighting_id_seq, primary_key=True),
    sa.Column("upload_id", sa.BigInteger, nullable=False),
    sa.Column("sighting_key", sa.Text, nullable=False, unique=True),
    sa.Column("sha256", sa.Text, nullable=False),
    sa.Column("same_bytes", sa.Boolean, nullable=False),
    sa.Column("ci_url", sa.Text),
    sa.Column("notes", sa.Text),
    sa.Column("filename", sa.Text),
    sa.Column("uploaded_by", sa.Text),
    sa.Column("first_seen_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("n_seen", sa.BigInteger, nullable=False),
    sa.Column("size_bytes", sa.BigInteger),
    sa.Column("compression", sa.Text),
    sa.Column("content", sa.LargeBinary),
    sa.Index("upload_sightings_upload", "upload_id"),
)

RUN_TABLE_COLUMNS: tuple[str, ...] = tuple(c.name for c in runs.columns)
