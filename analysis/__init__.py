"""Pure, deterministic analysis over candidate DataFrames (no database, no web)."""
