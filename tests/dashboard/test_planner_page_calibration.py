"""Issue 27 on the /planner page: the Te fit's data rule and the fair baseline's costs
are stated beside the numbers they explain (the same document the API answers)."""

from __future__ import annotations

from typing import Any

from analysis.planner.colocated import SHARED_COSTS
from dashboard.pages import planner as P
from dashboard.pages import planner_form as F
from db.store import Store
from service.frames import DashData
from tests.api.test_api_planner import ingest_linear
from tests.dashboard.test_planner_page import _find, _text


def test_page_states_the_fit_rule_and_the_baselines_costs(store: Store) -> None:
    ingest_linear(store)
    body, _, payload = P.update(DashData(store), F.parse_form({"gpu": ["H20"]}))
    assert payload is not None
    rule = _text(_find(body, "planner-fit-rule"))
    assert payload["expert_fits"][0]["rule_text"] in rule
    assert "attention DP" in rule and "MoE TP 1" in rule and "2x beyond" in rule
    fits = _text(_find(body, "planner-fits"))
    lo, hi = payload["expert_fits"][0]["plan_be_min"], payload["expert_fits"][0]["plan_be_max"]
    assert f"{lo:.1f}–{hi:.0f}" in fits
    costs = _text(_find(body, "planner-colocated-costs"))
    assert payload["colocated_costs"] == list(SHARED_COSTS)
    for line in SHARED_COSTS:
        assert line in costs


def test_page_names_what_binds_and_lists_broken_plans_apart(store: Store) -> None:
    data = DashData(store)
    query = {"model": "deepseek_v4_pro", "gpu": ["GB300"], "cap": "2"}
    body, _, payload = P.update(data, F.parse_form(query))
    assert payload is not None and payload["binding"]["reason"] == "gpu_count"
    empty = _text(_find(body, "planner-no-plan"))
    assert "GPU count" in empty and "needs 7 GPUs" in empty and "raise the GPU cap" in empty
    body, _, payload = P.update(data, F.parse_form({"gpu": ["H20"]}))
    assert payload is not None and payload["n_broken_plans"] > 0
    listed = _text(_find(body, "planner-broken-plans"))
    assert f"{payload['n_broken_plans']} plan(s) break" in listed
    assert payload["broken_plans"][0]["broken"] in listed


def _by_id(component: Any, cid: str) -> Any:
    if getattr(component, "id", None) == cid:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str | int | float):
            found = _by_id(child, cid)
            if found is not None:
                return found
    return None


def test_page_opens_on_the_stores_model_and_gpu(store: Store) -> None:
    """Issue 27: the page used to open on mixtral_8x22b on H20 from a roofline whatever
    the store held. With only L20 sweeps stored it opens on L20, its Te fitted; a URL
    naming a model or GPU keeps its own."""
    ingest_linear(store, hardware="L20", k4=1.0)  # 604 MB per ms: under the L20's 864 GB/s
    data = DashData(store)
    page = P.layout(data)
    assert _by_id(page, "plan-gpus").value == ["L20"]
    assert _by_id(page, "plan-model").value == "mixtral_8x22b"
    payload = _by_id(page, "plan-payload").data
    assert payload["gpus"][0]["name"] == "L20"
    assert payload["expert_fits"][0]["source"] == "fit"
    assert _find(page, "planner-serving") is not None
    assert "SGLang" in _text(_find(page, "planner-serving"))
    own = P.layout(data, gpu="H20")
    assert _by_id(own, "plan-gpus").value == ["H20"]
