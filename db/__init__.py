"""Storage, SQL only: one store interface over DuckDB (embedded) and PostgreSQL (team),
repositories per concept, every driver error translated, alembic revisions."""

from db.errors import Conflict, NotFound, StoreError
from db.store import Store, open_store

__all__ = ["Conflict", "NotFound", "Store", "StoreError", "open_store"]
