"""The /compare page in real headless Chromium against a real `moedash serve`.

The DuckDB file holds the three-version sweeps of tests/factories/version_sweeps.py.
What a person does: open the page (it lands on the slice with the most versions,
rc27 vs rc28), read the counts and the grid, pick another base from the list, raise the
threshold, download the CSV and check it, reopen the permalink. The console stays
clean. Saves artifacts/screenshots/compare.png.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from db.store import open_store
from tests.factories import version_sweeps as V

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.factories.servers import running_server

    db_url = f"duckdb:///{tmp_path_factory.mktemp('compare') / 'store.duckdb'}"
    store = open_store(db_url)
    try:
        V.seed_versions(store)
    finally:
        store.close()  # DuckDB: one process per file
    with running_server(db_url) as base:
        yield base


def _rows(page: Any, n: int) -> None:
    page.wait_for_function(
        """n => { try { return window.dash_ag_grid.getApi('cmp-grid')
                              .getDisplayedRowCount() === n; } catch (e) { return false; } }""",
        arg=n,
        timeout=30_000,
    )


def _count(page: Any, key: str) -> str:
    return str(page.locator(f"[data-testid=cmp-count-{key}]").inner_text())


def test_compare_select_read_download_and_permalink(
    server: str, page: Any, browser: Any, tmp_path: Path
) -> None:
    page.goto(server + "/compare", wait_until="networkidle")
    nav = page.locator("a.nav-link", has_text="Compare")
    nav.first.wait_for(timeout=30_000)
    assert nav.count() == 1
    # the default slice (decode) of rc27 vs rc28: 6 rows, one regression first
    page.wait_for_url("**base=1.2.0rc27**head=1.2.0rc28**", timeout=30_000)
    _rows(page, 6)
    assert _count(page, "regression") == "1" and _count(page, "new_failure") == "1"
    assert _count(page, "newly_skipped") == "1" and _count(page, "best_changed") == "1"
    first = page.evaluate(
        "() => window.dash_ag_grid.getApi('cmp-grid').getDisplayedRowAtIndex(0).data"
    )
    assert first["verdict"] == "regression" and round(first["change_pct"], 6) == 20.0
    headers = page.locator("#cmp-grid .ag-header-cell-text").all_inner_texts()
    assert "change (%)" in headers and "base score (ms)" in headers
    assert "1.2.0rc27 → 1.2.0rc28" in page.locator("#cmp-graph").inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)

    # pick another base from the list: the oldest version
    page.locator("#cmp-base").click()
    page.get_by_role("option", name="version 1.2.0rc9 · 1 run · 2026-08-01").click()
    page.wait_for_url("**base=1.2.0rc9**", timeout=15_000)
    page.wait_for_function(
        """() => document.querySelector('[data-testid=cmp-summary]')
                 .innerText.includes('base 1.2.0rc9')""",
        timeout=20_000,
    )

    # a 25 % threshold: the +20 % regression is unchanged now
    box = page.locator("#cmp-threshold_pct")
    box.fill("25")
    box.press("Enter")
    page.wait_for_url("**threshold_pct=25**", timeout=15_000)
    page.wait_for_function(
        """() => document.querySelector('[data-testid=cmp-count-regression]')
                 .innerText === '0'""",
        timeout=20_000,
    )

    # the CSV is what the grid holds, named for the slice and the sides
    with page.expect_download() as info:
        page.locator("#cmp-csv-btn").click()
    name = "compare-deepseek_v4_pro-GB300-NVFP4-ws8-decode-1.2.0rc9-vs-1.2.0rc28.csv"
    assert info.value.suggested_filename == name
    path = tmp_path / name
    info.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert len(rows) == 6 and {r["verdict"] for r in rows} >= {"new_failure", "newly_skipped"}
    trtllm = [r for r in rows if r["backend"] == "TRTLLM" and r["num_tokens"] == "256"]
    assert [r["verdict"] for r in trtllm if r["comm"] == "NVLINK_ONE_SIDED"] == ["unchanged"]

    # the permalink restores every control in a fresh page
    again = browser.new_page(viewport={"width": 1440, "height": 1000})
    again.on("pageerror", lambda e: page.errors.append(str(e)))
    again.goto(page.url, wait_until="networkidle")
    again.wait_for_selector("[data-testid=cmp-counts]", timeout=30_000)
    assert again.locator("#cmp-threshold_pct").input_value() == "25"
    assert "1.2.0rc9" in again.locator("#cmp-base").inner_text()
    assert again.locator("[data-testid=cmp-count-regression]").inner_text() == "0"

    # a version the slice does not hold: its own message naming the field
    again.goto(server + "/compare?base=9.9&head=1.2.0rc28", wait_until="networkidle")
    box = again.locator("[data-testid=cmp-invalid]")
    box.wait_for(timeout=20_000)
    assert "base" in box.inner_text() and "1.2.0rc27" in box.inner_text()
    again.close()
    assert page.errors == [], page.errors
