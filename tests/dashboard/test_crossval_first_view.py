"""The Cross validation page's first view: laid out with its answer, the ledger's first page
as HTML until the grid has drawn, the status chart deferred until then."""

from __future__ import annotations

from dash import dcc

from dashboard.app import render_page
from dashboard.pages import crossval as P
from dashboard.pages import crossval_render as R
from dashboard.pages.crossval_grids import GRID_COLUMNS, PAGE_SIZE
from service.frames import DashData
from tests.dashboard.test_crossval_page import data, imported_only  # noqa: F401 - fixtures
from tests.factories.dashboard import by_id, by_testid, text


def test_first_view_defers_the_chart_until_the_ledger_shows(data: DashData) -> None:  # noqa: F811
    page = render_page(data, "/crossval", "?hardware=H200")
    pending = by_testid(page, "cv-figure-pending")
    assert pending is not None and "status chart" in text(pending)
    stored = by_id(page, "cv-figure-deferred").data
    assert stored["type"] == "Graph" and stored["props"]["id"] == "cv-status-graph"
    assert len(stored["props"]["figure"]["data"]) == 3  # Match, Mismatch, no data bars
    # a filter change (the page's callback) draws the chart at once
    out = P.update(data, None, "H200", None, None, 2, 3)
    assert isinstance(out[4], dcc.Graph)
    assert R.deferred_figure(None) == (None, None)


def test_ledger_first_page_is_html_holding_the_grids_first_rows(data: DashData) -> None:  # noqa: F811
    page = render_page(data, "/crossval", "?show=all")
    grid = by_id(page, "cv-ledger-grid")
    static = by_id(page, "cv-ledger-static")
    assert len(grid.rowData) > PAGE_SIZE  # more rows than one page: the cut is tested
    assert static.fields == list(GRID_COLUMNS)
    assert len(static.records) == PAGE_SIZE
    for shown, row in zip(static.records, grid.rowData, strict=False):
        assert {k: v for k, v in shown.items() if v is not None} == row
    # the grid is drawn hidden (laid out, not shown) beside it; the swap is in the browser
    assert by_id(page, "cv-ledger-grid-box").className == "ledger-pending"
    assert by_id(page, "cv-ledger-static-box").style["minHeight"] == grid.style["height"]
    assert grid.dashGridOptions["paginationPageSize"] == PAGE_SIZE
