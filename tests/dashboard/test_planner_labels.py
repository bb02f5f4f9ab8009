"""The /planner page's accessible names, chart names and narrow-window layout (real
DuckDB store, the plan of the API's default request)."""

from __future__ import annotations

from typing import Any

from dash import html

from dashboard.app import render_page
from dashboard.pages import planner as P
from dashboard.pages import planner_form as F
from db.store import Store
from service.frames import DashData
from tests.api.test_api_planner import ingest_linear
from tests.dashboard.labels_check import control_names, unnamed
from tests.factories.dashboard import by_id, walk


def test_every_planner_input_is_named_by_its_label(store: Store) -> None:
    page = render_page(DashData(store), "/planner", "?gpu=H20&gpu=L40S")
    assert unnamed(page) == []
    names = control_names(page)
    # the three number inputs the issue found without a name
    assert names["plan-ca"] == "compare side by side: first plan (rank, 1 = best)"
    assert names["plan-cb"] == "compare side by side: second plan (rank, 1 = best)"
    assert names["plan-cap"] == "GPU cap per plan (GPUs; empty = none)"
    assert names["plan-seq"] == "avg sequence length (tokens in KV)"
    assert names["plan-slo"] == "TBT SLO (ms)"
    assert names["plan-m-pa"] == "attention-side weights Pa (GB)"
    assert names["plan-model"] == "model"
    assert names["plan-gpus"] == "GPUs (catalogue)"  # multi: the fieldset's legend
    assert names["plan-mode"] == "mode" and names["plan-sens"] == "sensitivity"


def _graphs(tree: Any) -> dict[str, Any]:
    return {c.id: c for c in walk(tree) if type(c).__name__ == "Graph"}


def test_charts_are_titled_and_png_named_for_the_plan(store: Store) -> None:
    ingest_linear(store)
    body, _, payload = P.update(DashData(store), F.parse_form({"gpu": ["H20"], "slo": "150"}))
    best = payload["best"]
    where = f"mixtral_8x22b · H20 · {best['gpus']} GPUs · decode"
    graphs = _graphs(body)
    sweep, timeline = graphs["plan-sweep"], graphs["plan-timeline"]
    assert sweep.figure.layout.title.text == (
        f"{where}<br>throughput per GPU against na (m = {best['m']})"
    )
    assert sweep.config["toImageButtonOptions"]["filename"] == (
        f"throughput-per-gpu-against-na-m-{best['m']}-mixtral_8x22b-h20-{best['gpus']}-gpus-decode"
    )
    assert timeline.figure.layout.title.text.startswith(f"{where}<br>ping-pong timeline")
    assert timeline.config["toImageButtonOptions"]["filename"].startswith("ping-pong-timeline")
    fit = graphs["plan-fit-H20"]
    assert fit.figure.layout.title.text == f"{where}<br>Te fit on H20"
    assert fit.config["displaylogo"] is False
    # axes keep their units
    assert sweep.figure.layout.yaxis.title.text == "throughput per GPU (tokens/s/GPU)"
    assert timeline.figure.layout.xaxis.title.text == "time (ms)"


def test_plan_tables_scroll_inside_their_box(store: Store) -> None:
    ingest_linear(store)
    body, _, _ = P.update(DashData(store), F.parse_form({"gpu": ["H20"], "slo": "150"}))
    boxes = [
        c
        for c in walk(body)
        if isinstance(c, html.Div) and getattr(c, "className", None) == "scroll-x"
    ]
    inside = {getattr(t, "data-testid", None) for box in boxes for t in walk(box) if t is not box}
    assert {"planner-constraints", "planner-fits", "planner-colocated"} <= inside
    assert by_id(body, "plan-alts") is not None  # the alternatives grid scrolls itself
