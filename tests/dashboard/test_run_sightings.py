"""The Run page lists the later arrivals of its upload (sightings), as the API does."""

from __future__ import annotations

from fastapi.testclient import TestClient

from dashboard.pages import run
from db.store import Store
from service.frames import DashData
from tests.api.test_upload_sightings import post
from tests.factories import EXAMPLE
from tests.factories.dashboard import HOSTILE, by_testid, walk


def _cells(component: object) -> list[list[str]]:
    rows = [c for c in walk(component) if getattr(c, "tag", None) == "tr"]
    return [["".join(cell.texts()) for cell in r.children] for r in rows[1:]]


def test_run_page_shows_each_sighting_with_its_ci_metadata(
    client: TestClient, upload_token: str, store: Store
) -> None:
    first = post(client, upload_token, EXAMPLE.read_bytes(), ci_url="https://ci/job/1")
    run_id = first.json()["run_ids"][0]
    page = run.layout(DashData(store, version_ttl=0.0), id=str(run_id))
    assert by_testid(page, "run-sightings") is None  # no later arrival yet
    for _ in range(2):
        post(client, upload_token, EXAMPLE.read_bytes(), ci_url="https://ci/job/2", notes=HOSTILE)
    page = run.layout(DashData(store, version_ttl=0.0), id=str(run_id))
    table = by_testid(page, "run-sightings")
    assert table is not None
    (row,) = _cells(table)
    api = client.get(f"/api/v1/runs/{run_id}").json()["sightings"][0]
    assert row[0] == f"{api['n_seen']}×" == "2×"
    assert row[3] == "the same bytes" and row[5] == "https://ci/job/2" and row[6] == HOSTILE
    html = table.to_plotly_json()["props"]["html"]
    assert "<script" not in html.lower() and "<img" not in html.lower()  # hostile text inert
