"""Parity: the /routing page and GET /api/v1/routing-skew give the same comparison --
the page's grid rows (registered Dash callback) against the API's items, and the same
advice verdicts -- each with its own read path over the same store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dashboard.app import create_dash
from dashboard.pages.routing_view import COMPARE_COLUMNS
from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from service.frames import DashData
from tests.factories.dashboard import walk
from tests.factories.routing import CELL_KEY, SKEWED, WORKLOAD, seed_skew


@pytest.fixture
def seeded(store: Store) -> Store:
    seed_skew(store)
    return store


@pytest.fixture
def api(db_url: str, seeded: Store) -> Iterator[TestClient]:
    settings = Settings(database_url=db_url, enable_dashboard=False)
    with TestClient(create_app(settings, store=seeded)) as client:
        yield client


def _page(seeded: Store, workload: str, balanced: str | None, skewed: str | None) -> Any:
    app = create_dash(DashData(seeded, version_ttl=0.0))
    entry = next(v for k, v in app.callback_map.items() if "routing-body.children" in k)
    body, _ = entry["callback"].__wrapped__(CELL_KEY, workload, balanced, skewed, "median")
    return body


@pytest.mark.parametrize(
    ("workload", "params", "balanced", "skewed"),
    [
        ("16|decode|dp|256", {}, None, None),
        ("16|decode|dp|4096", {"num_tokens": 4096}, None, None),
        ("16|prefill|dp|16384", {"phase": "prefill", "num_tokens": 16384}, None, None),
        ("16|decode|dp|256", {}, SKEWED, "balanced"),
    ],
)
def test_page_grid_and_advice_are_the_api_answer(
    api: TestClient,
    seeded: Store,
    workload: str,
    params: dict[str, Any],
    balanced: str | None,
    skewed: str | None,
) -> None:
    query = {**WORKLOAD, **params}
    if balanced:
        query |= {"balanced": balanced, "skewed": skewed}
    body = api.get("/api/v1/routing-skew", params=query).json()
    page = _page(seeded, workload, balanced, skewed)
    grid = next(c for c in walk(page) if getattr(c, "id", None) == "routing-grid")
    cols = [c for c in COMPARE_COLUMNS if c in body["items"][0]]
    assert [[r[c] for c in cols] for r in grid.rowData] == [
        [r[c] for c in cols] for r in body["items"]
    ]
    for advice in body["advice"]:
        card = next(
            c
            for c in walk(page)
            if getattr(c, "data-testid", None) == f"routing-advice-{advice['technique']}"
        )
        shown = [c for c in walk(card) if isinstance(c, str)]
        assert advice["verdict"] in shown and advice["summary"] in shown
