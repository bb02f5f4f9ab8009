"""Issue 27 on NVIDIA's published sweeps (the committed snapshot in data/published, so
the default suite needs nothing beside the repository): the Te fit's rule makes
DeepSeek-V4-Pro on GB300 one fit and one plan whether or not the request says
``attention_dp``, where two accepted fits used to give 265 vs 24 GPUs; the page opens
on that model and GPU."""

from __future__ import annotations

from typing import Any

import pytest

from db.store import Store
from moedash.published import load_published
from service.frames import DashData
from service.planner import run_plan, store_loader
from service.planner_defaults import store_default
from service.planner_request import PlanRequest

DSV4_GB300 = {"model": "deepseek_v4_pro", "gpus": ["GB300"]}


@pytest.fixture(scope="module")
def seeded(module_store: Store) -> Store:
    load_published(module_store)
    return module_store


def _plan(store: Store, **extra: Any) -> dict[str, Any]:
    return run_plan(PlanRequest.model_validate({**DSV4_GB300, **extra}), store_loader(store))


def test_one_te_fit_and_one_plan_with_or_without_attention_dp(seeded: Store) -> None:
    plain = _plan(seeded)
    adp = _plan(seeded, fit={"attention_dp": True})
    fit = plain["expert_fits"][0]
    assert fit["used"] and fit["source"] == "fit" and fit["r2"] > 0.9
    assert fit["group"] == {
        "quant": "NVFP4",
        "attention_dp": True,
        "ep_size": 32,
        "moe_tp_size": 1,
        "backend": "CUTEDSL",
    }
    assert fit["fitted_be_min"] >= 4 and fit["fitted_be_max"] == 384
    for key in ("slope_ms", "intercept_ms", "n_points", "group"):
        assert adp["expert_fits"][0][key] == fit[key]
    keys = ("attention_gpu", "tpa", "tpe", "na", "m", "experts_per_node", "gpus", "batch")
    assert {k: plain["best"][k] for k in keys} == {k: adp["best"][k] for k in keys}
    best = plain["best"]
    assert best["all_constraints_met"] and best["be"] <= 2 * 384
    assert best["extrapolated"] == (best["be"] > 384)


def test_the_attention_tp_group_is_still_reachable_and_said_to_depart(seeded: Store) -> None:
    tp = _plan(seeded, fit={"attention_dp": False})
    fit = tp["expert_fits"][0]
    assert fit["group"]["attention_dp"] is False and fit["rule_deviations"]
    assert any("departs from the rule" in w for w in tp["warnings"])
    # its slope carries the TP all-reduce of every token: ~10x the DP group's
    dp = _plan(seeded)["expert_fits"][0]
    assert 5 < fit["slope_ms"] / dp["slope_ms"] < 20


def test_the_page_starts_on_deepseek_v4_pro_gb300(seeded: Store) -> None:
    assert store_default(DashData(seeded)) == ("deepseek_v4_pro", "GB300")
