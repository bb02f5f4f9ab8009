"""Parity: the /planner page's Plan callback and ``POST /api/v1/planner/plan`` return the
same plan for the same inputs, on the same store (DuckDB; PostgreSQL with the postgres
marker).

The page side is what the registered ``_plan`` callback runs: the control values (model,
sequence length, SLO, GPUs, mode, Nm, experts per node, fit quant, the model inputs and
the GPU grid's rows) through ``form_from_controls`` into ``planner.update``. The API side
is a JSON body written as a client would write it, sent to the real app.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from dashboard import components as ui
from dashboard.pages import planner as P
from dashboard.pages import planner_form as F
from dashboard.pages.planner_render import best_facts
from db.store import Store
from service.frames import DashData
from tests.api.test_api_planner import K3, ingest_linear
from tests.factories.dashboard import walk

MIXTRAL = "mixtral_8x22b"
# Sections of the plan document that must agree (elapsed_ms and the echoed request differ).
SECTIONS = (
    "best",
    "colocated",
    "disaggregation_gain",
    "verdict",
    "expert_fits",
    "model",
    "gpus",
    "workload",
    "n_alternatives",
    "alternatives",
    "na_sweep",
    "timeline",
    "notes",
    "warnings",
    "near_best",
    "truncated",
    "estimated_evaluations",
    "evaluations",
    "deployment",
    "sensitivity",
    "n_broken_plans",
    "broken_plans",
    "binding",
    "colocated_costs",
)


def controls(
    gpus: tuple[str, ...] = ("H20",),
    *,
    model: str = MIXTRAL,
    seq: float = 650,
    slo: float = 150,
    mode: str = "homogeneous",
    nm: int = 4,
    xpn: int = 0,
    fq: str | None = None,
    cap: int | None = None,
    near: float = 2.0,
    ff: bool = False,
    sens: bool = False,
    model_edits: dict[str, float] | None = None,
    grid_edits: dict[str, dict[str, float]] | None = None,
) -> tuple[Any, ...]:
    """The Plan callback's State values, as the browser sends them after the edits."""
    values = [F.catalog_model_value(model, k) for k in F.MODEL_KEYS]
    for key, value in (model_edits or {}).items():
        values[list(F.MODEL_KEYS).index(key)] = value
    rows = F.gpu_rows(gpus, {})
    for row in rows:
        row.update((grid_edits or {}).get(row["gpu"], {}))
    ff_value = ["1"] if ff else []
    sens_value = ["1"] if sens else []
    state = (model, seq, slo, list(gpus), mode, nm, xpn, fq, cap, near, ff_value, sens_value)
    return (*state, 1, 2, values, rows)


def page_plan(data: DashData, state: tuple[Any, ...]) -> tuple[Any, dict[str, Any] | None]:
    form = F.form_from_controls(*state)
    body, _search, payload = P.update(data, form)
    return body, payload


def _text(component: Any) -> str:
    return " ".join(c for c in walk(component) if isinstance(c, str))


def _by_testid(component: Any, test_id: str) -> Any:
    found = [c for c in walk(component) if getattr(c, "data-testid", None) == test_id]
    assert len(found) == 1, test_id
    return found[0]


CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("defaults", controls(), {}),
    (
        "heterogeneous",
        controls(("H20", "L40S"), mode="heterogeneous"),
        {"gpus": ["H20", "L40S"], "mode": "heterogeneous"},
    ),
    (
        "homogeneous over two GPUs",
        controls(("L40S", "H20")),
        {"gpus": ["L40S", "H20"]},
    ),
    (
        "edited figures",
        controls(
            seq=4096,
            slo=120,
            nm=3,
            xpn=2,
            model_edits={"L": 28, "pa": 12.5},
            grid_edits={"H20": {"price": 2.5, "gpus_per_node": 4}},
        ),
        {
            "workload": {"seq_len": 4096, "slo_tbt_ms": 120},
            "options": {"max_micro_batches": 3, "experts_per_node": [2]},
            "model_overrides": {"num_layers": 28, "attention_param_bytes": 12.5e9},
            "gpu_overrides": {"H20": {"price": 2.5, "gpus_per_node": 4}},
        },
    ),
    ("another model", controls(model="dbrx"), {"model": "dbrx"}),
    ("fit quant", controls(fq="BF16"), {"fit": {"quant": "BF16"}}),
    ("nothing fits", controls(slo=0.01), {"workload": {"slo_tbt_ms": 0.01}}),
    (
        "GPU cap below the smallest plan",
        controls(("GB300",), model="deepseek_v4_pro", cap=2),
        {"model": "deepseek_v4_pro", "gpus": ["GB300"], "options": {"max_gpus": 2}},
    ),
    (
        "GPU cap, near band, forced fit",
        controls(cap=24, near=5, ff=True, sens=True),
        {
            "options": {"max_gpus": 24, "near_best_pct": 5},
            "fit": {"force": True},
            "sensitivity": True,
        },
    ),
]


@pytest.mark.parametrize(("name", "state", "body"), CASES, ids=[c[0] for c in CASES])
def test_page_callback_and_api_return_the_same_plan(
    store: Store, client: TestClient, name: str, state: tuple[Any, ...], body: dict[str, Any]
) -> None:
    ingest_linear(store)  # stored sweeps: Te is fitted, on both sides
    data = DashData(store, version_ttl=0.0)
    page_body, page = page_plan(data, state)
    resp = client.post("/api/v1/planner/plan", json=body)
    assert resp.status_code == 200, resp.text
    api = resp.json()
    assert page is not None
    for section in SECTIONS:
        assert page[section] == api[section], (name, section)
    # what the page shows is the API's best plan
    if api["best"] is None:
        assert api["binding"]["message"] in _text(_by_testid(page_body, "planner-no-plan"))
    else:
        shown = _text(_by_testid(page_body, "planner-best"))
        for value in best_facts(api["best"], api["workload"]["slo_tbt_ms"]).values():
            assert ui.fmt(value) in shown
    assert api["verdict"] in _text(_by_testid(page_body, "planner-verdict"))


def test_the_fit_is_really_from_the_store(store: Store, client: TestClient) -> None:
    """The parity above compares fitted plans, not two roofline estimates."""
    ingest_linear(store)
    _, page = page_plan(DashData(store, version_ttl=0.0), controls())
    api = client.post("/api/v1/planner/plan", json={}).json()
    assert page is not None
    assert page["expert_fits"][0]["source"] == api["expert_fits"][0]["source"] == "fit"
    assert page["expert_fits"][0]["slope_ms"] == pytest.approx(K3)
    assert page["best"]["expert_fit"] == "fit"


def test_refusals_agree(store: Store, client: TestClient) -> None:
    """A request both sides refuse: the same field and message."""
    four = ("GB300", "B200", "B300", "H200")
    body, page = page_plan(DashData(store), controls(four, mode="heterogeneous", nm=8))
    assert page is None
    resp = client.post(
        "/api/v1/planner/plan",
        json={"gpus": list(four), "mode": "heterogeneous", "options": {"max_micro_batches": 8}},
    )
    assert resp.status_code == 422
    detail = resp.json()["detail"][0]
    assert detail["loc"] == ["body", "gpus"] and "plan evaluations" in detail["msg"]
    assert f"gpus: {detail['msg']}" in _text(_by_testid(body, "planner-error"))
