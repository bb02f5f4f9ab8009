"""The /crossovers page in real headless Chromium against a real `moedash serve`.

The DuckDB file holds the known stores of tests/service/test_crossovers.py (the
single-GPU sweep of three GEMM backends the guide does not know, and three flipping
repeat runs). Checks that the winner bands and the switch table render with the known
answer, that changing the axis rewrites the URL, the units and the CSV name, that the
permalink restores the view, that a bad permalink shows its own empty state, and that
the console stays clean. Saves artifacts/screenshots/crossovers.png.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from db.store import open_store
from tests.service.test_crossovers import seed_crossovers

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "artifacts" / "screenshots"
PATH = "/crossovers?model=toy_moe&hardware=H200&quant=FP8"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.factories.servers import running_server

    db_url = f"duckdb:///{tmp_path_factory.mktemp('crossovers') / 'store.duckdb'}"
    store = open_store(db_url)
    try:
        seed_crossovers(store)
    finally:
        store.close()  # DuckDB: one process per file
    with running_server(db_url) as base:
        yield base


BANDS = """() => { const g = document.querySelector('#xo-graph .js-plotly-plot');
    return g && g.layout && g.layout.shapes ? g.layout.shapes.map(s => s.label.text) : null; }"""


def _rows(page: object, n: int) -> None:
    page.wait_for_function(  # type: ignore[attr-defined]
        """n => { try { return window.dash_ag_grid.getApi('xo-switch-grid')
                              .getDisplayedRowCount() === n; } catch (e) { return false; } }""",
        arg=n,
        timeout=20_000,
    )


def test_bands_table_axis_switch_download_and_permalink(
    server: str, browser: object, tmp_path: Path
) -> None:
    page = browser.new_page(  # type: ignore[attr-defined]
        viewport={"width": 1440, "height": 1200}, accept_downloads=True
    )
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + PATH, wait_until="networkidle")
    assert page.locator("a.nav-link", has_text="Crossovers").count() == 1

    # the bands: one per segment, labelled with its rank-1 backend, drawn in the SVG
    page.wait_for_function(f"() => ({BANDS})() && ({BANDS})().length === 3", timeout=30_000)
    assert page.evaluate(BANDS) == ["GEMM_ALPHA", "GEMM_BETA", "GEMM_GAMMA"]
    graph = page.locator("#xo-graph")
    assert graph.locator(".shapelayer path").count() >= 3
    for name in ("GEMM_ALPHA", "GEMM_BETA", "GEMM_GAMMA"):
        assert graph.get_by_text(name).count() >= 1
    assert "num_tokens (tokens)" in graph.inner_text()

    # the switch table with units
    _rows(page, 2)
    headers = page.locator("#xo-switch-grid .ag-header-cell-text").all_inner_texts()
    assert "bracket low (tokens)" in headers and "margin at low (%)" in headers
    grid = page.locator("#xo-switch-grid").inner_text()
    assert "GEMM_BETA" in grid and "robust" in grid  # the verdict is in view
    first = page.evaluate(
        "() => window.dash_ag_grid.getApi('xo-switch-grid').getDisplayedRowAtIndex(0).data"
    )
    assert (first["before"], first["after"], first["bracket_lo"], first["bracket_hi"]) == (
        "GEMM_ALPHA",
        "GEMM_BETA",
        2,
        4,
    )
    summary = page.locator("[data-testid=xo-summary]").inner_text()
    assert "1 series, 2 switches: 2 robust" in summary
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "crossovers.png"), full_page=True)

    # another axis: URL, units and bands follow
    page.locator("#xo-axis label", has_text="dispatch volume (KiB)").click()
    page.wait_for_url("**axis=dispatch_kb**", timeout=10_000)
    page.wait_for_function(
        """() => [...document.querySelectorAll('#xo-switch-grid .ag-header-cell-text')]
                 .some(h => h.textContent === 'bracket low (KiB)')""",
        timeout=15_000,
    )
    assert "dispatch volume (KiB)" in page.locator("#xo-graph").inner_text()

    # the CSV is the switch table, named for the slice
    with page.expect_download() as info:
        page.locator("#xo-csv-btn").click()
    name = "crossovers_backend_dispatch_kb_toy_moe_H200_FP8.csv"
    assert info.value.suggested_filename == name
    path = tmp_path / name
    info.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert [(r["before"], r["after"], r["verdict"]) for r in rows] == [
        ("GEMM_ALPHA", "GEMM_BETA", "robust"),
        ("GEMM_BETA", "GEMM_GAMMA", "robust"),
    ]

    # the permalink restores the view in a fresh page
    again = browser.new_page(viewport={"width": 1440, "height": 1000})  # type: ignore[attr-defined]
    again.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    again.on("pageerror", lambda e: errors.append(str(e)))
    again.goto(page.url, wait_until="networkidle")
    again.wait_for_function(f"() => ({BANDS})() && ({BANDS})().length === 3", timeout=30_000)
    assert again.locator("#xo-axis input[value=dispatch_kb]").is_checked()
    _rows(again, 2)

    # a value that is not stored: its own empty state naming the stored ones
    again.goto(server + "/crossovers?model=nope&hardware=H200&quant=FP8", wait_until="networkidle")
    box = again.locator("[data-testid=xo-invalid]")
    box.wait_for(timeout=20_000)
    assert "stored: [deepseek_v4_pro, toy_moe]" in box.inner_text()
    again.close()

    assert errors == [], errors
    page.close()
