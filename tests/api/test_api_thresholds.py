"""/api/v1/thresholds* over HTTP on a store with known answers
(``tests.factories.thresholds.seed_threshold_store``)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from fastapi.testclient import TestClient

from db.store import Store
from tests.factories import thresholds as TF

DECODE = "decode_megamoe_tokens_per_rank"
NAMES = [
    DECODE,
    "prefill_megamoe_tokens_per_rank",
    "cross_domain_dispatch_kb",
    "small_world_size",
    "attention_tp_cutedsl_tokens_per_rank",
]


@pytest.fixture
def seeded(client: TestClient, store: Store) -> TestClient:
    TF.seed_threshold_store(store)
    return client


def test_table_keeps_the_names_and_fields(seeded: TestClient) -> None:
    body = seeded.get("/api/v1/thresholds").json()
    items = body["items"]
    assert [i["name"] for i in items] == NAMES
    fields = {"published", "derived", "bracket_lo", "bracket_hi", "status", "ci_lo", "ci_hi"}
    fields |= {"n_points", "verdict", "verdict_reason", "loo_helps", "loo_accuracy_derived"}
    assert fields <= set(items[0])
    assert body["method"]["resamples"] == 2000 and "agrees only when" in body["verdict_rule"]
    assert body["slice"] == {"model": None, "hardware": None, "quant": None, "dispatch": None}
    assert body["provenance"]["n_candidates"] > 0
    decode = items[0]
    assert decode["published"] == 512 and decode["ci_lo"] <= decode["bracket_lo"]


def test_filters_and_breakdowns(seeded: TestClient) -> None:
    c = seeded.get("/api/v1/thresholds", params={"model": "model_c"}).json()
    assert c["slice"]["model"] == "model_c"
    assert (c["items"][0]["bracket_lo"], c["items"][0]["bracket_hi"]) == (512, 640)
    hw = seeded.get("/api/v1/thresholds", params={"hardware": "b300", "quant": "NVFP4"}).json()
    assert hw["slice"]["hardware"] == "B300" and hw["items"][0]["n_points"] == len(TF.GRID)
    by = seeded.get("/api/v1/thresholds", params={"by": "model"}).json()["items"]
    assert {(i["by"], i["group"]) for i in by if i["name"] == DECODE} == {
        ("model", m) for m in ("model_a", "model_b", "model_c", "model_d")
    }
    ev = seeded.get("/api/v1/thresholds", params={"evidence": True, "model": "model_d"}).json()
    assert len([i for i in ev["items"] if i["name"] == DECODE]) == len(TF.GRID)


def test_csv_downloads_are_named_for_the_slice(seeded: TestClient) -> None:
    r = seeded.get("/api/v1/thresholds", params={"format": "csv", "model": "model_c"})
    assert r.headers["content-disposition"] == 'attachment; filename="thresholds_model_c.csv"'
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [row["name"] for row in rows] == NAMES
    by = seeded.get("/api/v1/thresholds", params={"format": "csv", "by": "hardware"})
    assert 'filename="thresholds_by_hardware_all.csv"' in by.headers["content-disposition"]


def test_validation_and_agreement(seeded: TestClient) -> None:
    loo = seeded.get("/api/v1/thresholds/validation").json()["items"]
    held = {i["held_out"]: i for i in loo if i["name"] == DECODE}
    assert set(held) == {"model_a", "model_b", "model_c", "model_d"}
    assert held["model_c"]["accuracy_derived"] < held["model_c"]["accuracy_published"]
    body = seeded.get("/api/v1/thresholds/agreement").json()
    c = next(i for i in body["items"] if i["model"] == "model_c")
    assert (c["agreement_pct_published"], c["agreement_pct_validated"]) == (72.5, 72.5)
    assert c["agreement_pct_derived"] < 72.5
    assert {o["thresholds"] for o in body["overall"]} == {"published", "derived", "validated"}
    decisions = {d["name"]: d for d in body["decisions"]}
    assert decisions[DECODE]["used"] is False
    assert decisions[DECODE]["reason"].startswith("kept published")


def test_tree_as_text_and_json(seeded: TestClient) -> None:
    r = seeded.get("/api/v1/thresholds/tree", params={"model": "model_c"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert (
        r.headers["content-disposition"]
        == 'attachment; filename="moedash-tree-model_c-derived.txt"'
    )
    assert "STEP2: Backend" in r.text and "activated_tokens_per_rank <= 572.4" in r.text
    j = seeded.get("/api/v1/thresholds/tree", params={"format": "json", "thresholds": "validated"})
    assert 'filename="moedash-tree-all-validated.json"' in j.headers["content-disposition"]
    body = json.loads(j.text)
    assert (
        body["values"][DECODE]["value"] == 512 and body["values"][DECODE]["source"] == "published"
    )


@pytest.mark.parametrize(
    ("path", "params", "name", "allowed"),
    [
        ("/api/v1/thresholds", {"model": "nope"}, "model", "model_a, model_b, model_c, model_d"),
        ("/api/v1/thresholds", {"hardware": "H100"}, "hardware", "B300, GB300"),
        ("/api/v1/thresholds", {"quant": "FP8"}, "quant", "NVFP4"),
        ("/api/v1/thresholds", {"dispatch": "skewed"}, "dispatch", "balanced"),
        ("/api/v1/thresholds", {"by": "backend"}, "by", "'none', 'model', 'hardware' or 'quant'"),
        ("/api/v1/thresholds", {"format": "xml"}, "format", "'json' or 'csv'"),
        ("/api/v1/thresholds", {"evidence": "maybe"}, "evidence", "bool"),
        (
            "/api/v1/thresholds/tree",
            {"thresholds": "mine"},
            "thresholds",
            "'published', 'derived' or 'validated'",
        ),
        ("/api/v1/thresholds/tree", {"format": "yaml"}, "format", "'text' or 'json'"),
        ("/api/v1/thresholds/validation", {"model": "nope"}, "model", "model_a"),
        ("/api/v1/thresholds/agreement", {"hardware": "X"}, "hardware", "B300"),
    ],
)
def test_bad_input_is_422_naming_the_parameter_and_values(
    seeded: TestClient, path: str, params: dict[str, str], name: str, allowed: str
) -> None:
    r = seeded.get(path, params=params)
    assert r.status_code == 422
    detail = r.json()["detail"][0]
    assert detail["loc"] == ["query", name]
    assert allowed in detail["msg"]


def test_empty_store(client: TestClient) -> None:
    items = client.get("/api/v1/thresholds").json()["items"]
    assert len(items) == 5 and {i["verdict"] for i in items} == {"not enough data"}
    assert client.get("/api/v1/thresholds/tree").status_code == 200
    r = client.get("/api/v1/thresholds", params={"model": "x"})
    assert r.status_code == 422 and "nothing is stored yet" in r.json()["detail"][0]["msg"]
