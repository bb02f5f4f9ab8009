"""SQL only: one store over DuckDB or PostgreSQL, repositories per concept, alembic revisions."""

from db.errors import Conflict, NotFound, StoreError
from db.store import Store, open_store

__all__ = ["Conflict", "NotFound", "Store", "StoreError", "open_store"]
