"""Issue 27 through the real app: the Te fit's data rule is in the answer, a plan stays
within twice the fitted range, and a physically impossible fit of the caller's own is
refused with the reason (422 naming the GPU)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from tests.api.test_api_planner import K3, K4, URL, ingest_linear


@pytest.fixture
def client(db_url: str, store: Store) -> Iterator[TestClient]:
    app = create_app(Settings(database_url=db_url, enable_dashboard=False), store=store)
    with TestClient(app) as c:
        yield c


def test_fit_states_its_rule_and_the_range_plans_may_use(client: TestClient, store: Store) -> None:
    ingest_linear(store)  # Mixtral on H20: EP 8 / TP 1 and EP 4 / TP 2, be 16..1024
    body = client.post(f"{URL}/plan", json={"gpus": ["H20"]}).json()
    fit = body["expert_fits"][0]
    assert fit["source"] == "fit" and fit["slope_ms"] == pytest.approx(K3)
    assert fit["intercept_ms"] == pytest.approx(K4)
    # the rule drops the MoE-TP-2 layout: the planner charges tpe > 1 itself
    assert fit["group"]["moe_tp_size"] == 1 and fit["group"]["ep_size"] == 8
    rule = fit["rule"]
    assert rule["phase"] == "decode" and rule["attention_dp"] is True
    assert rule["moe_tp_size"] == 1 and rule["quant"] == "BF16" and rule["be_min"] == 4
    assert "attention DP" in fit["rule_text"] and fit["rule_deviations"] == []
    assert (fit["fitted_be_min"], fit["fitted_be_max"]) == (16, 1024)
    assert (fit["plan_be_min"], fit["plan_be_max"]) == (8, 2048)
    assert all(a["be"] <= 2048 for a in body["alternatives"])
    assert body["best"]["extrapolated"] == (body["best"]["be"] > 1024)


def test_leaving_the_rule_is_said(client: TestClient, store: Store) -> None:
    ingest_linear(store)
    body = client.post(f"{URL}/plan", json={"fit": {"be_min": 0}}).json()
    fit = body["expert_fits"][0]
    assert fit["rule"]["be_min"] == 0 and "not every expert busy" in fit["rule_deviations"][0]
    assert any("departs from the rule" in w for w in body["warnings"])


@pytest.mark.parametrize(
    ("slope", "intercept", "words"),
    [(1e-8, 0.2, "TFLOPS per GPU"), (0.01, 1e-6, "GB/s")],
)
def test_own_impossible_te_is_refused_with_the_reason(
    client: TestClient, slope: float, intercept: float, words: str
) -> None:
    """Issue 27: a Te slope of 1e-300 used to plan 4,266 tokens/s/GPU with Te ≈ 0 (the
    request model now refuses numbers that small; 1e-8 ms/token passes it and is still
    6e7 TFLOPS for one Mixtral expert: refused here, naming the GPU)."""
    resp = client.post(
        f"{URL}/plan",
        json={"expert_fits": {"H20": {"slope_ms": slope, "intercept_ms": intercept}}},
    )
    assert resp.status_code == 422
    detail = resp.json()["detail"][0]
    assert detail["loc"] == ["body", "expert_fits", "H20"] and words in detail["msg"]


@pytest.mark.parametrize(
    ("options", "reason", "words"),
    [
        ({"max_gpus": 2}, "gpu_count", "needs 7 GPUs"),
        ({"tp_choices": [72]}, "tp_choice", "GB300 node (4 GPUs"),
    ],
)
def test_nothing_fits_names_what_binds(
    client: TestClient, options: dict[str, object], reason: str, words: str
) -> None:
    """Issue 27: both used to answer "nothing fits the memory and the SLO"."""
    body = client.post(
        f"{URL}/plan", json={"model": "deepseek_v4_pro", "gpus": ["GB300"], "options": options}
    ).json()
    assert body["best"] is None and body["binding"]["reason"] == reason
    assert words in body["binding"]["message"] and words in body["verdict"]
    assert body["binding"]["label"] in body["verdict"]


def test_plans_breaking_a_constraint_are_listed_apart(client: TestClient) -> None:
    body = client.post(f"{URL}/plan", json={}).json()  # Mixtral on H20, roofline
    assert body["best"]["all_constraints_met"]
    assert all(a["constraints_met"] for a in body["alternatives"])
    assert body["n_broken_plans"] > 0 and body["broken_plan_columns"][-1] == "broken"
    for row in body["broken_plans"]:
        assert not row["constraints_met"] and row["broken"]


def test_own_impossible_attention_law_is_refused(client: TestClient) -> None:
    """Ta must at least read each sequence's KV cache (650 tokens x 4 KiB x 56 layers of
    Mixtral: 2.7 MB per layer, ~0.6 ms/1000 sequences on one H20): 1e-6 ms per sequence
    is refused naming the entry; a plausible law is used."""
    bad = {"gpu": "H20", "tpa": 1, "slope_ms": 1e-6, "intercept_ms": 0.2}
    resp = client.post(f"{URL}/plan", json={"attention_fits": [bad]})
    assert resp.status_code == 422
    detail = resp.json()["detail"][0]
    assert detail["loc"] == ["body", "attention_fits", 0] and "KV read" in detail["msg"]
    good = {**bad, "slope_ms": 0.002}
    resp = client.post(
        f"{URL}/plan", json={"attention_fits": [good], "options": {"tp_choices": [1]}}
    )
    assert resp.status_code == 200
    best = resp.json()["best"]
    assert best is not None and best["tpa"] == 1 and best["attention_fit"] == "user"
