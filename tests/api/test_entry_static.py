"""The entry layer's static answers: /static is gzipped (each file compressed once) and
carries Cache-Control -- a versioned URL (``?v=``) immutable for a year, anything else
revalidated by ETag; Dash's fingerprinted bundles keep their own header."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.entry_routes import IMMUTABLE, REVALIDATE
from moedash.app import create_app
from moedash.settings import Settings

REPO = Path(__file__).resolve().parents[2]
CSS = REPO / "static" / "moedash.css"
GZ = {"Accept-Encoding": "gzip"}


@pytest.fixture
def app_client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(database_url=f"duckdb:///{tmp_path / 's.duckdb'}", warm_cache=False)
    with TestClient(create_app(settings)) as client:
        yield client


def test_static_css_is_gzipped_and_revalidated(app_client: TestClient) -> None:
    r = app_client.get("/static/moedash.css", headers=GZ)
    assert r.status_code == 200
    assert r.headers["content-encoding"] == "gzip"
    assert r.headers["cache-control"] == REVALIDATE.decode()
    assert "accept-encoding" in r.headers["vary"].lower()
    # the client decoded it: the bytes are the file's
    assert r.content == CSS.read_bytes()
    assert int(r.headers["content-length"]) < len(CSS.read_bytes())


def test_versioned_static_url_is_immutable(app_client: TestClient) -> None:
    r = app_client.get("/static/moedash.css?v=3", headers=GZ)
    assert r.headers["cache-control"] == IMMUTABLE.decode()
    assert "immutable" in r.headers["cache-control"]
    # "v=" without a value is not a version
    assert app_client.get("/static/moedash.css?v=").headers["cache-control"] == "no-cache"


def test_revalidation_answers_304_with_the_same_cache_control(app_client: TestClient) -> None:
    first = app_client.get("/static/moedash.css", headers=GZ)
    again = app_client.get(
        "/static/moedash.css", headers={**GZ, "If-None-Match": first.headers["etag"]}
    )
    assert again.status_code == 304
    assert again.headers["cache-control"] == REVALIDATE.decode()


def test_no_gzip_when_the_client_does_not_ask(app_client: TestClient) -> None:
    r = app_client.get("/static/moedash.css", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in r.headers
    assert r.content == CSS.read_bytes()


def test_a_missing_static_file_gets_no_cache_header(app_client: TestClient) -> None:
    r = app_client.get("/static/nope.js?v=1")
    assert r.status_code == 404
    assert "cache-control" not in r.headers


def test_dash_bundles_keep_their_own_cache_control_and_are_gzipped(
    app_client: TestClient,
) -> None:
    page = app_client.get("/", headers=GZ).text
    bundle = re.search(r'src="(/_dash-component-suites/dash/dcc/[^"]+\.js)"', page)
    assert bundle, page[:2000]
    r = app_client.get(bundle.group(1), headers=GZ)
    assert r.status_code == 200
    assert r.headers["content-encoding"] == "gzip"
    assert r.headers["cache-control"] == "max-age=31536000"  # Dash's, for fingerprinted URLs
    raw = app_client.get(bundle.group(1), headers={"Accept-Encoding": "identity"}).content
    assert gzip.compress(raw)[:2] == b"\x1f\x8b" and r.content == raw
