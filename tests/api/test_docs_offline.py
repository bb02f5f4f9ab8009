"""/docs loads only same-origin assets (issue 13: nothing leaves the machine)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.entry_routes import DOCS_ASSETS
from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings

# src="..." / href="..." / url: '...' in the generated pages
_URLS = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\s*:\s*["']([^"']+)["']""")


@pytest.fixture
def client(settings: Settings, store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(settings, store=store)) as c:
        yield c


def _urls(html: str) -> list[str]:
    return [a or b for a, b in _URLS.findall(html)]


def test_docs_page_references_only_local_assets(client: TestClient) -> None:
    r = client.get("/docs")
    assert r.status_code == 200
    urls = _urls(r.text)
    assert urls, "the page names its assets"
    assert all(u.startswith("/") and not u.startswith("//") for u in urls), urls
    assert "cdn.jsdelivr" not in r.text and "fastapi.tiangolo.com" not in r.text
    for url in urls:
        got = client.get(url)
        assert got.status_code == 200, url
        assert len(got.content) > 0


def test_swagger_validator_badge_is_off_and_there_is_no_cdn_redoc(client: TestClient) -> None:
    assert '"validatorUrl": null' in client.get("/docs").text
    assert client.get("/redoc").status_code == 404  # ReDoc's bundle loads a CDN logo


def test_assets_are_the_bundled_builds(client: TestClient) -> None:
    js = client.get(f"{DOCS_ASSETS}/swagger-ui-bundle.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert len(js.content) > 500_000  # the full Swagger UI bundle, not a stub
    assert client.get(f"{DOCS_ASSETS}/nothing.js").status_code == 404


def test_closed_reads_close_the_docs_but_not_the_assets(settings: Settings, store: Store) -> None:
    closed = settings.model_copy(update={"read_requires_token": True})
    with TestClient(create_app(closed, store=store)) as c:
        assert c.get("/docs").status_code == 401
        assert c.get("/api/v1/openapi.json").status_code == 401
        assert c.get(f"{DOCS_ASSETS}/swagger-ui.css").status_code == 200
