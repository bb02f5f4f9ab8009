"""A sweep upload re-derives the stored cross-validation ledger in the background, so
the first cross-validation read after it finds the ledger stored."""

from __future__ import annotations

from fastapi.testclient import TestClient

from analysis.crossval import DEFAULT_TOKEN_TOLERANCE
from db.store import Store
from service.crossval import ledger_key
from service.crossval_refresh import LedgerRefresher
from tests.api.test_api_crossval import auth, upload
from tests.factories import EXAMPLE


def _stored(store: Store) -> bool:
    key = ledger_key(store, DEFAULT_TOKEN_TOLERANCE)
    return store.crossval.stored_ledger(key) is not None


def test_upload_refreshes_the_stored_ledger(client: TestClient, store: Store) -> None:
    secret = store.tokens.create_token("ci", ["upload"])[1]
    assert upload(client, secret).status_code == 201  # serving configs: ledger stored
    refresher: LedgerRefresher = client.app.state.ledger_refresher  # type: ignore[attr-defined]
    resp = client.post(
        "/api/v1/runs?hardware=B200", content=EXAMPLE.read_bytes(), headers=auth(secret)
    )
    assert resp.status_code == 201, resp.text
    assert not _stored(store) or refresher.wait(60)  # new runs: a new input version
    assert refresher.wait(60)
    assert _stored(store)  # computed off-request, under the new version's key
    again = client.post(
        "/api/v1/runs?hardware=B200", content=EXAMPLE.read_bytes(), headers=auth(secret)
    )
    assert again.status_code == 200  # the same bytes: nothing new, nothing to refresh
    assert refresher.wait(60) and _stored(store)


def test_no_serving_configs_no_ledger(client: TestClient, store: Store) -> None:
    secret = store.tokens.create_token("ci", ["upload"])[1]
    resp = client.post(
        "/api/v1/runs?hardware=B200", content=EXAMPLE.read_bytes(), headers=auth(secret)
    )
    assert resp.status_code == 201
    refresher: LedgerRefresher = client.app.state.ledger_refresher  # type: ignore[attr-defined]
    assert refresher.wait(60)
    assert store.crossval.stored_ledger_keys().empty  # nothing to cross-validate


def test_cli_ingest_refreshes_the_stored_ledger(db_url: str) -> None:
    from moedash.cli import main
    from tests.api.test_api_crossval import FIXTURE

    assert main(["import-serving", str(FIXTURE), "--db", db_url]) == 0
    assert main(["ingest", str(EXAMPLE), "--hardware", "B200", "--db", db_url]) == 0
    from db.store import open_store

    store = open_store(db_url)
    try:
        assert _stored(store)  # stored at ingest, under the version that includes the run
    finally:
        store.close()
