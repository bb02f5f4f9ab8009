"""The one settings object. Every field can be set by an environment variable named
``MOEDASH_<FIELD>`` (e.g. ``MOEDASH_DATABASE_URL``). Built by the app factory / CLI and
passed down; nothing reads the environment at import time."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DB = "duckdb:///var/moedash.duckdb"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MOEDASH_", extra="ignore")

    database_url: str = Field(
        DEFAULT_DB,
        description="duckdb:///path/file.duckdb (embedded, one process) or "
        "postgresql://user@host:5432/db (any number of app processes).",
    )
    host: str = Field("127.0.0.1", description="Address `moedash serve` listens on.")
    port: int = Field(8050, ge=1, le=65535, description="Port `moedash serve` listens on.")
    max_upload_bytes: int = Field(
        512 * 1024 * 1024,
        ge=1024,
        description="Largest accepted upload body, in bytes (413 above).",
    )
    read_requires_token: bool = Field(
        False, description="When true, reads (GET) also need a valid bearer token."
    )
    demo_on_empty: bool = Field(
        True, description="`moedash serve` loads the synthetic demo dataset into an empty database."
    )
    enable_dashboard: bool = Field(
        True, description="Mount the Dash UI at / (the API is always on)."
    )
    warm_cache: bool = Field(
        True,
        description="After start, load the dashboard's cells (frames, default Pareto "
        "view, best tables) in a background thread so first visits find them cached.",
    )
    migrate_on_start: bool = Field(
        True, description="Create/upgrade the schema when the app starts."
    )
    shared_data: str | None = Field(
        None,
        description="Directory of third-party data (../shared/data); used by the real-data "
        "test tier and `moedash import-serving` defaults.",
    )
