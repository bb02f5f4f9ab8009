"""Fixtures the page-vs-API parity tests share. A test module supplies ``seeded`` (the
store it seeds, module-scoped over ``module_store``: the tests only read it); ``api`` and
``page`` then read that store once per module, each through its own read path
(``DashData``), so a shared cache cannot hide a difference. A module's own ``api`` or
``page`` fixture overrides these."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dashboard.app import create_dash
from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from service.frames import DashData


@pytest.fixture(scope="module")
def api(module_db_url: str, seeded: Store) -> Iterator[TestClient]:
    """The real app (API only) over ``seeded`` through Starlette's test client."""
    settings = Settings(database_url=module_db_url, enable_dashboard=False)
    with TestClient(create_app(settings, store=seeded)) as client:
        yield client


@pytest.fixture(scope="module")
def page(seeded: Store) -> Any:
    """The Dash app over ``seeded``, its store version re-read on every call."""
    return create_dash(DashData(seeded, version_ttl=0.0))
