"""Closed reads (``MOEDASH_READ_REQUIRES_TOKEN``) are closed everywhere and open to the
dashboard's credentials: Bearer or HTTP Basic (password = token) on API reads, /docs and
the OpenAPI schema closed too, ``last_used_at`` recorded (throttled), failed
authentication rate-limited per client address (429 with Retry-After)."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.limits import AuthFailureLimiter
from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from tests.factories import EXAMPLE


def basic(token: str, user: str = "anyone") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def closed(settings: Settings, store: Store) -> Iterator[TestClient]:
    closed_settings = settings.model_copy(
        update={"read_requires_token": True, "auth_failures_per_minute": 5}
    )
    with TestClient(create_app(closed_settings, store=store)) as client:
        yield client


@pytest.fixture
def run_id(closed: TestClient, upload_token: str) -> int:
    resp = closed.post(
        "/api/v1/runs",
        content=EXAMPLE.read_bytes(),
        params={"trtllm_version": "v1.3.0rc26"},
        headers={**bearer(upload_token), "Content-Type": "application/json"},
    )
    assert resp.status_code == 201, resp.text
    return int(resp.json()["runs"][0]["run_id"])


def test_reads_accept_basic_credentials_like_the_browser_sends(
    closed: TestClient, upload_token: str, run_id: int
) -> None:
    assert closed.get("/api/v1/runs").status_code == 401
    for headers in (bearer(upload_token), basic(upload_token), basic(upload_token, "")):
        assert closed.get("/api/v1/runs", headers=headers).status_code == 200
    # the dashboard's "Download the raw upload" link, with the browser's Basic credentials
    raw = closed.get(f"/api/v1/runs/{run_id}/raw", headers=basic(upload_token))
    assert raw.status_code == 200 and raw.content == EXAMPLE.read_bytes()
    wrong = closed.get("/api/v1/runs", headers=basic("mdt_wrong"))
    assert wrong.status_code == 401 and "Basic" in wrong.headers["www-authenticate"]
    assert closed.get("/api/v1/runs", headers={"Authorization": "Basic !!!"}).status_code == 401


def test_docs_and_openapi_are_closed_too(closed: TestClient, upload_token: str) -> None:
    for path in ("/docs", "/api/v1/openapi.json"):
        resp = closed.get(path)
        assert resp.status_code == 401, path
        assert resp.headers["content-type"] == "application/json"
        assert closed.get(path, headers=basic(upload_token)).status_code == 200
    spec = closed.get("/api/v1/openapi.json", headers=bearer(upload_token)).json()
    assert "/api/v1/runs" in spec["paths"]
    page = closed.get("/docs", headers=basic(upload_token)).text
    assert "/api/v1/openapi.json" in page


def test_open_reads_keep_docs_open(client: TestClient) -> None:
    assert client.get("/docs").status_code == 200
    assert client.get("/api/v1/openapi.json").status_code == 200


def test_last_used_at_is_recorded_at_most_once_a_minute(
    closed: TestClient, store: Store, upload_token: str
) -> None:
    (before,) = store.tokens.list_tokens()
    assert before.last_used_at is None
    assert closed.get("/api/v1/runs", headers=basic(upload_token)).status_code == 200
    (first,) = store.tokens.list_tokens()
    assert first.last_used_at is not None
    for _ in range(5):
        closed.get("/api/v1/runs", headers=bearer(upload_token))
    (later,) = store.tokens.list_tokens()
    assert later.last_used_at == first.last_used_at  # throttled: reads are not writes
    # a second process (a fresh repository) still leaves a recent stamp alone
    assert store.tokens.record_use(first.token_id) is False


def test_failed_authentication_is_rate_limited_per_client(
    closed: TestClient, upload_token: str
) -> None:
    for _ in range(10):  # no credential is not a guess: never counted
        assert closed.get("/api/v1/runs").status_code == 401
    for _ in range(5):
        assert closed.get("/api/v1/runs", headers=bearer("mdt_guess")).status_code == 401
    resp = closed.get("/api/v1/runs", headers=bearer("mdt_guess"))
    assert resp.status_code == 429
    assert 1 <= int(resp.headers["retry-after"]) <= 60
    assert resp.json()["detail"][0]["type"] == "too_many_failures"
    # uploads (write auth) share the limit of that credential
    resp = closed.post("/api/v1/runs", content=b"{}", headers=bearer("mdt_guess"))
    assert resp.status_code == 429
    # the right token from the same address is never held up by those failures
    assert closed.get("/api/v1/runs", headers=bearer(upload_token)).status_code == 200


def test_failures_with_a_valid_tokens_prefix_do_not_lock_it_out(
    closed: TestClient, upload_token: str
) -> None:
    assert closed.get("/api/v1/runs", headers=bearer(upload_token)).status_code == 200
    forged = upload_token[:12] + "x" * (len(upload_token) - 12)  # someone knows the prefix
    for _ in range(6):
        closed.get("/api/v1/runs", headers=bearer(forged))
    assert closed.get("/api/v1/runs", headers=bearer(forged)).status_code == 429
    assert closed.get("/api/v1/runs", headers=bearer(upload_token)).status_code == 200


def test_limiter_window_slides_and_forgets_old_failures() -> None:
    limiter = AuthFailureLimiter(per_minute=3, max_clients=2)
    for t in (0.0, 1.0, 2.0):
        limiter.record_failure("a", now=t)
    assert limiter.retry_after("a", now=2.5) == 58
    assert limiter.retry_after("a", now=60.5) is None  # the first failure left the window
    assert limiter.retry_after("b", now=3.0) is None
    limiter.record_failure("b", now=3.0)
    limiter.record_failure("c", now=3.0)  # a third client evicts the oldest entry
    assert limiter.retry_after("a", now=3.0) is None


def test_closed_dashboard_takes_basic_and_limits_failures(
    settings: Settings, store: Store, upload_token: str
) -> None:
    dash_settings = settings.model_copy(
        update={
            "read_requires_token": True,
            "enable_dashboard": True,
            "warm_cache": False,
            "auth_failures_per_minute": 3,
        }
    )
    with TestClient(create_app(dash_settings, store=store)) as client:
        assert client.get("/").status_code == 401
        assert client.get("/").headers["www-authenticate"].startswith("Basic")
        assert client.get("/", headers=basic(upload_token)).status_code == 200
        assert client.get("/api/v1/nope", headers=basic(upload_token)).status_code == 404
        for _ in range(3):
            client.get("/", headers=basic("mdt_bad"))
        resp = client.get("/", headers=basic("mdt_bad"))
        assert resp.status_code == 429 and "retry-after" in resp.headers
        # the valid token from the same address still opens the dashboard
        assert client.get("/", headers=basic(upload_token)).status_code == 200
