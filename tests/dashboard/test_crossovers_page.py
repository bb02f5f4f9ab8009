"""The /crossovers page without a browser: form <-> URL, layout, the registered callback,
the figure builder and the CSV download, on a real DuckDB store with known answers
(tests/service/test_crossovers.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from dash import dcc

from analysis import columns as C
from analysis.crossovers import find_rank_one_segments
from dashboard.app import PAGES, create_dash, parse_search, render_page
from dashboard.crossover_figures import band_edges, crossover_figure, option_colors
from dashboard.pages import crossovers as P
from dashboard.pages import crossovers_form as F
from db.store import Store, open_store
from ingest.records import UploadMeta
from service.defaults import default_cell
from service.frames import Cell, DashData
from tests.dashboard.labels_check import control_names, unnamed
from tests.factories import make_candidates, sweeps
from tests.factories.dashboard import by_id, by_testid, callback, text
from tests.service.test_crossovers import GEMM_SLICE, seed_crossovers

GEMM_LABEL = "toy_moe · H200 · FP8 · ws 1 · decode · attention DP · balanced"


@pytest.fixture
def data(duck: Store) -> DashData:
    seed_crossovers(duck)
    return DashData(duck, version_ttl=0.0)


def controls(**form: Any) -> list[Any]:
    """The values the page's controls send, in callback order."""
    f = F.Form(**form)
    values = [getattr(f, k) if getattr(f, k) is not None else F.ALL for k in F.FILTERS]
    return [*values, f.option, f.axis, f.series]


# ------------------------------------------------------------------ form <-> URL
def test_form_round_trips_through_the_url() -> None:
    form = F.Form(**GEMM_SLICE, world_size=1, phase="decode", option="backend+comm")
    assert form.search() == (
        "?model=toy_moe&hardware=H200&quant=FP8&world_size=1&phase=decode"
        "&option=backend%2Bcomm&axis=num_tokens"
    )
    # what the router hands the layout for that URL gives the form back
    assert F.parse_query(parse_search(form.search()), None) == form
    charted = F.Form(**GEMM_SLICE, series=GEMM_LABEL)
    assert F.parse_query(parse_search(charted.search()), None) == charted
    # the page's query string is the API's question
    assert form.api_href() == (
        "/api/v1/crossovers?model=toy_moe&hardware=H200&quant=FP8&world_size=1&phase=decode"
        "&option=backend%2Bcomm&axis=num_tokens"
    )


def test_defaults_and_odd_values() -> None:
    cell = Cell("m", "GB300", "NVFP4")
    assert F.parse_query({}, cell) == F.Form(model="m", hardware="GB300", quant="NVFP4")
    # "all" is an explicit choice the default does not override
    assert F.parse_query({"model": "all"}, cell) == F.Form()
    odd = F.make_form("x", "gb300", "all", "eight", "both", "ep", "all", "kernel", "x", "")
    assert odd == F.Form(model="x", hardware="GB300")
    # "+" in a raw query string arrives as a space
    assert F.make_form(option="backend comm").option == "backend+comm"


# ------------------------------------------------------------------ routing + layout
def test_page_is_registered_and_lays_out_the_permalink(data: DashData) -> None:
    assert PAGES["/crossovers"].module is P and PAGES["/crossovers"].nav
    page = render_page(
        data, "/crossovers", "?model=toy_moe&hardware=H200&quant=FP8&axis=dispatch_kb"
    )
    assert by_id(page, "xo-model").value == "toy_moe"
    assert by_id(page, "xo-axis").value == "dispatch_kb"
    assert by_id(page, "xo-world_size").value == F.ALL
    assert isinstance(by_id(page, "xo-url"), dcc.Location)
    assert "noise band" in text(by_testid(page, "xo-method"))
    # every control is named by its label (dropdowns by more than their value)
    names = control_names(page)
    assert unnamed(page) == []
    assert {k: names[k] for k in ("xo-model", "xo-world_size", "xo-option", "xo-axis")} == {
        "xo-model": "model",
        "xo-world_size": "world size (GPUs)",
        "xo-option": "option (what competes)",
        "xo-axis": "axis (log scale)",
    }
    assert names["xo-series"] == "series (chart)"
    opts = {o["value"] for o in by_id(page, "xo-world_size").options}
    assert opts == {F.ALL, 1}  # the values stored in toy_moe · H200 · FP8
    assert by_id(page, "xo-loading") is not None


def test_callback_draws_bands_over_curves_and_the_switch_table(data: DashData) -> None:
    app = create_dash(data)
    out = callback(app, "xo-body.children")(*controls(**GEMM_SLICE))
    body, search, series, series_opts = out[:4]
    assert series == GEMM_LABEL and [o["value"] for o in series_opts] == [GEMM_LABEL]
    assert search.startswith("?model=toy_moe&hardware=H200&quant=FP8&option=backend")
    assert "series=toy_moe" in search
    graph = by_id(body, "xo-graph")
    fig = graph.figure
    # title and PNG name: the series (model · GPU · quant · ws · phase · ...) and what
    assert fig.layout.title.text == f"{GEMM_LABEL}<br>rank-1 backend along num_tokens (tokens)"
    assert graph.config["toImageButtonOptions"]["filename"] == (
        "rank-1-backend-along-num_tokens-tokens-toy_moe-h200-fp8-ws-1-decode-attention-dp-balanced"
    )
    assert [s.label.text for s in fig.layout.shapes] == ["GEMM_ALPHA", "GEMM_BETA", "GEMM_GAMMA"]
    assert sorted(t.name for t in fig.data) == ["GEMM_ALPHA", "GEMM_BETA", "GEMM_GAMMA"]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.xaxis.title.text == "num_tokens (tokens)"
    assert fig.layout.yaxis.title.text.startswith("score (ms)")
    # the BETA band covers 4..16 tokens: edges at the geometric midpoints of the brackets
    beta = fig.layout.shapes[1]
    assert (beta.x0, beta.x1) == pytest.approx((math.sqrt(8), math.sqrt(512)))
    grid = by_id(body, "xo-switch-grid")
    assert [(r["before"], r["after"]) for r in grid.rowData] == [
        ("GEMM_ALPHA", "GEMM_BETA"),
        ("GEMM_BETA", "GEMM_GAMMA"),
    ]
    headers = {c["field"]: c["headerName"] for c in grid.columnDefs}
    assert headers["bracket_lo"] == "bracket low (tokens)"
    assert headers["margin_lo_pct"] == "margin at low (%)"
    assert headers["before_at_lo_ms"] == "before at low (ms)"
    summary = text(by_testid(body, "xo-summary"))
    assert "1 series, 2 switches: 2 robust, 0 ties within noise, 0 not compared" in summary
    assert by_testid(body, "xo-api-link").href.startswith("/api/v1/crossovers?model=toy_moe")
    # the filter dropdowns offer what is stored in the slice
    ws_opts = out[4 + F.FILTERS.index("world_size")]
    assert [o["value"] for o in ws_opts] == [F.ALL, 1]
    kb = callback(app, "xo-body.children")(*controls(**GEMM_SLICE, axis="dispatch_kb"))
    grid_kb = by_id(kb[0], "xo-switch-grid")
    assert {c["field"]: c["headerName"] for c in grid_kb.columnDefs}["bracket_hi"] == (
        "bracket high (KiB)"
    )


def test_empty_and_invalid_states(data: DashData, duck: Store, tmp_path: Path) -> None:
    body, *_ = P.update(data, *controls(model="nope", hardware="H200", quant="FP8"))
    box = by_testid(body, "xo-invalid")
    assert box is not None and "model: 'nope' is not stored" in text(box)
    # one option only: a series, no switch
    body, *_ = P.update(data, *controls(**GEMM_SLICE, option="parallel_mode"))
    assert by_testid(body, "xo-no-switches") is not None
    assert by_id(body, "xo-graph") is not None
    empty = open_store(f"duckdb:///{tmp_path}/empty.duckdb")
    try:
        page = render_page(DashData(empty, version_ttl=0.0), "/crossovers", "")
        assert "No runs in the database yet." in text(page)
    finally:
        empty.close()


def test_csv_download_is_the_switch_table_named_for_the_slice(data: DashData) -> None:
    form = F.Form(**GEMM_SLICE, world_size=1)
    out = P.csv_download(data, form)
    assert out is not None
    assert out["filename"] == "crossovers_backend_num_tokens_toy_moe_H200_FP8_ws1.csv"
    lines = out["content"].splitlines()
    assert lines[0].startswith("model,hardware,quant,world_size,cuda_graph,attn,dispatch,series")
    assert len(lines) == 3
    assert P.csv_download(data, F.Form(model="nope")) is None


# ------------------------------------------------------------------ figure builder
def test_band_edges() -> None:
    assert band_edges(np.array([4.0])).tolist() == pytest.approx(
        [4 / math.sqrt(2), 4 * math.sqrt(2)]
    )
    assert band_edges(np.array([1.0, 4.0, 16.0])).tolist() == pytest.approx([0.5, 2.0, 8.0, 32.0])
    assert len(band_edges(np.zeros(0))) == 0


def test_figure_of_a_window_and_its_colours() -> None:
    rows = [
        {C.BACKEND: b, C.NUM_TOKENS: x, C.SCORE_MS: s, C.CANDIDATE_INDEX: i * 10 + j}
        for i, (b, scores) in enumerate({"A": (1, 2, 4, 8), "B": (2, 1, 3, 9)}.items())
        for j, (x, s) in enumerate(zip((1, 2, 4, 8), scores, strict=True))
    ]
    res = find_rank_one_segments(make_candidates(rows))
    fig = crossover_figure(res.points, res.segments, C.NUM_TOKENS, "t")
    assert isinstance(fig, go.Figure)
    assert [s.label.text for s in fig.layout.shapes] == ["A", "B", "A"]
    colors = option_colors(["B", "A", "TRTLLM"])
    assert colors["TRTLLM"] == "#1f77b4"  # a backend keeps its Pareto-page colour
    assert colors["A"] != colors["B"]
    # winners are drawn as filled markers, the others open
    a = next(t for t in fig.data if t.name == "A")
    assert list(a.marker.symbol) == ["circle", "circle-open", "circle-open", "circle"]
    msg = crossover_figure(
        pd.DataFrame(columns=res.points.columns), res.segments, C.NUM_TOKENS, "t"
    )
    assert "No comparable" in msg.layout.annotations[0].text


def test_default_slice_is_the_cell_with_the_most_data(data: DashData, duck: Store) -> None:
    # a second, bigger cell: the page opens on it, not on the alphabetically first
    duck.ingest(
        [sweeps.make_sweep(40, seed=5, model="zz_big", hardware="B300", num_experts=64, top_k=4)],
        b"big-sweep",
        UploadMeta(hardware="B300"),
    )
    page = render_page(data, "/crossovers", "")
    cell = default_cell(data)
    assert cell is not None and cell.model == "zz_big"
    assert (by_id(page, "xo-model").value, by_id(page, "xo-hardware").value) == (
        "zz_big",
        "B300",
    )
