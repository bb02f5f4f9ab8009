"""The /planner page without a browser: figure builders, form <-> URL, callbacks' logic."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import pytest
from dash import html

from analysis.planner import GPUS, MODELS, Workload, search_plans, timeline
from dashboard import planner_figures as PF
from dashboard.app import PAGES, create_dash, parse_search, render_page
from dashboard.pages import planner as P
from dashboard.pages import planner_form as F
from db.store import Store
from service.frames import DashData
from service.planner import run_plan
from service.planner_request import PlanRequest
from tests.api.test_api_planner import K3, K4, ingest_linear


@pytest.fixture(scope="module")
def payload() -> dict[str, Any]:
    return run_plan(PlanRequest(), None)


def _find(component: Any, test_id: str) -> Any:
    """First descendant with data-testid == test_id (depth first)."""
    if getattr(component, "_prop_names", None) is not None:
        if getattr(component, "data-testid", None) == test_id:
            return component
        children = getattr(component, "children", None)
    else:
        children = component
    if isinstance(children, list | tuple):
        for child in children:
            found = _find(child, test_id)
            if found is not None:
                return found
    elif children is not None and not isinstance(children, str | int | float):
        return _find(children, test_id)
    return None


def _text(component: Any) -> str:
    if component is None:
        return ""
    if isinstance(component, str | int | float):
        return str(component)
    if isinstance(component, list | tuple):
        return " ".join(_text(c) for c in component)
    return _text(getattr(component, "children", None))


def _ids(component: Any) -> set[str]:
    out = set()
    if getattr(component, "_prop_names", None) is not None:
        if getattr(component, "id", None):
            out.add(component.id)
        component = getattr(component, "children", None)
    if isinstance(component, list | tuple):
        for c in component:
            out |= _ids(c)
    elif component is not None and not isinstance(component, str | int | float):
        out |= _ids(component)
    return out


# ------------------------------------------------------------------ figures
def test_na_sweep_figure_draws_the_sweep_and_marks_the_choice(payload: dict[str, Any]) -> None:
    sweep = payload["na_sweep"]
    best_na = payload["best"]["na"]
    fig = PF.na_sweep_figure(sweep, best_na)
    per_gpu, per_cost = fig.data[0], fig.data[1]
    assert list(per_gpu.x) == [r["na"] for r in sweep if r["feasible"]]
    assert list(per_gpu.y) == pytest.approx([r["tput_per_gpu"] for r in sweep if r["feasible"]])
    assert per_cost.yaxis == "y2"
    symbols = list(per_gpu.marker.symbol)
    for row, sym in zip([r for r in sweep if r["feasible"]], symbols, strict=True):
        assert sym == ("circle" if row["balance_met"] else "circle-open")
    assert any(s.x0 == best_na for s in fig.layout.shapes)
    assert "tokens/s/GPU" in fig.layout.yaxis.title.text
    assert "na" in fig.layout.xaxis.title.text
    assert "tokens/s/GPU" in per_gpu.hovertemplate and "Ta =" in per_gpu.hovertemplate


def test_na_sweep_figure_marks_infeasible_and_handles_empty() -> None:
    sweep = pd.DataFrame(
        {
            "na": [1, 2, 3],
            "feasible": [True, True, False],
            "batch": [10, 20, None],
            "ta_ms": [0.1, 0.1, None],
            "te_ms": [0.2, 0.1, None],
            "tbt_ms": [40, 41, None],
            "gpus": [9, 10, None],
            "tput_per_gpu": [100.0, 150.0, None],
            "tput_per_cost": [50.0, 60.0, None],
            "balance_met": [False, True, None],
        }
    )
    fig = PF.na_sweep_figure(sweep, 2)
    (bad,) = [t for t in fig.data if t.name.startswith("infeasible")]
    assert list(bad.x) == [3] and list(bad.y) == [0]
    empty = PF.na_sweep_figure([], None)
    assert empty.layout.annotations[0].text.startswith("No na sweep")


def test_timeline_figure_is_a_gantt_of_the_schedule() -> None:
    plan = search_plans(MODELS["mixtral_8x22b"], Workload(2048, 150), GPUS["H20"]).best
    assert plan is not None
    rows = timeline(plan)
    fig = PF.timeline_figure(rows)
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    assert [t.name for t in bars] == [f"micro-batch {i}" for i in range(1, plan.m + 1)]
    assert sum(len(t.x) for t in bars) == len(rows) == 4 * plan.m
    first = bars[0]
    mine = rows[rows["micro_batch"] == 1]
    assert list(first.base) == pytest.approx(list(mine["start_ms"]))
    assert list(first.x) == pytest.approx(list(mine["end_ms"] - mine["start_ms"]))
    assert first.orientation == "h" and fig.layout.barmode == "overlay"
    # lanes top to bottom: attention, M2N, expert, N2M
    order = list(fig.layout.yaxis.categoryarray)[::-1]
    assert order == [PF.LANE_LABELS[lane] for lane in PF.LANES]
    assert fig.layout.xaxis.title.text == "time (ms)"
    assert PF.timeline_figure([]).layout.annotations[0].text.startswith("No timeline")
    # several layers label bars with the layer
    two = PF.timeline_figure(timeline(plan, layers=2))
    assert "1·L2" in list(two.data[0].text)


def test_constraint_fit_and_comparison_rows(payload: dict[str, Any]) -> None:
    rows = PF.constraint_rows(payload["best"]["constraints"])
    assert [r["constraint"] for r in rows] == ["Ta ≈ Te", "Tc < Tf", "m ≥ 2·(1 + Tc/Tf)"]
    assert all(r["status"] in ("met", "violated") for r in rows)
    assert rows[2]["value"] == payload["best"]["m"]
    violated = PF.constraint_rows(
        [
            {
                "name": "comm_hidden",
                "met": False,
                "value": 2.0,
                "bound": 1.0,
                "detail": "Tc=2 ms < Tf=1 ms",
            }
        ]
    )
    assert violated[0]["status"] == "violated" and violated[0]["constraint"] == "comm_hidden"
    fits = PF.fit_rows(payload["expert_fits"])
    assert fits[0]["source"] == "roofline" and fits[0]["k3 / roofline"] == pytest.approx(1.0)
    comp = PF.comparison_rows(payload["best"], payload["colocated"])
    by = {r["metric"]: r for r in comp}
    assert by["GPUs"]["disaggregated"] == payload["best"]["gpus"]
    assert by["tokens/s per cost unit"]["co-located"] == payload["colocated"]["tput_per_cost"]
    assert PF.comparison_rows(None, None)[0]["disaggregated"] is None


# ------------------------------------------------------------------ form and URL
def test_form_round_trips_through_the_url() -> None:
    query = {
        "model": "dbrx",
        "seq": "4096.5",
        "slo": "120",
        "gpu": ["h20", "L40S", "nope"],
        "mode": "heterogeneous",
        "nm": "6",
        "xpn": "2",
        "fq": "BF16",
        "L": "20",
        "E": str(MODELS["dbrx"].num_experts),
        "pa": "12.5",
        "H20.price": "2.5",
        "L40S.memory_gb": "48",
        "A800.price": "9",
    }
    form = F.parse_form(query)
    assert form.model == "dbrx" and form.seq == 4096.5 and form.slo == 120
    assert form.gpus == ("H20", "L40S") and form.mode == "heterogeneous"
    assert form.nm == 6 and form.xpn == 2 and form.fq == "BF16"
    # only values that differ from the catalogue are kept
    assert form.model_over == {"L": 20.0, "pa": 12.5}
    assert form.gpu_over == {"H20": {"price": 2.5}}
    assert F.parse_form(parse_search(form.search())) == form


def test_bad_query_values_fall_back_to_defaults() -> None:
    form = F.parse_form(
        {
            "model": "nope",
            "seq": "-1",
            "slo": "abc",
            "gpu": "XX",
            "mode": "weird",
            "nm": "99",
            "E": "nan",
        }
    )
    d = F.Form()
    assert (form.model, form.seq, form.slo, form.gpus, form.mode) == (
        d.model,
        d.seq,
        d.slo,
        d.gpus,
        d.mode,
    )
    assert form.nm == 8 and form.model_over == {}


def test_plan_request_maps_units() -> None:
    form = F.parse_form(
        {"pa": "12.5", "pe": "3", "L": "20", "H20.gpus_per_node": "4", "xpn": "2", "fq": "BF16"}
    )
    req = F.plan_request(form)
    over = req.model_overrides
    assert over is not None
    assert over.attention_param_bytes == 12.5e9 and over.expert_param_bytes == 3e9
    assert over.num_layers == 20
    assert req.gpu_overrides["H20"].gpus_per_node == 4
    assert req.options.experts_per_node == [2] and req.fit.quant == "BF16"


def test_controls_and_grid_rows_make_the_form() -> None:
    rows = F.gpu_rows(("H20", "L40S"), {})
    assert [r["gpu"] for r in rows] == ["H20", "L40S"] and rows[0]["price"] == 1.85
    rows[1]["price"] = 0.9  # the user's edit in the grid
    values = [F.catalog_model_value("mixtral_8x22b", k) for k in F.MODEL_KEYS]
    values[list(F.MODEL_KEYS).index("L")] = 28
    form = F.form_from_controls(
        "mixtral_8x22b",
        1024,
        80,
        ["H20", "L40S"],
        "heterogeneous",
        3,
        0,
        None,
        24,
        5,
        ["1"],
        [],
        3,
        1,
        values,
        rows,
    )
    assert (form.ca, form.cb) == (3, 1) and "ca=3" in form.search() and "cb=1" in form.search()
    assert (form.cap, form.near, form.ff, form.sens) == (24, 5.0, True, False)
    assert "cap=24" in form.search() and "near=5" in form.search() and "ff=1" in form.search()
    req = F.plan_request(form)
    assert req.options.max_gpus == 24 and req.options.near_best_pct == 5 and req.fit.force
    assert F.parse_form({}).seq == 650.0 and F.parse_form({"nm": "2"}).nm == 3
    assert form.gpu_over == {"L40S": {"price": 0.9}}
    assert form.model_over == {"L": 28.0}
    assert form.xpn is None and form.nm == 3
    assert "L40S.price=0.9" in form.search() and "L=28" in form.search()
    # an edit survives re-selecting GPUs; a removed GPU's row goes
    kept = F.gpu_rows(("L40S", "A800"), {}, rows)
    assert [r["gpu"] for r in kept] == ["L40S", "A800"] and kept[0]["price"] == 0.9


def test_xpn_options_divide_the_experts() -> None:
    values = [o["value"] for o in F.xpn_options(8)]
    assert values == [0, 1, 2, 4, 8]
    assert [o["value"] for o in F.xpn_options(384)][-1] == 128
    assert F.xpn_options(None) == [{"label": "auto (powers of two)", "value": 0}]


# ------------------------------------------------------------------ with a store
def test_update_renders_every_section_with_the_fit(store: Store) -> None:
    ingest_linear(store)
    data = DashData(store)
    body, search, payload = P.update(data, F.parse_form({"gpu": ["H20"], "slo": "150"}))
    assert search.startswith("?model=mixtral_8x22b") and "gpu=H20" in search
    for test_id in (
        "planner-verdict",
        "planner-best",
        "planner-constraints",
        "planner-colocated",
        "planner-fits",
    ):
        assert _find(body, test_id) is not None, test_id
    assert {"plan-sweep", "plan-timeline", "plan-alts"} <= _ids(body)
    fits = _text(_find(body, "planner-fits"))
    assert "fit" in fits and "7" in fits and "ep_size=" in fits
    assert payload["expert_fits"][0]["slope_ms"] == pytest.approx(K3)
    assert payload["expert_fits"][0]["intercept_ms"] == pytest.approx(K4)
    constraints = _text(_find(body, "planner-constraints"))
    assert "Ta ≈ Te" in constraints and ("met" in constraints or "violated" in constraints)
    # cached: the same form does not search again
    again = P.update(data, F.parse_form({"gpu": ["H20"], "slo": "150"}))[2]
    assert again is payload
    # the download is the API document
    dl = P.download(payload)
    assert dl is not None and dl["filename"].startswith("plan-mixtral_8x22b-H20-H20")
    assert json.loads(dl["content"])["best"] == payload["best"]
    assert P.download(None) is None


def test_update_explains_refusals_and_empty_results(store: Store) -> None:
    data = DashData(store)
    body, _, payload = P.update(
        data,
        F.parse_form(
            {"gpu": ["GB300", "B200", "B300", "H200"], "mode": "heterogeneous", "nm": "8"}
        ),
    )
    assert payload is None
    assert "plan evaluations" in _text(_find(body, "planner-error"))
    body, _, payload = P.update(data, F.parse_form({"slo": "0.01"}))
    assert payload is not None and payload["best"] is None
    assert _find(body, "planner-no-plan") is not None
    body, _, payload = P.update(data, F.parse_form({"K": "99"}))
    assert payload is None and "top_k" in _text(_find(body, "planner-error"))


def test_page_is_routed_and_registered(store: Store) -> None:
    assert PAGES["/planner"].module is P and PAGES["/planner"].nav
    app = create_dash(DashData(store))
    outputs = " ".join(app.callback_map)
    assert "plan-body.children" in outputs and "plan-download.data" in outputs
    data = app.server.config["MOEDASH_DATA"]
    page = render_page(data, "/planner", "?model=dbrx&gpu=H20&gpu=L40S&H20.price=2&L=20")
    ids = _ids(page)
    assert {
        "plan-model",
        "plan-gpus",
        "plan-gpu-grid",
        "plan-run",
        "plan-body",
        "plan-download-btn",
        "plan-m-L",
    } <= ids


def test_fit_points_figure_has_units_points_line_and_residuals() -> None:
    fit = {
        "gpu": "H20",
        "used": False,
        "group": {"ep_size": 8},
        "candidate_slope_ms": 0.01,
        "candidate_intercept_ms": 0.2,
        "candidate_r2": 0.5,
        "points": [
            {"be": 1.0, "t_ms": 0.3, "residual_ms": 0.09},
            {"be": 10.0, "t_ms": 0.2, "residual_ms": -0.1},
        ],
    }
    fig = PF.fit_points_figure(fit)
    names = [t.name for t in fig.data]
    assert names[0] == "sweep points" and "refused" in names[1] and names[2] == "residual"
    assert fig.data[1].line.dash == "dash"
    assert "(ms)" in fig.layout.yaxis.title.text and "(tokens)" in fig.layout.xaxis2.title.text
    assert PF.fit_points_figure({"gpu": "H20", "points": []}).layout.annotations


def test_render_shows_warnings_and_the_near_best_band(store: Store) -> None:
    data = DashData(store)
    body, _, payload = P.update(data, F.parse_form({"cap": "24", "near": "5"}))
    assert payload is not None and payload["best"]["gpus"] <= 24
    near = _text(_find(body, "planner-near-best"))
    assert "within 5 %" in near and f"Smallest: {payload['near_best']['smallest']['gpus']}" in near
    # no stored sweeps: the roofline warning is shown
    assert "roofline used" in _text(_find(body, "planner-warnings"))


def test_sensitivity_table_and_deployment_download(store: Store) -> None:
    data = DashData(store)
    form = F.parse_form({"gpu": ["H20", "L40S"], "mode": "heterogeneous", "sens": "1"})
    assert form.sens and "sens=1" in form.search()
    body, _, payload = P.update(data, form)
    assert payload is not None and len(payload["sensitivity"]) == 6
    table = _text(_find(body, "planner-sensitivity"))
    assert "H20 price x1.2" in table and "sequence length x0.8" in table
    doc = P.deploy_download(payload)
    assert doc is not None and doc["filename"].startswith("deployment-mixtral_8x22b-")
    dep = json.loads(doc["content"])
    roles = {n["role"]: n for n in dep["nodes"]}
    assert roles["attention"]["gpu"] == payload["best"]["attention_gpu"]
    assert (
        roles["expert"]["nodes"] * roles["expert"]["gpus_per_node"]
        == payload["best"]["expert_gpus"]
    )
    assert dep["total_gpus"] == payload["best"]["gpus"] and "TBT" in dep["summary"]
    assert P.deploy_download(None) is None


def test_two_plans_side_by_side(store: Store) -> None:
    form = F.parse_form({"ca": "1", "cb": "3"})
    body, search, payload = P.update(DashData(store), form)
    assert payload is not None and "cb=3" in search
    rows = PF.side_by_side_rows(payload["alternatives"], 1, 3)
    by = {r["metric"]: r for r in rows}
    first, third = payload["alternatives"][0], payload["alternatives"][2]
    assert by["GPUs"]["#1"] == first["gpus"] and by["GPUs"]["#3"] == third["gpus"]
    assert by["GPUs"]["difference"] == third["gpus"] - first["gpus"]
    assert by["tokens/s per cost unit"]["difference"] <= 0  # ranked by tokens/s per cost
    shown = _text(_find(body, "planner-compare"))
    assert "#1" in shown and "#3" in shown and "TBT (ms)" in shown
    assert PF.side_by_side_rows(payload["alternatives"], 1, 999) == []
    assert F.parse_form({"ca": "0", "cb": "x"}).ca == 1


def test_the_urls_plan_comes_with_the_layout(store: Store) -> None:
    ingest_linear(store)
    data = DashData(store)
    page = render_page(data, "/planner", "?gpu=H20&slo=150")
    assert _find(page, "planner-verdict") is not None  # no click, no round trip first
    stored = next(c for c in html.Div(page)._traverse() if getattr(c, "id", None) == "plan-payload")
    assert stored.data is P.update(data, F.parse_form({"gpu": ["H20"], "slo": "150"}))[2]
    app = create_dash(data)
    entry = next(c for c in app._callback_list if "plan-body.children" in c["output"])
    assert entry["prevent_initial_call"] is True
