"""Issue 27 on the /planner page: the Te fit's data rule and the fair baseline's costs
are stated beside the numbers they explain (the same document the API answers)."""

from __future__ import annotations

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
