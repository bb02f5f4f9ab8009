"""GET /api/v1/predictions and /predictions/validation: the service's answers over HTTP
(parity), measured vs predicted said apart, unknown cells refused with the parameter."""

from __future__ import annotations

from fastapi.testclient import TestClient

from db.store import Store
from service import predictions as S
from service import predictions_shape as X
from service.frames import DashData
from tests.factories import prediction_frames as F

CELL = {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"}


def test_prediction_between_counts_equals_the_service(client: TestClient, store: Store) -> None:
    F.seed_demo_cell(store)
    params = {**CELL, "num_tokens": 3000, "world_size": 8}
    resp = client.get("/api/v1/predictions", params=params)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    want = S.prediction(DashData(store), "deepseek_v4_pro", "GB300", "NVFP4", 3000, 8)
    assert body == want
    assert body["kind"] == "predicted" and body["pick"] == body["items"][0]["config"]
    assert body["verdict"] in ("deploy", "tie: either", "measure first")
    assert body["below"]["num_tokens"] == 2048 and body["above"]["num_tokens"] == 4096
    first = body["items"][0]
    assert first["lo_ms"] <= first["score_ms"] <= first["hi_ms"]
    assert abs(sum(r["p_fastest"] for r in body["items"]) - 1.0) < 1e-9


def test_a_measured_count_is_said_to_be_measured(client: TestClient, store: Store) -> None:
    F.seed_demo_cell(store)
    body = client.get("/api/v1/predictions", params={**CELL, "num_tokens": 2048, "world_size": 8})
    assert body.json()["kind"] == "measured" and body.json()["verdict"] == "deploy"
    assert {r["kind"] for r in body.json()["items"]} == {"measured"}


def test_unknown_cell_and_world_size_are_404_naming_the_parameter(
    client: TestClient, store: Store
) -> None:
    F.seed_demo_cell(store)
    other = client.get(
        "/api/v1/predictions", params={**CELL, "model": "llama", "num_tokens": 8, "world_size": 8}
    )
    assert other.status_code == 404 and other.json()["detail"][0]["loc"] == ["query", "model"]
    ws = client.get("/api/v1/predictions", params={**CELL, "num_tokens": 8, "world_size": 64})
    assert ws.status_code == 404 and ws.json()["detail"][0]["loc"] == ["query", "world_size"]
    bad = client.get("/api/v1/predictions", params={**CELL, "num_tokens": 0, "world_size": 8})
    assert bad.status_code == 422


def test_validation_equals_the_service(client: TestClient, store: Store) -> None:
    F.seed_demo_cell(store)
    resp = client.get("/api/v1/predictions/validation", params=CELL)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body == S.validation(DashData(store), "deepseek_v4_pro", "GB300", "NVFP4")
    summary = body["summary"]
    assert summary["n_queries"] == len(body["items"]) >= 14
    assert summary["predicted"]["worst_regret_pct"] <= 10.0 and summary["coverage"] >= 0.8
    nxt = body["measure_next"]
    assert 0 < len(nxt) <= 10 and all("bench_moe" in r["command"] for r in nxt)
    regrets = [r["expected_regret_pct"] for r in nxt]
    assert regrets == sorted(regrets, reverse=True)


def test_a_world_size_not_stored_is_answered_by_the_shape_model(
    client: TestClient, store: Store
) -> None:
    F.seed_demo_cell(store, world_sizes=(4, 16))
    params = {**CELL, "num_tokens": 512, "world_size": 8}
    resp = client.get("/api/v1/predictions", params=params)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body == S.prediction(DashData(store), "deepseek_v4_pro", "GB300", "NVFP4", 512, 8)
    assert body["kind"] == "predicted" and body["source"] == "shape model"
    assert "world size 8 not stored" in body["notes"][0]
    first = body["items"][0]
    assert first["config"] == body["pick"] and first["moe_ep_size"] in (8, 1)
    assert first["lo_ms"] <= first["score_ms"] <= first["hi_ms"]


def test_a_model_given_by_its_shape(client: TestClient, store: Store) -> None:
    F.seed_demo_cell(store, world_sizes=(4, 8))
    shape = {"num_experts": 256, "top_k": 8, "hidden_size": 6144, "intermediate_size": 2048}
    params = {"hardware": "GB300", "quant": "NVFP4", **shape, "num_tokens": 300, "world_size": 8}
    resp = client.get("/api/v1/predictions/shape", params=params)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    want = X.shape_prediction(DashData(store), "GB300", "NVFP4", (256, 8, 6144, 2048), 8, 300)
    assert body == want and body["shape"] == shape and body["source"] == "shape model"
    assert body["items"] and body["pick"] == body["items"][0]["config"]
    # the bench_moe command measuring it: glm_5's shape is a bench_moe preset
    measure = body["measure"]
    assert measure["preset"] == "glm_5" and measure["model_args"] == "--model glm_5"
    assert "--model glm_5" in measure["command"] and "--world_size 8" in measure["command"]
    assert "--balanced_total_num_tokens 300 " in measure["command"]
    custom = client.get("/api/v1/predictions/shape", params={**params, "top_k": 10})
    assert custom.status_code == 200, custom.text
    assert custom.json()["measure"]["preset"] is None
    assert "--num_experts 256 --top_k 10" in custom.json()["measure"]["command"]
    assert "--routing_method RENORMALIZE" in custom.json()["measure"]["command"]
    other = client.get("/api/v1/predictions/shape", params={**params, "hardware": "H200"})
    assert other.status_code == 404 and other.json()["detail"][0]["loc"] == ["query", "hardware"]
    assert client.get("/api/v1/predictions/shape", params={**params, "top_k": 0}).status_code == 422


def test_neighbours_with_different_winners_come_with_the_crossover_and_a_command(
    client: TestClient, store: Store
) -> None:
    F.seed_demo_cell(store)
    found = 0
    for tokens in (3, 6, 12, 24, 48, 96, 192, 384, 768, 1536, 3072, 6144, 12288, 24576):
        body = client.get(
            "/api/v1/predictions", params={**CELL, "num_tokens": tokens, "world_size": 8}
        ).json()
        below, above, split = body["below"], body["above"], body["split"]
        if below["best"] == above["best"]:
            assert split is None
            continue
        found += 1
        assert split["below"]["best"] == below["best"] and split["above"]["best"] == above["best"]
        assert split["below"]["num_tokens"] < tokens < split["above"]["num_tokens"]
        cross = split["crossover_tokens"]
        assert cross is None or below["num_tokens"] <= cross <= above["num_tokens"]
        assert "bench_moe" in split["command"] and f" {tokens} " in split["command"]
    assert found >= 1
