"""Cross-validation tables: serving-config imports, mapped workloads, end-to-end outcomes.

Defined on the same :data:`db.schema.metadata` as the core tables and created by
revisions 0003 and 0005. Column names come from ``analysis.columns`` / ``analysis.crossval_columns``
so stored rows and the analysis frames agree by construction. No FOREIGN KEYs, for the
same reason as ``runs`` (DuckDB); :mod:`db.crossval` keeps references consistent.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from analysis import columns as c
from analysis import crossval_columns as cc
from db.schema import metadata

serving_import_id_seq = sa.Sequence("serving_import_id_seq", metadata=metadata)

serving_imports = sa.Table(
    "serving_imports",
    metadata,
    sa.Column("import_id", sa.BigInteger, serving_import_id_seq, primary_key=True),
    # ingest.serving_configs.ImportResult.content_hash: same configs -> same hash.
    sa.Column("content_hash", sa.Text, nullable=False, unique=True),
    sa.Column("source", sa.Text),
    sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("n_entries", sa.BigInteger, nullable=False),
    sa.Column("n_points", sa.BigInteger, nullable=False),
    sa.Column("n_workloads", sa.BigInteger, nullable=False),
    sa.Column("n_mappable", sa.BigInteger, nullable=False),
    sa.Column("n_new_workloads", sa.BigInteger, nullable=False),
    sa.Column("n_updated_workloads", sa.BigInteger, nullable=False),
)

# Key columns of a workload, stored as real columns for filtering; the full
# analysis.crossval_columns.WORKLOAD_COLUMNS row is kept losslessly in row_json.
WORKLOAD_KEY_COLUMNS: dict[str, sa.types.TypeEngine[Any]] = {
    cc.POINT_ID: sa.Text(),
    cc.PHASE: sa.Text(),
    c.MODEL: sa.Text(),
    c.QUANT: sa.Text(),
    c.HARDWARE: sa.Text(),
    c.WORLD_SIZE: sa.BigInteger(),
    c.NUM_TOKENS: sa.BigInteger(),
    c.CUDA_GRAPH: sa.Boolean(),
    c.ATTENTION_DP: sa.Boolean(),
    c.BACKEND: sa.Text(),
    c.MOE_EP_SIZE: sa.BigInteger(),
    c.MOE_TP_SIZE: sa.BigInteger(),
    c.COMM: sa.Text(),
    cc.COMM_FORCED: sa.Boolean(),
    cc.MAPPABLE: sa.Boolean(),
    cc.UNMAPPED_REASON: sa.Text(),
    cc.ENTRY: sa.Text(),
    cc.CONC: sa.BigInteger(),
    cc.ISL: sa.BigInteger(),
    cc.OSL: sa.BigInteger(),
    cc.CONFIG_FILE: sa.Text(),
}
_NOT_NULL = {cc.POINT_ID, cc.PHASE, cc.MAPPABLE, cc.ENTRY}

serving_workloads = sa.Table(
    "serving_workloads",
    metadata,
    sa.Column(cc.WORKLOAD_ID, sa.Text, primary_key=True),
    # Import that first stored (import_id) and last changed (updated_import_id) the row.
    sa.Column("import_id", sa.BigInteger, nullable=False),
    sa.Column("updated_import_id", sa.BigInteger, nullable=False),
    # Global insertion position: reads return workloads in map_workloads order.
    sa.Column("ordinal", sa.BigInteger, nullable=False),
    *[sa.Column(n, t, nullable=n not in _NOT_NULL) for n, t in WORKLOAD_KEY_COLUMNS.items()],
    sa.Column("row_json", sa.Text, nullable=False),
    # Filters of /crossval/workloads and the ledger's model/hardware restriction.
    sa.Index("serving_workloads_facets", c.MODEL, c.HARDWARE, cc.PHASE),
)

crossval_outcomes = sa.Table(
    "crossval_outcomes",
    metadata,
    sa.Column(cc.WORKLOAD_ID, sa.Text, primary_key=True),
    sa.Column(cc.TPS_DEPLOYED, sa.Float(precision=53), nullable=False),
    sa.Column(cc.TPS_CANDIDATE, sa.Float(precision=53), nullable=False),
    sa.Column(cc.TPS_CANDIDATE_PR, sa.Float(precision=53)),
    # Paired with the candidate's perfect-routing run (revision 0005).
    sa.Column(cc.TPS_DEPLOYED_PR, sa.Float(precision=53)),
    sa.Column("source", sa.Text),
    sa.Column("notes", sa.Text),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True)),
)

# The computed ledger (revision 0005): one row per input version - the stored bench_moe
# runs, the serving-config imports and the token tolerance, spelled out in ledger_key -
# holding every ledger row as JSON. Only the newest key is kept (db.crossval).
crossval_ledgers = sa.Table(
    "crossval_ledgers",
    metadata,
    sa.Column("ledger_key", sa.Text, primary_key=True),
    sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("n_rows", sa.BigInteger, nullable=False),
    sa.Column("compute_ms", sa.Float(precision=53), nullable=False),
    sa.Column("ledger_json", sa.Text, nullable=False),
)

CROSSVAL_TABLES: tuple[sa.Table, ...] = (
    serving_imports,
    serving_workloads,
    crossval_outcomes,
    crossval_ledgers,
)
