"""Questions that span more stored candidates than one answer reads are refused with a
422 that names the filter to add (the API's error envelope); the same question on one
cell is answered; long tables are cut at a size cap and say so."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from api import tables
from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from service.frames import DashData
from tests.factories import version_sweeps as V
from tests.factories.dashboard import seed_store

CELL = {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"}


@pytest.fixture
def client(db_url: str, store: Store) -> Iterator[TestClient]:
    """The app over two cells, its read path allowed 30 candidates per question
    without a cell (the kimi_k2 cell alone holds 40)."""
    seed_store(store)
    V.seed_versions(store)
    settings = Settings(database_url=db_url, enable_dashboard=False)
    app = create_app(settings, store=store)
    app.state.data = DashData(store, max_slice_rows=30)
    with TestClient(app) as c:
        yield c


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/pareto", {}),
        ("/api/v1/best", {}),
        ("/api/v1/history", {}),
        ("/api/v1/compare", {"base": V.RC27, "head": V.RC28}),
        ("/api/v1/best", {"hardware": "B300"}),
        ("/api/v1/thresholds", {}),
        ("/api/v1/thresholds/tree", {}),
    ],
)
def test_a_question_over_too_many_candidates_is_a_422_naming_the_filter(
    client: TestClient, path: str, params: dict[str, str]
) -> None:
    res = client.get(path, params=params)
    assert res.status_code == 422, res.text
    (err,) = res.json()["detail"]
    assert err["type"] == "too_broad" and err["loc"] == ["query", "model"]
    assert "add model" in err["msg"] and "model=" in err["msg"]


def test_the_same_questions_on_one_cell_are_answered(client: TestClient) -> None:
    # (the cell alone holds more than the 30 candidates a broad question may read)
    for path in ("/api/v1/pareto", "/api/v1/best", "/api/v1/history", "/api/v1/thresholds"):
        res = client.get(path, params=CELL)
        assert res.status_code == 200, (path, res.text)
        assert res.json()["items"]
    res = client.get("/api/v1/compare", params={**CELL, "base": V.RC27, "head": V.RC28})
    assert res.status_code == 200 and res.json()["items"]


def test_a_table_longer_than_the_cap_is_cut_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "MAX_ROWS", 3)
    frame = pd.DataFrame({"x": range(5)})
    body = tables.table_response(frame, "json", "t", {"a": 1})
    assert body.headers["X-Moedash-Truncated"] == "5"
    csv = tables.table_response(frame, "csv", "t", {})
    assert csv.body.decode().splitlines() == ["x", "0", "1", "2"]
    small = tables.table_response(frame.iloc[:3], "json", "t", {})
    assert "X-Moedash-Truncated" not in small.headers
