"""Upload sightings: every later arrival of stored measurements (the same bytes again,
e.g. a CI retry with a new ``ci_url``, or the same measurements in other bytes), with
its annotations, counted instead of repeated. Other bytes are kept (zstd), so nothing
sent is lost. Written out literally.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE sighting_id_seq")
    op.create_table(
        "upload_sightings",
        sa.Column("sighting_id", sa.BigInteger(), nullable=False, autoincrement=False),
        # No FOREIGN KEY (as runs.upload_id): the runs repository deletes sightings
        # together with their upload.
        sa.Column("upload_id", sa.BigInteger(), nullable=False),
        sa.Column("sighting_key", sa.Text(), nullable=False),
        sa.Column("sha256", sa.Text(), nullable=False),
        sa.Column("same_bytes", sa.Boolean(), nullable=False),
        sa.Column("ci_url", sa.Text()),
        sa.Column("notes", sa.Text()),
        sa.Column("filename", sa.Text()),
        sa.Column("uploaded_by", sa.Text()),
        sa.Column("first_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("n_seen", sa.BigInteger(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger()),
        sa.Column("compression", sa.Text()),
        sa.Column("content", sa.LargeBinary()),
        sa.PrimaryKeyConstraint("sighting_id"),
        sa.UniqueConstraint("sighting_key"),
    )
    op.create_index("upload_sightings_upload", "upload_sightings", ["upload_id"])


def downgrade() -> None:
    op.drop_index("upload_sightings_upload", table_name="upload_sightings")
    op.drop_table("upload_sightings")
    op.execute("DROP SEQUENCE sighting_id_seq")
