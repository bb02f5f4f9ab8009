"""The HTTP API through the real ASGI app, on DuckDB and (marker postgres) PostgreSQL."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from tests.factories import EXAMPLE
from tests.factories.hostile import BAD_UPLOAD_META, GOOD_UPLOAD_META


@pytest.fixture
def admin_token(store: Store) -> str:
    return store.tokens.create_token("admin", ["admin"])[1]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def example_bytes() -> bytes:
    return EXAMPLE.read_bytes()


def post_example(client: TestClient, token: str, **params: str) -> object:
    return client.post(
        "/api/v1/runs",
        content=example_bytes(),
        params={"trtllm_version": "v1.3.0rc26", **params},
        headers={**auth(token), "Content-Type": "application/json"},
    )


def test_health_and_openapi(client: TestClient) -> None:
    body = client.get("/api/v1/health").json()
    assert body["status"] == "ok" and body["schema_version"] >= 2
    assert body["parse_pool"] is None  # no pool: uploads parse in the server
    spec = client.get("/api/v1/openapi.json").json()
    assert "/api/v1/runs" in spec["paths"]
    assert client.get("/docs").status_code == 200


def test_upload_list_get_candidates_raw(client: TestClient, upload_token: str) -> None:
    resp = post_example(client, upload_token, run_date="2026-09-13", notes="<script>x</script>")
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert body["already_existed"] is False and body["n_candidates"] == 12
    run_id = body["runs"][0]["run_id"]

    runs = client.get("/api/v1/runs").json()
    assert runs["total"] == 1 and runs["items"][0]["run_id"] == run_id
    assert runs["items"][0]["hardware"] == "B200"  # inferred from "NVIDIA B200"

    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["world_size"] == 4 and run["model"] == "kimi_k2"
    assert run["notes"] == "<script>x</script>"
    assert run["run_date"] == "2026-09-13"
    assert run["blocks"]["model"]["num_experts"] == 384

    failed = client.get(f"/api/v1/runs/{run_id}/candidates", params={"status": "failed"}).json()
    assert failed["total"] == 1
    assert failed["items"][0]["failure_category"] == "timed_phase_error"
    assert failed["items"][0]["skip_reason"].startswith("timed phase error: OutOfMemoryError")

    best = client.get(
        f"/api/v1/runs/{run_id}/candidates", params={"order": "score_ms", "limit": 1}
    ).json()
    scores = [
        c["score_ms"]
        for c in client.get(f"/api/v1/runs/{run_id}/candidates").json()["items"]
        if c["score_ms"] is not None
    ]
    assert best["items"][0]["score_ms"] == min(scores)

    raw = client.get(f"/api/v1/runs/{run_id}/raw")
    assert raw.status_code == 200 and raw.content == example_bytes()


def test_second_upload_says_it_existed(client: TestClient, upload_token: str, store: Store) -> None:
    first = post_example(client, upload_token).json()
    again = post_example(client, upload_token)
    assert again.status_code == 200
    assert again.json()["already_existed"] is True
    assert again.json()["runs"] == first["runs"]
    assert store.table_counts()["runs"] == 1


def test_multipart_upload_with_form_metadata(client: TestClient, upload_token: str) -> None:
    resp = client.post(
        "/api/v1/runs",
        files={"file": ("ds_v4_pro_ws4.json", example_bytes(), "application/json")},
        data={"hardware": "b200", "trtllm_version": "v1.3.0rc26", "ci_url": "https://ci/x/1"},
        headers=auth(upload_token),
    )
    assert resp.status_code == 201, resp.text
    run = client.get(resp.json()["runs"][0]["url"].split("testserver")[-1]).json()
    assert run["hardware"] == "B200" and run["ci_url"] == "https://ci/x/1"
    assert run["filename"] == "ds_v4_pro_ws4.json"


def test_auth_errors(client: TestClient, store: Store, upload_token: str) -> None:
    assert post_example(client, "mdt_wrong").status_code == 401
    no_token = client.post("/api/v1/runs", content=example_bytes())
    assert no_token.status_code == 401
    assert no_token.json()["detail"][0]["loc"] == ["header", "Authorization"]
    run_id = post_example(client, upload_token).json()["runs"][0]["run_id"]
    forbidden = client.delete(f"/api/v1/runs/{run_id}", headers=auth(upload_token))
    assert forbidden.status_code == 403
    assert "admin" in forbidden.json()["detail"][0]["msg"]
    store.tokens.revoke_token("ci")
    assert post_example(client, upload_token).status_code == 401


def test_admin_delete(
    client: TestClient, upload_token: str, admin_token: str, store: Store
) -> None:
    run_id = post_example(client, upload_token).json()["runs"][0]["run_id"]
    assert client.delete(f"/api/v1/runs/{run_id}", headers=auth(admin_token)).status_code == 204
    assert client.get(f"/api/v1/runs/{run_id}").status_code == 404
    missing = client.delete(f"/api/v1/runs/{run_id}", headers=auth(admin_token))
    assert missing.status_code == 404
    assert missing.json()["detail"][0]["loc"] == ["path", "run_id"]
    assert store.table_counts()["candidates"] == 0


def test_conflicting_metadata_is_409(client: TestClient, upload_token: str) -> None:
    post_example(client, upload_token)
    resp = post_example(client, upload_token, hardware="GB300")
    assert resp.status_code == 409
    assert resp.json()["detail"][0]["loc"] == ["query", "hardware"]


@pytest.mark.parametrize(
    ("params", "field"), [pytest.param(v, f, id=i) for i, v, f in BAD_UPLOAD_META]
)
def test_bad_metadata_is_422_naming_the_field(
    client: TestClient, upload_token: str, store: Store, params: dict[str, str], field: str
) -> None:
    # the same list tests/moedash/test_cli.py feeds to `moedash ingest` and `moedash upload`
    before = store.table_counts()
    resp = post_example(client, upload_token, **params)
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"][0]
    assert detail["loc"] == ["query", field]
    assert detail["msg"] and "should match pattern" not in detail["msg"]
    form = client.post(
        "/api/v1/runs",
        files={"file": ("example.json", example_bytes(), "application/json")},
        data=params,
        headers=auth(upload_token),
    )
    assert form.status_code == 422, form.text
    assert form.json()["detail"][0]["loc"] == ["form", field]
    assert form.json()["detail"][0]["msg"] == detail["msg"]  # one model, one message
    assert store.table_counts() == before


@pytest.mark.parametrize(
    ("params", "stored"), [pytest.param(v, s, id=i) for i, v, s in GOOD_UPLOAD_META]
)
def test_good_metadata_is_stored(
    client: TestClient, upload_token: str, params: dict[str, str], stored: dict[str, str]
) -> None:
    resp = post_example(client, upload_token, **params)
    assert resp.status_code == 201, resp.text
    run = client.get(f"/api/v1/runs/{resp.json()['runs'][0]['run_id']}").json()
    assert {k: run[k] for k in stored} == stored


def test_unknown_metadata_parameter_is_422(client: TestClient, upload_token: str) -> None:
    resp = post_example(client, upload_token, hardwre="GB300")  # a typo must not be dropped
    assert resp.status_code == 422
    assert resp.json()["detail"][0]["loc"] == ["query", "hardwre"]


def test_openapi_documents_the_metadata_limits(client: TestClient) -> None:
    spec = client.get("/api/v1/openapi.json").json()
    params = {p["name"]: p for p in spec["paths"]["/api/v1/runs"]["post"]["parameters"]}
    notes = next(s for s in params["notes"]["schema"]["anyOf"] if s.get("type") == "string")
    assert notes["maxLength"] == 4000
    dispatch = next(s for s in params["dispatch"]["schema"]["anyOf"] if "pattern" in s)
    assert ":" not in dispatch["pattern"]


def test_transport_errors(client: TestClient, upload_token: str, store: Store) -> None:
    before = store.table_counts()
    empty = client.post("/api/v1/runs", content=b"  ", headers=auth(upload_token))
    assert empty.status_code == 400
    xml = client.post(
        "/api/v1/runs",
        content=b"<xml/>",
        headers={**auth(upload_token), "Content-Type": "application/xml"},
    )
    assert xml.status_code == 415
    assert xml.json()["detail"][0]["loc"] == ["header", "Content-Type"]
    big = client.post(
        "/api/v1/runs",
        content=b"{" + b" " * 2_100_000 + b"}",
        headers={**auth(upload_token), "Content-Type": "application/json"},
    )
    assert big.status_code == 413
    assert "MOEDASH_MAX_UPLOAD_BYTES" in big.json()["detail"][0]["msg"]
    assert store.table_counts() == before


def test_bad_query_parameters_name_the_parameter(client: TestClient) -> None:
    resp = client.get("/api/v1/runs", params={"limit": 0})
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["query", "limit"]
    resp = client.get("/api/v1/runs/1/candidates", params={"order": "evil;--"})
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["query", "order"]
    assert client.get("/api/v1/runs/999").status_code == 404
    assert client.get("/api/v1/runs/abc").status_code == 422


def test_reads_can_be_closed(db_url: str, store: Store) -> None:
    settings = Settings(database_url=db_url, enable_dashboard=False, read_requires_token=True)
    secret = store.tokens.create_token("reader", ["upload"])[1]
    with TestClient(create_app(settings, store=store)) as c:
        assert c.get("/api/v1/runs").status_code == 401
        assert c.get("/api/v1/runs", headers=auth(secret)).status_code == 200
        assert c.get("/api/v1/health").status_code == 200


def test_hostile_inputs_rejected_and_database_unchanged(
    client: TestClient, upload_token: str, store: Store
) -> None:
    from tests.factories.hostile import HOSTILE_CASES

    post_example(client, upload_token)  # something in the DB to compare against
    before = store.table_counts()
    before_runs = client.get("/api/v1/runs").json()
    assert len(HOSTILE_CASES) >= 25
    for case_id, raw, status, field in HOSTILE_CASES:
        resp = client.post(
            "/api/v1/runs",
            content=raw,
            params={"hardware": "GB300"},
            headers={**auth(upload_token), "Content-Type": "application/json"},
        )
        assert resp.status_code == status, (case_id, resp.text)
        detail = resp.json()["detail"][0]
        assert field in ".".join(str(x) for x in detail["loc"]) + " " + detail["msg"], case_id
        assert detail["msg"]
    assert store.table_counts() == before
    assert client.get("/api/v1/runs").json() == before_runs
