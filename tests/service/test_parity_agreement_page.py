"""Parity: the /agreement page's rows are the rows of GET /api/v1/agreement?detail=true
with ``agrees`` false, for the same filters -- same workloads, same regret (%), same
picks. The page side is the registered Dash callback; the API side the real app over
the same store, each with its own read path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dashboard.app import create_dash
from dashboard.pages import agreement
from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from service.frames import DashData
from tests.factories.dashboard import seed_store, walk
from tests.factories.routing import seed_skew

KEY = (
    "model",
    "hardware",
    "quant",
    "world_size",
    "num_tokens",
    "dispatch",
    "attention_dp",
    "phase",
)
COMPARED = (
    "tree_backend",
    "tree_expected_comm",
    "best_backend",
    "best_comm",
    "best_score_ms",
    "pick_score_ms",
    "regret_pct",
    "best_run_id",
)


@pytest.fixture
def seeded(store: Store) -> Store:
    seed_store(store)
    seed_skew(store)
    return store


@pytest.fixture
def api(db_url: str, seeded: Store) -> Iterator[TestClient]:
    settings = Settings(database_url=db_url, enable_dashboard=False)
    with TestClient(create_app(settings, store=seeded)) as client:
        yield client


def _page_rows(seeded: Store, values: dict[str, Any]) -> list[dict[str, Any]]:
    app = create_dash(DashData(seeded, version_ttl=0.0))
    entry = next(v for k, v in app.callback_map.items() if "agreement-body.children" in k)
    # the controls, then the grid's held sort/filter (none)
    body, _ = entry["callback"].__wrapped__(*(values.get(k) for k in agreement._FILTERS), None)
    grid = next((c for c in walk(body) if getattr(c, "id", None) == "agreement-grid"), None)
    return [] if grid is None else list(grid.rowData)


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in KEY)


@pytest.mark.parametrize(
    ("values", "params"),
    [
        ({}, {}),
        ({"model": "kimi_k2", "dispatch": "all"}, {"model": "kimi_k2", "dispatch": "all"}),
        ({"hardware": "GB300", "phase": "decode"}, {"hardware": "GB300", "phase": "decode"}),
        ({"thresholds": "derived"}, {"thresholds": "derived"}),
        ({"repeats": "latest", "show": "all"}, {"repeats": "latest"}),
    ],
)
def test_page_rows_are_the_api_disagreements(
    api: TestClient, seeded: Store, values: dict[str, Any], params: dict[str, Any]
) -> None:
    page = {_key(r): r for r in _page_rows(seeded, values)}
    resp = api.get("/api/v1/agreement", params={**params, "detail": "true"})
    assert resp.status_code == 200
    show_all = values.get("show") == "all"
    items = [r for r in resp.json()["items"] if show_all or not r["agrees"]]
    expected = {_key(r): r for r in items}
    assert len(page) == len(items) and page.keys() == expected.keys() and page
    for key, row in expected.items():
        for col in COMPARED:
            want = pytest.approx(row[col]) if isinstance(row[col], float) else row[col]
            assert page[key][col] == want, (key, col)
        # regret in % is the API's fraction x 100
        if row["regret"] is not None:
            assert page[key]["regret_pct"] == pytest.approx(100 * row["regret"])


def test_page_agreement_pct_is_the_api_s_of_measured_picks(api: TestClient, seeded: Store) -> None:
    from service.agreement_view import disagreements
    from service.scope import Scope

    data = DashData(seeded, version_ttl=0.0)
    scope = Scope(model="kimi_k2", hardware="GB300", phase="decode")
    view = disagreements(data, scope)
    summary = api.get(
        "/api/v1/agreement", params={"model": "kimi_k2", "hardware": "GB300", "phase": "decode"}
    ).json()["items"]
    assert len(summary) == 1
    row = summary[0]
    # one vocabulary: % of the workloads whose pick was measured, on page and API
    assert (view.n_agree, view.n_compared) == (row["n_agree"], row["n_pick_measured"])
    if row["agreement_pct"] is None:
        assert view.n_compared == 0
    else:
        assert view.agreement_pct == pytest.approx(row["agreement_pct"])
