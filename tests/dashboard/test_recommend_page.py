"""The /recommend page without a browser: every control named by its label, the default
deployment is the cell with the most data, charts and downloads named for what they show,
loading states and scroll boxes around the wide tables (real DuckDB store)."""

from __future__ import annotations

from typing import Any

import pytest
from dash import dcc, html

from dashboard.app import create_dash, render_page
from dashboard.pages import recommend
from db.store import Store, open_store
from service.defaults import default_cell
from service.frames import DashData
from tests.dashboard.labels_check import control_names, unnamed
from tests.factories.dashboard import by_id, callback, seed_store, walk

KNOWN = "?hardware=GB300&model=deepseek_v4_pro&quant=NVFP4&ws=8&attn=DP&phase=decode&tokens=300"


@pytest.fixture(scope="module")
def data(module_store: Store) -> DashData:
    seed_store(module_store)  # deepseek_v4_pro · GB300 (7 candidates), kimi_k2 · B300 (40)
    return DashData(module_store, version_ttl=0.0)


def form(**kw: Any) -> recommend.Form:
    base = dict(hardware="GB300", model="deepseek_v4_pro", quant="NVFP4", ws=8, tokens=300)
    return recommend.Form(**{**base, **kw})


def test_every_control_is_named_by_its_label(data: DashData) -> None:
    page = render_page(data, "/recommend", KNOWN)
    body, _ = recommend.update(data, form())
    names = control_names(html.Div([page, body]))
    assert unnamed(html.Div([page, body])) == []
    # the two number inputs the issue found unlabelled, and dropdowns named by more than
    # their value
    assert names["rec-ws"] == "world size (GPUs)"
    assert names["rec-tokens"] == "num_tokens (tokens; global under DP, per rank under TP)"
    assert names["rec-mtp"] == "MTP draft tokens (decode)"
    assert names["rec-model"] == "model" and names["rec-hardware"] == "GPU / system"
    assert names["rec-check"] == "evidence for threshold"
    assert names["rec-attn"] == "attention" and names["rec-phase"] == "phase"
    # a dropdown's label carries the id its button reads its name from (aria-labelledby)
    label = next(c for c in walk(page) if getattr(c, "id", None) == "rec-model-value-count")
    assert isinstance(label, html.Label) and label.htmlFor == "rec-model"


def test_default_deployment_is_the_cell_with_the_most_data(data: DashData) -> None:
    cell = default_cell(data)
    assert cell is not None and cell.model == "kimi_k2"  # not the alphabetically first
    page = render_page(data, "/recommend", "")
    values = {
        c.id: getattr(c, "value", None)
        for c in walk(page)
        if isinstance(getattr(c, "id", None), str)
    }
    assert (values["rec-model"], values["rec-hardware"], values["rec-quant"]) == (
        "kimi_k2",
        "B300",
        "NVFP4",
    )
    cov = data.coverage()
    assert values["rec-ws"] == int(cov[cov["model"] == "kimi_k2"]["world_size"].iloc[0])
    # a URL naming its deployment keeps it
    named = render_page(data, "/recommend", KNOWN)
    assert by_id(named, "rec-model").value == "deepseek_v4_pro"
    assert by_id(named, "rec-hardware").value == "GB300"


def test_charts_are_titled_and_png_named_for_the_deployment(data: DashData) -> None:
    body, _ = recommend.update(data, form())
    path = by_id(body, "rec-path-graph")
    where = "deepseek_v4_pro · GB300 · NVFP4 · 8 GPUs · decode"
    assert path.figure.layout.title.text == f"{where}<br>threshold vs observed value"
    assert path.figure.layout.margin.t >= 70  # room for the two title lines
    assert path.config["toImageButtonOptions"]["filename"] == (
        "threshold-vs-observed-value-deepseek_v4_pro-gb300-nvfp4-8-gpus-decode"
    )
    evidence = by_id(body, "rec-evidence")
    chosen = by_id(body, "rec-check").value
    assert chosen and f"evidence for {chosen}" in evidence.figure.layout.title.text
    assert evidence.config["toImageButtonOptions"]["filename"].startswith(f"evidence-for-{chosen}-")
    assert evidence.config["displaylogo"] is False
    # the evidence dropdown re-draws and re-names the chart
    app = create_dash(data)
    other = next(o["value"] for o in by_id(body, "rec-check").options if o["value"] != chosen)
    fig, config, search = callback(app, "rec-evidence.figure")(
        other, *[getattr(form(), f) for f in recommend.FIELDS[:-1]]
    )
    assert f"evidence for {other}" in fig.layout.title.text
    assert config["toImageButtonOptions"]["filename"].startswith(f"evidence-for-{other}-")
    assert f"check={other}" in search


def test_downloads_are_named_for_what_they_hold(data: DashData) -> None:
    tree = recommend.download(data, "yaml", form())
    assert tree is not None
    assert tree["filename"] == "moe_config_deepseek_v4_pro_GB300_NVFP4_ws8_decode_300tok_tree.yaml"
    env = recommend.download(data, "env", form())
    assert env is not None and env["filename"].endswith("_300tok_tree.env")
    measured = recommend.download(data, "yaml", form(), "measured")
    assert measured is not None and measured["filename"].endswith("_measured.yaml")
    assert tree["filename"] != measured["filename"]


def test_slow_areas_load_visibly_and_wide_tables_scroll_in_their_box(data: DashData) -> None:
    page = render_page(data, "/recommend", KNOWN)
    loading = [c for c in walk(page) if isinstance(c, dcc.Loading)]
    answer = next(c for c in loading if by_id(c, "rec-body") is not None)
    # the answer hides at once while the next one computes (never read as the new one)
    assert answer.delay_show == 0 and answer.overlay_style == {"visibility": "hidden"}
    others = [c for c in loading if c is not answer and by_id(c, "rec-body") is None]
    assert others and all(c.delay_show == 300 for c in others)
    body, _ = recommend.update(data, form())
    assert any(
        isinstance(c, dcc.Loading) and by_id(c, "rec-evidence") is not None for c in walk(body)
    )
    for test_id in ("rec-measured", "rec-thresholds"):
        box = next(
            c
            for c in walk(body)
            if getattr(c, "className", None) == "scroll-x"
            and any(getattr(t, "data-testid", None) == test_id for t in walk(c))
        )
        assert isinstance(box, html.Div)
    # the published-vs-derived table says each threshold's unit
    units = [c for c in walk(by_id_testid(body, "rec-thresholds")) if isinstance(c, str)]
    assert "activated tokens per rank" in units and "GPUs" in units


def by_id_testid(tree: Any, test_id: str) -> Any:
    return next(c for c in walk(tree) if getattr(c, "data-testid", None) == test_id)


def test_empty_database_still_recommends_and_says_what_is_missing(tmp_path: Any) -> None:
    empty = open_store(f"duckdb:///{tmp_path / 'empty.duckdb'}")
    try:
        data = DashData(empty)
        page = render_page(data, "/recommend", "")
        assert by_id(page, "rec-model").value == recommend.Form().model  # no cell: defaults
        body, _ = recommend.update(data, recommend.Form())
        assert by_id_testid(body, "rec-path") is not None  # the tree needs no data
        missing = " ".join(c for c in walk(by_id_testid(body, "rec-no-data")) if isinstance(c, str))
        assert "No measured candidates" in missing and "upload a bench_moe sweep" in missing
    finally:
        empty.close()
