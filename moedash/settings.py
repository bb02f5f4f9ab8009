"""The one settings object. Every field can be set by an environment variable named
``MOEDASH_<FIELD>`` (e.g. ``MOEDASH_DATABASE_URL``). Built by the app factory / CLI and
passed down; nothing reads the environment at import time."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from db.timeouts import DbTimeouts
from service.regressions import RegressionThresholds

DEFAULT_DB = "duckdb:///var/moedash.duckdb"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MOEDASH_", extra="ignore")

    database_url: str = Field(
        DEFAULT_DB,
        description="duckdb:///path/file.duckdb (embedded, one process) or "
        "postgresql://user@host:5432/db (any number of app processes).",
    )
    db_connect_timeout_s: float = Field(
        5.0, ge=0, description="Seconds to open a PostgreSQL connection (0: no limit)."
    )
    db_statement_timeout_s: float = Field(
        60.0,
        ge=0,
        description="Seconds one PostgreSQL statement may run (statement_timeout); a server "
        "that does not answer at all is dropped 5 s later (0: no limit).",
    )
    db_lock_timeout_s: float = Field(
        10.0,
        ge=0,
        description="Seconds to wait for a lock: PostgreSQL lock_timeout, DuckDB's write "
        "lock (0: no limit).",
    )
    db_pool_timeout_s: float = Field(
        10.0, ge=0, description="Seconds to wait for a free pooled connection (0: no limit)."
    )
    host: str = Field("127.0.0.1", description="Address `moedash serve` listens on.")
    forwarded_allow_ips: str = Field(
        "127.0.0.1",
        description="Comma-separated addresses (or *) of reverse proxies whose "
        "X-Forwarded-For / X-Forwarded-Proto `moedash serve` trusts (uvicorn's "
        "forwarded_allow_ips). Per-client limits (failed authentications) key on the "
        "client address this yields: behind a proxy not listed here every client shares "
        "the proxy's address. Never list addresses clients can connect from directly.",
    )
    port: int = Field(8050, ge=1, le=65535, description="Port `moedash serve` listens on.")
    max_upload_bytes: int = Field(
        512 * 1024 * 1024,
        ge=1024,
        description="Largest accepted upload body, in bytes (413 above).",
    )
    max_json_body_bytes: int = Field(
        64 * 1024,
        ge=1024,
        description="Largest request body to an API route other than the uploads (the "
        "planner's form), in bytes (413 above).",
    )
    max_outcomes_body_bytes: int = Field(
        1024 * 1024,
        ge=1024,
        description="Largest POST /api/v1/crossval/outcomes body, in bytes (413 above).",
    )
    max_page_body_bytes: int = Field(
        2 * 1024 * 1024,
        ge=1024,
        description="Largest request body to anything but the API (dashboard callbacks), "
        "in bytes (413 above).",
    )
    max_buffered_body_bytes: int = Field(
        64 * 1024 * 1024,
        ge=64 * 1024,
        description="Bytes of request bodies (every body but an upload's, which streams to "
        "disk) held in memory at once; one more answers 429 with Retry-After.",
    )
    body_idle_s: float = Field(
        30.0, gt=0, description="Seconds a request body may stall before 408."
    )
    body_min_rate: float = Field(
        16 * 1024,
        ge=0,
        description="Slowest accepted body pace, bytes/s, enforced after body_grace_s (408).",
    )
    body_grace_s: float = Field(
        10.0, ge=0, description="Seconds a body may arrive slower than body_min_rate."
    )
    max_concurrent_uploads: int = Field(
        32, ge=1, description="Uploads in progress at once before 429 with Retry-After."
    )
    max_uploads_per_token: int = Field(
        8,
        ge=1,
        description="Uploads in progress at once with one token (before it is checked: the "
        "Authorization header as sent) before 429, so one token holder cannot take every "
        "upload slot; each body must also keep body_min_rate.",
    )
    max_expensive_requests: int = Field(
        4,
        ge=1,
        description="API requests in progress at once to the routes that compute for "
        "seconds (/api/v1/planner/, /api/v1/crossval/, /api/v1/thresholds, "
        "/api/v1/agreement) before 429 with Retry-After; the dashboard's own pages are not "
        "counted.",
    )
    parse_budget_bytes: int = Field(
        256 * 1024 * 1024,
        ge=1024,
        description="Upload bytes parsed at the same time; more wait (on disk) for room.",
    )
    parse_workers: int | None = Field(
        None,
        ge=0,
        le=64,
        description="Parse worker processes `moedash serve` uses for uploads of at most "
        "16 MiB (ingest.parse_pool); unset: one per CPU, at most 4; 0: parse in the server.",
    )
    read_requires_token: bool = Field(
        False,
        description="When true, reads (GET, the dashboard, /docs, the OpenAPI schema) also "
        "need a valid token (Bearer, or HTTP Basic with the token as password).",
    )
    auth_failures_per_minute: int = Field(
        30, ge=1, description="Failed authentications per client address per minute before 429."
    )
    demo_on_empty: bool = Field(
        True,
        description="`moedash serve` loads the published snapshot (data/published) into an "
        "empty database.",
    )
    enable_dashboard: bool = Field(
        True, description="Mount the Dash UI at / (the API is always on)."
    )
    warm_cache: bool = Field(
        True,
        description="After start, load the dashboard's cells (frames, default Pareto "
        "view, best tables) in a background thread so first visits find them cached.",
    )
    warm_predictions: bool = Field(
        True,
        description="The warm-up also computes the Predictions validation of the default "
        "cell, and the recomputation after an upload that of the uploaded cell (leave-one-"
        "out refits: 10-30 s of CPU per cell), shared through the database; false: the "
        "first visitor of the Predictions page computes it.",
    )
    migrate_on_start: bool = Field(
        True, description="Create/upgrade the schema when the app starts."
    )
    plotly_partial: bool = Field(
        True,
        description="Draw with the plotly.js partial bundle `make assets` puts in "
        "static/vendor (1.2 MB, SVG only) when present; false: Dash's full plotly.js "
        "(4.8 MB, WebGL for large candidate clouds).",
    )
    shared_data: str | None = Field(
        None,
        description="Directory of third-party data (../shared/data); used by the real-data "
        "test tier and `moedash import-serving` defaults.",
    )
    regression_thresholds: RegressionThresholds = Field(
        default_factory=RegressionThresholds,
        description="Regression thresholds in percent for the upload check, as JSON: "
        '{"default_pct": 5, "overrides": {"<model>": 4, "<model>/<hardware>": 3, '
        '"*/<hardware>": 8}} (most specific wins).',
    )

    def db_timeouts(self) -> DbTimeouts:
        """The database waits these settings allow (db.timeouts)."""
        return DbTimeouts(
            connect_s=self.db_connect_timeout_s,
            statement_s=self.db_statement_timeout_s,
            lock_s=self.db_lock_timeout_s,
            pool_s=self.db_pool_timeout_s,
        )
