"""POST /api/v1/runs: a retry is a 200 with a sighting, never a 409; the same
measurements in other bytes follow one rule; real contradictions are a 409 naming the
field. Through the real ASGI app, on DuckDB and (marker postgres) PostgreSQL."""

from __future__ import annotations

from fastapi.testclient import TestClient

from db.store import Store
from tests.factories import EXAMPLE
from tests.factories import upload_reports as R
from tests.factories.upload_reports import post


def test_retry_with_a_new_ci_url_is_200_and_a_sighting(
    client: TestClient, upload_token: str, store: Store
) -> None:
    first = post(client, upload_token, EXAMPLE.read_bytes(), ci_url="https://ci/job/1")
    assert first.status_code == 201, first.text
    assert first.json()["sighting"] is None and first.json()["regressions"] == []
    run_id = first.json()["run_ids"][0]
    again = post(
        client, upload_token, EXAMPLE.read_bytes(), ci_url="https://ci/job/2", notes="retry 1"
    )
    assert again.status_code == 200, again.text
    body = again.json()
    assert body["already_existed"] is True and body["same_measurements_other_bytes"] is False
    assert body["run_ids"] == [run_id] and body["errors"] == [] and body["regressions"] == []
    assert body["sighting"]["n_seen"] == 1
    post(client, upload_token, EXAMPLE.read_bytes(), ci_url="https://ci/job/2", notes="retry 1")
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["ci_url"] == "https://ci/job/1"  # what the first upload said
    (seen,) = run["sightings"]
    assert (seen["ci_url"], seen["notes"], seen["n_seen"], seen["uploaded_by"]) == (
        "https://ci/job/2",
        "retry 1",
        2,
        "ci",
    )
    assert store.table_counts()["uploads"] == 1


def test_same_bytes_with_another_version_is_409(client: TestClient, upload_token: str) -> None:
    post(client, upload_token, EXAMPLE.read_bytes())
    resp = post(client, upload_token, EXAMPLE.read_bytes(), trtllm_version="v1.3.0rc27")
    assert resp.status_code == 409
    detail = resp.json()["detail"][0]
    assert detail["loc"] == ["query", "trtllm_version"] and "v1.3.0rc26" in detail["msg"]


def test_reserialised_report_is_the_same_measurements(
    client: TestClient, upload_token: str, store: Store
) -> None:
    first = post(client, upload_token, EXAMPLE.read_bytes()).json()
    resp = post(client, upload_token, R.reserialised(), ci_url="https://ci/job/3")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["already_existed"] and body["same_measurements_other_bytes"]
    assert body["stored_upload"] == {"upload_id": first["upload_id"], "sha256": first["sha256"]}
    assert body["sha256"] != first["sha256"] and body["differing_fields"] == []
    assert body["run_ids"] == first["run_ids"]
    (seen,) = client.get(f"/api/v1/runs/{first['run_ids'][0]}").json()["sightings"]
    assert seen["sha256"] == body["sha256"] and seen["bytes_kept"] is True
    assert seen["ci_url"] == "https://ci/job/3" and seen["same_bytes"] is False
    assert store.table_counts()["runs"] == 1


def test_extra_top_level_key_is_reported_not_dropped(client: TestClient, upload_token: str) -> None:
    post(client, upload_token, EXAMPLE.read_bytes())
    resp = post(client, upload_token, R.with_extra_key())
    assert resp.status_code == 200, resp.text
    assert resp.json()["same_measurements_other_bytes"] is True
    assert resp.json()["differing_fields"] == ["extra_json"]


def test_same_candidates_with_another_ranking_is_409(
    client: TestClient, upload_token: str, store: Store
) -> None:
    post(client, upload_token, EXAMPLE.read_bytes())
    before = store.table_counts()
    resp = post(client, upload_token, R.with_other_ranking())
    assert resp.status_code == 409, resp.text
    detail = resp.json()["detail"][0]
    assert detail["loc"] == ["body", "rankings"] and "run 1" in detail["msg"]
    assert store.table_counts() == before


def test_changed_scores_are_a_new_run(client: TestClient, upload_token: str) -> None:
    post(client, upload_token, EXAMPLE.read_bytes())
    resp = post(client, upload_token, R.slower(1.01))
    assert resp.status_code == 201
    assert resp.json()["already_existed"] is False and resp.json()["run_ids"] == [2]


def test_the_bytes_of_every_sighting_can_be_downloaded(
    client: TestClient, upload_token: str
) -> None:
    run_id = post(client, upload_token, EXAMPLE.read_bytes()).json()["run_ids"][0]
    post(client, upload_token, R.reserialised())  # other bytes
    post(client, upload_token, EXAMPLE.read_bytes(), ci_url="https://ci/job/4")  # same bytes
    other, same = client.get(f"/api/v1/runs/{run_id}").json()["sightings"]
    got = client.get(f"/api/v1/runs/{run_id}/sightings/{other['sighting_id']}/raw")
    assert got.status_code == 200 and got.content == R.reserialised()  # lossless
    got = client.get(f"/api/v1/runs/{run_id}/sightings/{same['sighting_id']}/raw")
    assert got.status_code == 200 and got.content == EXAMPLE.read_bytes()
    missing = client.get(f"/api/v1/runs/{run_id}/sightings/999/raw")
    assert missing.status_code == 404
    assert missing.json()["detail"][0]["loc"] == ["path", "sighting_id"]
    no_run = client.get(f"/api/v1/runs/999/sightings/{other['sighting_id']}/raw")
    assert no_run.json()["detail"][0]["loc"] == ["path", "run_id"]
