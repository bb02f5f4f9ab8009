"""The Run page: raw download named for what it holds, relative file names, grid sort
and filter kept in the URL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from analysis import columns as C
from dashboard.app import create_dash
from dashboard.pages import run
from db.store import Store
from ingest.detect import parse_upload
from ingest.records import UploadMeta
from service.frames import DashData
from tests.factories.dashboard import by_id, by_testid, callback, seed_store, text, walk

DATAJS = Path(__file__).resolve().parents[1] / "fixtures" / "dashboard" / "data.js"
SERVER_PATH = "/srv/moedash/secret-checkout/nvidia/data.js"


@pytest.fixture
def seeded(store: Store) -> tuple[DashData, dict[str, int]]:
    ids = seed_store(store)
    raw = DATAJS.read_bytes()
    meta = UploadMeta(filename=SERVER_PATH)
    got = store.ingest(parse_upload(raw, meta), raw, meta)
    ids["dashboard"] = got.runs[0].run_id
    return DashData(store, version_ttl=0.0), ids


def test_dashboard_run_offers_its_own_rows_and_bench_moe_run_its_upload(seeded: Any) -> None:
    data, ids = seeded
    page = run.layout(data, id=str(ids["dashboard"]))
    link = by_id(page, "run-raw-link")
    assert link.href == f"/api/v1/runs/{ids['dashboard']}/raw"
    assert link.children == "Download this run's rows (CSV)"
    assert "several runs" in text(page)
    page = run.layout(data, id=str(ids["known"]))
    assert by_id(page, "run-raw-link").children == "Download the raw upload"


def test_file_names_are_shown_without_server_paths(seeded: Any) -> None:
    data, ids = seeded
    page = run.layout(data, id=str(ids["dashboard"]))
    shown = text(by_testid(page, "run-meta"))
    assert "data.js" in shown and "/srv" not in shown and "secret-checkout" not in shown
    assert run.run_metadata({"filename": "C:\\Users\\me\\out\\r.json"})["filename"] == "r.json"
    csv_meta = run.run_metadata({"filename": "/home/ci/csv/glm_5/NVFP4/B300.csv"})
    assert csv_meta["filename"] == "glm_5/NVFP4/B300.csv"  # a dashboard CSV's identity


def _grid(box: Any) -> Any:
    return next(c for c in walk(box) if getattr(c, "id", None) == "run-grid")


def test_candidate_grid_sort_and_filter_round_trip_through_the_url(seeded: Any) -> None:
    data, ids = seeded
    app = create_dash(data)
    to_state = callback(app, "run-gridstate.data")
    model = {C.BACKEND: {"filterType": "text", "type": "equals", "filter": "TRTLLM"}}
    stored = to_state(
        [{"colId": C.SCORE_MS, "sort": "desc", "sortIndex": 0}, {"colId": "x", "sort": "asc"}],
        model,
        None,
    )
    assert stored == {"sort": [[C.SCORE_MS, "desc"]], "filter": model}
    # a just-mounted grid reports its filter first: the held sort stays
    assert to_state(None, {}, stored) == {"sort": [[C.SCORE_MS, "desc"]], "filter": {}}
    search = callback(app, "run-url.search")("failed", None, stored, ids["known"])
    query = parse_qs(search[1:])
    assert query["sort"] == [f"{C.SCORE_MS}:desc"] and query["status"] == ["failed"]
    assert json.loads(query["filter"][0]) == model
    # reload: the layout keeps the URL's state, the grid is drawn with it
    page = run.layout(data, **{k: v[0] for k, v in query.items()})
    kept = by_id(page, "run-gridstate").data
    assert kept == stored
    box, _ = run.update_grid(data, ids["known"], "all", kept)
    grid = _grid(box)
    score = next(d for d in grid.columnDefs if d["field"] == C.SCORE_MS)
    assert score["sort"] == "desc" and score["sortIndex"] == 0
    assert grid.filterModel == model
    plain, _ = run.update_grid(data, ids["known"], "all")
    assert all("sort" not in d for d in _grid(plain).columnDefs)
