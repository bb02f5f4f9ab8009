"""Frozen alembic revisions, one file per schema version; alembic loads them by path."""
