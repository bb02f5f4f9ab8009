"""service.planner and service.planner_request: request resolution, the plan document,
the Te fit from stored sweeps, the export name, the catalogue and the page's cache.

The Te fit uses ``ingest_linear``: a sweep whose per-expert time is exactly
``K3*be + K4``, so a fit must recover those coefficients."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from pydantic import ValidationError

from analysis import columns as C
from analysis.planner import GPUS, MODELS
from analysis.planner.plans import ALTERNATIVE_COLUMNS, NA_SWEEP_COLUMNS
from db.store import Store
from service import planner as S
from service.frames import DashData
from service.planner_fits import FIT_COLUMNS
from service.planner_request import (
    HETERO_MAX_GPUS,
    PlanInputError,
    PlanRequest,
    resolve,
)
from tests.api.test_api_planner import K3, K4, ingest_linear


def req(**body: object) -> PlanRequest:
    return PlanRequest.model_validate(body)


# ------------------------------------------------------------------ the request
def test_request_defaults_and_normalisation() -> None:
    r = req(gpus=[" h20 ", "l40s"], gpu_overrides={"h20": {"price": 2}})
    assert r.gpus == ["H20", "L40S"] and set(r.gpu_overrides) == {"H20"}
    assert PlanRequest().model == "mixtral_8x22b" and PlanRequest().gpus == ["H20"]
    with pytest.raises(ValidationError):
        req(gpus=["H20", "h20"])
    with pytest.raises(ValidationError):
        req(model_overrides={"wat": 1})


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"model": "nope"}, ["model"]),
        ({"gpus": ["H20", "NOPE"]}, ["gpus", 1]),
        ({"gpu_overrides": {"L20": {"price": 1}}}, ["gpu_overrides", "L20"]),
        ({"expert_fits": {"L20": {"slope_ms": 1, "intercept_ms": 0.1}}}, ["expert_fits", "L20"]),
        (
            {"attention_fits": [{"gpu": "L20", "tpa": 1, "slope_ms": 1, "intercept_ms": 0.1}]},
            ["attention_fits", 0, "gpu"],
        ),
        ({"model_overrides": {"top_k": 9}}, ["model_overrides", "top_k"]),
        ({"options": {"experts_per_node": [3]}}, ["options", "experts_per_node"]),
        (
            {
                "gpus": ["GB300", "B200", "B300", "H200"],
                "mode": "heterogeneous",
                "options": {"max_micro_batches": 8},
            },
            ["gpus"],
        ),
        ({"options": {"max_micro_batches": 2}}, ["options", "min_micro_batches"]),
    ],
)
def test_resolve_names_the_field(body: dict[str, object], loc: list[object]) -> None:
    with pytest.raises(PlanInputError) as info:
        resolve(req(**body))
    assert info.value.loc == loc and info.value.msg


def test_resolve_applies_overrides_and_custom_specs() -> None:
    res = resolve(req(model_overrides={"num_layers": 28}, gpu_overrides={"H20": {"price": 0.5}}))
    assert res.model.num_layers == 28 and res.model.source.endswith("edited: num_layers")
    assert res.gpus[0].price == 0.5 and res.gpus[0].memory_gb == GPUS["H20"].memory_gb
    assert resolve(PlanRequest()).model is MODELS["mixtral_8x22b"]
    # more than HETERO_MAX_GPUS is fine with pinned experts per node
    many = ["H20", "L40S", "A800", "H800", "L20"][: HETERO_MAX_GPUS + 1]
    pinned = resolve(req(gpus=many, mode="heterogeneous", options={"experts_per_node": [1, 2]}))
    assert pinned.options.experts_per_node == (1, 2) and len(pinned.gpus) == 5


# ------------------------------------------------------------------ the document
@pytest.fixture(scope="module")
def default_plan() -> dict[str, object]:
    return S.run_plan(PlanRequest(), None)


def test_run_plan_document_is_json_ready(default_plan: dict[str, object]) -> None:
    text = json.dumps(default_plan, allow_nan=False)  # raises on NaN/inf or numpy values
    body = json.loads(text)
    assert body == default_plan
    best = body["best"]
    assert best["attention_gpu"] == best["expert_gpu"] == "H20" and best["tbt_ms"] <= 150
    assert [c["label"] for c in best["constraints"]] == list(S.CONSTRAINT_LABELS.values())
    assert best["all_constraints_met"] == all(c["met"] for c in best["constraints"])
    assert set(body["alternatives"][0]) == set(ALTERNATIVE_COLUMNS)
    assert len(body["alternatives"]) == min(20, body["n_alternatives"])
    assert list(body["na_sweep"][0]) == list(NA_SWEEP_COLUMNS)
    assert len(body["timeline"]) == 4 * best["m"]
    fit = body["expert_fits"][0]
    assert fit["source"] == "roofline" and "stored sweeps not used" in fit["note"]
    assert body["verdict"].startswith("disaggregation")


def test_finite_cleans_every_level() -> None:
    dirty = {"a": float("nan"), 1: (np.float64(2.5), [np.int64(3), float("inf")]), "s": "x"}
    assert S.finite(dirty) == {"a": None, "1": [2.5, [3, None]], "s": "x"}
    assert isinstance(S.finite(np.bool_(True)), bool)


def test_homogeneous_keeps_the_best_gpu_and_merges_alternatives() -> None:
    both = S.run_plan(req(gpus=["H20", "L40S"]), None)
    each = [S.run_plan(req(gpus=[g]), None) for g in ("H20", "L40S")]
    best = max((p for p in each if p["best"]), key=lambda p: p["best"]["tput_per_cost"])
    assert both["best"] == best["best"]
    assert both["n_alternatives"] == sum(p["n_alternatives"] for p in each)
    costs = [a["tput_per_cost"] for a in both["alternatives"]]
    assert costs == sorted(costs, reverse=True)


def test_verdicts() -> None:
    small = S.run_plan(req(options={"max_gpus": 16}), None)
    assert small["verdict"].startswith("disaggregation does not pay")
    assert small["disaggregation_gain"] < 1
    none = S.run_plan(req(workload={"slo_tbt_ms": 0.01}), None)
    assert none["best"] is None and none["verdict"].startswith("nothing fits (SLO): ")
    assert "0.01 ms TBT SLO" in none["verdict"] and none["binding"]["reason"] == "slo"
    assert none["timeline"] == [] and none["na_sweep"] == []


def test_fit_from_the_store_recovers_the_law(store: Store) -> None:
    ingest_linear(store)
    body = S.run_plan(PlanRequest(), S.store_loader(store))
    fit = body["expert_fits"][0]
    assert (fit["source"], fit["n_points"]) == ("fit", 7)  # one EP size of the two
    assert fit["slope_ms"] == pytest.approx(K3) and fit["intercept_ms"] == pytest.approx(K4)
    assert body["best"]["expert_fit"] == "fit"
    # the request's own coefficients win over the store
    own = S.run_plan(
        req(expert_fits={"H20": {"slope_ms": 0.01, "intercept_ms": 0.2}}), S.store_loader(store)
    )
    assert own["expert_fits"][0]["source"] == "user"
    # use_stored false never asks the store
    off = S.run_plan(req(fit={"use_stored": False}), S.store_loader(store))
    assert off["expert_fits"][0]["source"] == "roofline"


def test_store_loader_reads_one_shape_on_the_labels(store: Store) -> None:
    ingest_linear(store, hardware="H20")
    ingest_linear(store, hardware="L20", k3=0.02, k4=1.0)
    load = S.store_loader(store)
    frame = load(MODELS["mixtral_8x22b"], ["H20"])
    assert set(frame[C.HARDWARE]) == {"H20"} and set(frame[C.STATUS]) == {"success"}
    assert set(FIT_COLUMNS) <= set(frame.columns)
    assert load(MODELS["dbrx"], ["H20", "L20"]).empty


def test_export_filename() -> None:
    payload = {
        "model": {"name": "my model"},
        "best": {"attention_gpu": "H20", "expert_gpu": "L40S"},
    }
    assert S.export_filename(payload) == "plan-my_model-H20-L40S.json"
    no_plan = {"model": {"name": "m"}, "best": None, "gpus": [{"name": "A"}, {"name": "B"}]}
    assert S.export_filename(no_plan) == "plan-m-A-B.json"
    assert len(S.export_filename({"model": {"name": "x" * 500}})) == 125


def test_catalog_with_and_without_a_store(store: Store) -> None:
    bare = S.catalog(None)
    assert {m["name"] for m in bare["models"]} == set(MODELS)
    assert all(m["stored_sweeps"] == [] for m in bare["models"])
    assert bare["limits"] == S.limits()
    assert bare["limits"]["max_estimated_evaluations"] == S.MAX_ESTIMATED_EVALUATIONS
    assert bare["defaults"] == PlanRequest().model_dump(mode="json")
    ingest_linear(store)
    mixtral = next(m for m in S.catalog(store)["models"] if m["name"] == "mixtral_8x22b")
    assert mixtral["stored_sweeps"] == [{"hardware": "H20", "quant": "BF16", "runs": 1}]
    assert all(not (isinstance(v, float) and not math.isfinite(v)) for v in mixtral.values())


# ------------------------------------------------------------------ the page's reads
def test_plan_for_caches_per_request_and_store_version(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    first = S.plan_for(data, PlanRequest())
    assert S.plan_for(data, PlanRequest()) is first
    assert first["expert_fits"][0]["source"] == "roofline"
    assert S.plan_for(data, req(top=3)) is not first
    ingest_linear(store)  # an upload: the next read fits Te from it
    after = S.plan_for(data, PlanRequest())
    assert after is not first and after["expert_fits"][0]["source"] == "fit"


def test_stored_quants(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    assert S.stored_quants(data) == []
    ingest_linear(store)
    assert S.stored_quants(data) == ["BF16"]


def test_sensitivity_reruns_at_plus_minus_20_percent_and_is_bounded() -> None:
    body = S.run_plan(req(gpus=["H20", "L40S"], mode="heterogeneous", sensitivity=True), None)
    labels = [r["variant"] for r in body["sensitivity"]]
    assert labels == [
        "H20 price x0.8",
        "H20 price x1.2",
        "L40S price x0.8",
        "L40S price x1.2",
        "sequence length x0.8",
        "sequence length x1.2",
    ]
    # cheaper attention GPUs cannot make the H20 + L40S plan worse: it stays the best
    assert body["sensitivity"][0]["same_plan"]
    assert body["sensitivity"][0]["tput_per_cost"] > body["best"]["tput_per_cost"]
    assert S.run_plan(req(), None)["sensitivity"] == []
    big = {"model": "deepseek_v4_pro", "gpus": ["GB300", "B200"], "mode": "heterogeneous"}
    with pytest.raises(PlanInputError) as info:
        resolve(req(**big, sensitivity=True))
    assert info.value.loc == ["sensitivity"]


def test_deployment_description_matches_the_best_plan() -> None:
    body = S.run_plan(req(), None)
    dep, best = body["deployment"], body["best"]
    att, exp = dep["nodes"]
    assert (att["role"], att["nodes"], att["tensor_parallel"]) == (
        "attention",
        best["na"],
        best["tpa"],
    )
    assert (exp["nodes"], exp["tensor_parallel"]) == (best["expert_nodes"], best["tpe"])
    assert dep["pipeline"]["micro_batches"] == best["m"]
    assert dep["expected"]["tbt_ms"] == best["tbt_ms"] and dep["total_gpus"] == best["gpus"]
    assert f"{best['na']} node(s) x {best['tpa']} H20" in dep["summary"]
    assert S.run_plan(req(workload={"slo_tbt_ms": 0.01}), None)["deployment"] is None
