"""Response models document answers; they never trim them: a field the model does not
list is still served (clients read more than the stable part), and the one answer
FastAPI validates itself (/health) keeps its fields as the handler built them."""

from __future__ import annotations

from fastapi.testclient import TestClient

from api.schemas.runs import CandidateRow, Health, Run
from db.store import Store
from tests.factories.dashboard import seed_store


def test_answers_keep_fields_their_models_do_not_list(client: TestClient, store: Store) -> None:
    ids = seed_store(store)
    run = client.get(f"/api/v1/runs/{ids['known']}").json()
    assert {"device_name", "environment_json", "created_at", "uploaded_at"} <= (
        set(run) - set(Run.model_fields)
    )
    assert run["blocks"]["model"]["swiglu_limit"] == "Infinity"  # as stored, not coerced
    page = client.get(f"/api/v1/runs/{ids['known']}/candidates", params={"limit": 10}).json()
    unlisted = set(page["items"][0]) - set(CandidateRow.model_fields)
    assert {"iter_median_ms", "per_rank_json", "skip_reason"} <= unlisted
    failed = [c for c in page["items"] if c["status"] == "failed"]
    assert failed and failed[0]["score_ms"] is None  # a missing score stays null


def test_health_answer_is_the_handlers_dict(client: TestClient, store: Store) -> None:
    body = client.get("/api/v1/health").json()
    assert body == {
        "status": "ok",
        "database": store.dialect,
        "schema_version": store.schema_version(),
        "parse_pool": None,
    }
    assert Health.model_validate(body).model_dump() == body
