"""GET /api/v1/routing-skew and the candidate export through the real app (DuckDB and
PostgreSQL), over the skewed run beside the balanced one and the dashboard fixture."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from tests.factories.dashboard import seed_store
from tests.factories.exports import seed_awkward_exports
from tests.factories.routing import SKEWED, WORKLOAD, seed_skew

URL = "/api/v1/routing-skew"


@pytest.fixture
def seeded(db_url: str, store: Store) -> Iterator[tuple[TestClient, dict[str, int]]]:
    ids = {**seed_store(store), **seed_skew(store)}
    settings = Settings(database_url=db_url, enable_dashboard=False)
    with TestClient(create_app(settings, store=store)) as c:
        yield c, ids


def test_routing_skew_answers_ranks_slowdowns_and_advice(seeded: tuple) -> None:
    client, ids = seeded
    resp = client.get(URL, params=WORKLOAD)
    assert resp.status_code == 200
    body = resp.json()
    assert body["balanced"] == "balanced" and body["skewed"] == SKEWED
    by = {(r["backend"], r["comm"]): r for r in body["items"]}
    assert by["TRTLLM", "NVLINK_ONE_SIDED"]["rank_change"] == 2
    assert by["MEGAMOE_CUTEDSL", "NONE"]["skewed_rank"] == 1
    assert by["CUTEDSL", "NVLINK_ONE_SIDED"]["slowdown_pct"] == pytest.approx(20.0)
    assert body["summary"]["winner_changes"] is True
    assert body["summary"]["balanced_pick_regret_pct"] == pytest.approx((1.5 / 1.26 - 1) * 100)
    verdicts = {a["technique"]: a["verdict"] for a in body["advice"]}
    assert verdicts == {
        "EPLB": "indicated",
        "DWDP": "not applicable",
        "low_precision_combine": "note",
    }
    assert body["provenance"]["run_ids"] == sorted([ids["balanced"], ids["skewed"]])


def test_prefill_workload_points_to_dwdp(seeded: tuple) -> None:
    client, _ = seeded
    body = client.get(URL, params={**WORKLOAD, "phase": "prefill", "num_tokens": 16384}).json()
    verdicts = {a["technique"]: a["verdict"] for a in body["advice"]}
    assert verdicts["DWDP"] == "indicated" and verdicts["EPLB"] == "not indicated"


def _error(resp: Any) -> dict[str, Any]:
    assert resp.status_code == 422, resp.text
    (detail,) = resp.json()["detail"]
    return dict(detail)


@pytest.mark.parametrize(
    ("change", "field", "listed"),
    [
        ({"skewed": "hotspot"}, "skewed", f"balanced, {SKEWED}"),
        ({"num_tokens": 300}, "num_tokens", "256, 4096"),
        ({"model": "deepseek_v4"}, "model", "deepseek_v4_pro, kimi_k2"),
        ({"world_size": 4}, "world_size", "16"),
    ],
)
def test_unknown_values_are_422_naming_the_parameter(
    seeded: tuple, change: dict, field: str, listed: str
) -> None:
    client, _ = seeded
    err = _error(client.get(URL, params={**WORKLOAD, **change}))
    assert err["loc"] == ["query", field] and listed in err["msg"]


def test_malformed_and_missing_parameters_are_422(seeded: tuple) -> None:
    client, _ = seeded
    err = _error(client.get(URL, params={**WORKLOAD, "phase": "both"}))
    assert err["loc"] == ["query", "phase"] and "decode" in err["msg"]
    params = {k: v for k, v in WORKLOAD.items() if k != "num_tokens"}
    assert _error(client.get(URL, params=params))["loc"] == ["query", "num_tokens"]
    assert _error(client.get(URL, params={**WORKLOAD, "world_size": "x"}))["loc"] == [
        "query",
        "world_size",
    ]


def test_one_pattern_is_200_with_a_message_and_no_rows(seeded: tuple) -> None:
    client, _ = seeded
    body = client.get(URL, params={**WORKLOAD, "attention": "tp"}).json()
    assert body["items"] == [] and body["skewed"] is None
    assert body["patterns"] == ["balanced"] and "only one routing pattern" in body["message"]


def test_csv_is_the_table_named_for_its_slice(seeded: tuple) -> None:
    client, _ = seeded
    resp = client.get(URL, params={**WORKLOAD, "format": "csv"})
    assert resp.headers["content-type"].startswith("text/csv")
    name = "routing_skew_kimi_k2_GB300_NVFP4_ws16_256tok_decode_dp_balanced_vs_recv_hotspot.csv"
    assert name in resp.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(resp.text)))
    assert len(rows) == 4 and rows[0]["backend"] == "TRTLLM" and rows[0]["slowdown_pct"] == "50.0"


def test_candidate_export_serves_yaml_env_and_json(seeded: tuple) -> None:
    client, ids = seeded
    base = f"/api/v1/runs/{ids['known']}/candidates/2/export"
    y = client.get(base)
    assert y.status_code == 200 and y.headers["content-type"].startswith("application/yaml")
    stem = f"moe_config_deepseek_v4_pro_GB300_NVFP4_ws8_1024tok_run{ids['known']}_cand2"
    assert f'filename="{stem}.yaml"' in y.headers["content-disposition"]
    assert yaml.safe_load(y.text)["moe_config"]["backend"] == "TRTLLM"
    env = client.get(base, params={"format": "env"})
    assert env.text == "TRTLLM_FORCE_COMM_METHOD=NVLINK_ONE_SIDED\n"
    assert f'filename="{stem}.env"' in env.headers["content-disposition"]
    j = client.get(base, params={"format": "json"}).json()
    assert j["yaml"] == y.text and j["env"] == env.text and j["yaml_filename"] == f"{stem}.yaml"


def test_candidate_export_unknowns_are_404_naming_the_path_parameter(seeded: tuple) -> None:
    client, ids = seeded
    resp = client.get("/api/v1/runs/999999/candidates/0/export")
    assert resp.status_code == 404 and resp.json()["detail"][0]["loc"] == ["path", "run_id"]
    resp = client.get(f"/api/v1/runs/{ids['known']}/candidates/77/export")
    assert resp.json()["detail"][0]["loc"] == ["path", "candidate_index"]
    resp = client.get(f"/api/v1/runs/{ids['known']}/candidates/1/export?format=toml")
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["query", "format"]


def test_candidate_export_of_a_foreign_backend_is_422_saying_why(db_url: str, store: Store) -> None:
    run = seed_awkward_exports(store)
    settings = Settings(database_url=db_url, enable_dashboard=False)
    with TestClient(create_app(settings, store=store)) as client:
        resp = client.get(f"/api/v1/runs/{run}/candidates/0/export")
        err = _error(resp)
        assert err["loc"] == ["path", "candidate_index"] and err["type"] == "not_deployable"
        assert "TORCH_BMM_PADDED" in err["msg"]
        ok = client.get(f"/api/v1/runs/{run}/candidates/1/export", params={"format": "json"})
        assert ok.status_code == 200 and ok.json()["warnings"]
        assert "# warning:" in ok.json()["yaml"]
