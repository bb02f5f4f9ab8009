"""Shared fixtures: real databases only (a DuckDB file per test, a PostgreSQL schema per
test on the server named by MOEDASH_TEST_PG_URL), the app over them, and Chromium.

Nothing here reads ``../shared``: the default suite is self-contained (our fixtures are
in tests/fixtures/); only the real-data tier (tests/realdata/) reads third-party data."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from hypothesis import settings as hypothesis_settings

from db.store import Store, open_store
from moedash.app import create_app
from moedash.settings import Settings
from tests.factories.stores import DuckDBTemplates, PgTemplate, with_schema

REPO = Path(__file__).resolve().parent.parent

# Property tests: random examples on a developer's machine (the default profile), a fixed,
# reproducible set in CI (`HYPOTHESIS_PROFILE=ci`, set by .ci/run) so that a landing
# decision never rests on the draw. `make fuzz` runs them again with fresh random seeds.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
hypothesis_settings.register_profile("fuzz", print_blob=True)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
# The predictions validation (10-30 s of refits per cell) is not computed by every test
# app's warm-up and post-upload recomputation (served apps inherit this too); the tests of
# that warm-up turn it on (tests/service/test_predictions_shared.py).
os.environ.setdefault("MOEDASH_WARM_PREDICTIONS", "false")
PG_URL = os.environ.get("MOEDASH_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(autouse=True)
def _no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist's workers set COLUMNS=80 and LINES=24; the CLI reads COLUMNS as the
    width a user asked for. Tests see the environment a plain run (or CI's shell) has."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh, empty schema (dropped afterwards)."""
    yield from _pg_schema()


def _pg_schema() -> Iterator[str]:
    name = "t_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(PG_URL.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {name}")
    try:
        yield with_schema(PG_URL, name)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {name} CASCADE")
        admin.dispose()


@pytest.fixture(scope="session")
def duckdb_templates(tmp_path_factory: pytest.TempPathFactory) -> DuckDBTemplates:
    """Migrated (optionally seeded) DuckDB files built once per test process and copied
    per test (tests/factories/stores.py): each test still gets its own database file."""
    return DuckDBTemplates(tmp_path_factory.mktemp("duckdb-templates"))


_PG_TEMPLATE = PgTemplate(PG_URL)  # built on first use, once per test process


def _open_pg(url: str) -> Store:
    """The store on a fresh PostgreSQL schema, at the schema head: the migrated template
    replayed into it (tests/factories/stores.py), else migrated here."""
    filled = _PG_TEMPLATE.fill(url)
    return open_store(url, upgrade=not filled)


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database URL: a DuckDB file in tmp_path (not created yet), or a
    fresh PostgreSQL schema. The ``store`` fixture fills it (DuckDB: with a copy of the
    migrated template); a test that builds its own schema uses the URL as it is."""
    if request.param == "duckdb":
        return f"duckdb:///{tmp_path / 'store.duckdb'}"
    return str(request.getfixturevalue("pg_schema_url"))


@pytest.fixture(
    scope="module", params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def module_db_url(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    duckdb_templates: DuckDBTemplates,
) -> Iterator[str]:
    """A fresh database URL shared by one module's tests: for modules whose tests only
    read what a module-scoped fixture seeded (seeding and cold caches once, not per test)."""
    if request.param == "duckdb":
        yield duckdb_templates.copy(tmp_path_factory.mktemp("module") / "store.duckdb")
        return
    yield from _pg_schema()


@pytest.fixture(scope="module")
def module_store(module_db_url: str) -> Iterator[Store]:
    """The store on :func:`module_db_url` (read-only by the tests that share it)."""
    if module_db_url.startswith("duckdb"):
        s = open_store(module_db_url, upgrade=False)
    else:
        s = _open_pg(module_db_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def settings(db_url: str) -> Settings:
    """App settings on the test database (dashboard off, a small upload limit)."""
    return Settings(database_url=db_url, enable_dashboard=False, max_upload_bytes=2_000_000)


@pytest.fixture
def client(settings: Settings, store: Store) -> Iterator[TestClient]:
    """The real ASGI app over ``store``, driven over HTTP by Starlette's test client."""
    with TestClient(create_app(settings, store=store)) as c:
        yield c


@pytest.fixture
def upload_token(store: Store) -> str:
    return store.tokens.create_token("ci", ["upload"])[1]


@pytest.fixture
def store(db_url: str, request: pytest.FixtureRequest) -> Iterator[Store]:
    """The store on ``db_url``: DuckDB gets a copy of the migrated template (at the head
    already, so no upgrade runs), a PostgreSQL schema the migrated template's script."""
    if db_url.startswith("duckdb:///"):
        path = Path(db_url.removeprefix("duckdb:///"))
        if not path.exists():
            templates: DuckDBTemplates = request.getfixturevalue("duckdb_templates")
            templates.copy(path)
        s = open_store(db_url, upgrade=False)
    else:
        s = _open_pg(db_url)
    try:
        yield s
    finally:
        s.close()


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's headless Chromium driven by Playwright. Missing Chromium is a failure,
    not a skip: `make test` and CI install it (`make browser-deps`)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: run `make browser-deps` (Debian chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()
