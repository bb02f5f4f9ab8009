"""A write that waits too long for the embedded database's write lock (another upload,
a checkpoint) answers 503 with Retry-After naming the setting, instead of holding the
request for as long as the other write takes (DuckDB has no server-side lock timeout:
``MOEDASH_DB_LOCK_TIMEOUT_S`` bounds the in-process lock)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from db.store import open_store
from db.timeouts import DbTimeouts
from moedash.app import create_app
from moedash.settings import Settings
from tests.factories import EXAMPLE
from tests.factories.stores import DuckDBTemplates


def test_duckdb_write_lock_wait_is_bounded(
    tmp_path: Path, duckdb_templates: DuckDBTemplates
) -> None:
    url = duckdb_templates.copy(tmp_path / "busy.duckdb")
    store = open_store(url, upgrade=False, timeouts=DbTimeouts(lock_s=0.5))
    try:
        token = store.tokens.create_token("ci", ["upload"])[1]
        lock = store._db.write_lock  # the lock every DuckDB write takes (db.session)
        assert lock is not None
        settings = Settings(database_url=url, enable_dashboard=False, warm_cache=False)
        with TestClient(create_app(settings, store=store)) as client, lock:
            resp = client.post(
                "/api/v1/runs",
                content=EXAMPLE.read_bytes(),
                params={"trtllm_version": "v1.3.0rc26"},
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
        assert resp.status_code == 503, resp.text
        assert int(resp.headers["retry-after"]) >= 1
        assert "MOEDASH_DB_LOCK_TIMEOUT_S" in resp.json()["detail"][0]["msg"]
    finally:
        store.close()
