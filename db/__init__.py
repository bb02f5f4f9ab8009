"""Storage: one store interface over DuckDB (embedded) and PostgreSQL (team)."""

from db.errors import Conflict, NotFound, StoreError
from db.store import Store, open_store

__all__ = ["Conflict", "NotFound", "Store", "StoreError", "open_store"]
