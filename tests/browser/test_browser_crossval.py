"""The /crossval page in real headless Chromium against a real `moedash serve`.

The DuckDB file is prepared first (fixture serving configs imported, the H200 bench_moe
candidates ingested, one end-to-end outcome stored) and closed, since DuckDB allows one
process per file. Checks the summary table and the ledger render with the known answers
(tests/test_crossval_page.py), that a status filter narrows the ledger and lands in the
URL, that a permalink restores the filters, that both CSV downloads work, and that the
console stays clean. Saves artifacts/screenshots/crossval.png.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from analysis import crossval_columns as cc
from db.store import open_store
from service.crossval import refresh_ledger
from service.crossval_import import import_serving_directory
from tests.api.test_api_crossval import FIXTURE, H200, ingest_h200_candidates

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(db url, the Mismatch workload id) of a prepared, closed DuckDB file."""
    db_url = f"duckdb:///{tmp_path_factory.mktemp('crossval') / 'store.duckdb'}"
    store = open_store(db_url)
    try:
        import_serving_directory(store, FIXTURE, "fixture")
        ingest_h200_candidates(store)
        refresh_ledger(store)  # as `moedash ingest` and the upload route do
        decode = store.crossval.serving_workloads({cc.PHASE: "decode", "hardware": "H200"})
        mism = decode[(decode[cc.ENTRY] == H200) & (decode[cc.CONC] == 64)]
        mismatch_id = str(mism[cc.WORKLOAD_ID].iloc[0])
        store.crossval.add_outcomes(
            [
                {
                    "workload_id": mismatch_id,
                    "tps_per_user_deployed": 100.0,
                    "tps_per_user_candidate": 110.0,
                    "source": "e2e run 1",
                }
            ]
        )
    finally:
        store.close()
    return db_url, mismatch_id


@pytest.fixture(scope="module")
def server(prepared: tuple[str, str]) -> Iterator[str]:
    from tests.factories.servers import running_server

    with running_server(prepared[0]) as base:
        yield base


def _wait_rows(page: object, n: int) -> None:
    """Wait until the ledger grid displays ``n`` rows (AG Grid's own count: the DOM only
    holds the rows in view)."""
    page.wait_for_function(  # type: ignore[attr-defined]
        """n => { try { return window.dash_ag_grid.getApi('cv-ledger-grid')
                              .getDisplayedRowCount() === n; } catch (e) { return false; } }""",
        arg=n,
        timeout=20_000,
    )


def _download(page: object, button: str, tmp_path: Path, name: str) -> str:
    with page.expect_download() as info:  # type: ignore[attr-defined]
        page.locator(button).click()  # type: ignore[attr-defined]
    assert info.value.suggested_filename == name
    path = tmp_path / name
    info.value.save_as(path)
    return path.read_text()


def test_crossval_page_renders_filters_and_downloads(
    server: str, prepared: tuple[str, str], browser: object, tmp_path: Path
) -> None:
    mismatch_id = prepared[1]
    page = browser.new_page(
        viewport={"width": 1440, "height": 1100},  # type: ignore[attr-defined]
        accept_downloads=True,
    )
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/crossval", wait_until="networkidle")

    # navigation link and the method line
    assert page.locator("a.nav-link", has_text="Cross validation").count() == 1
    method = page.locator("[data-testid=cv-method]").inner_text()
    assert "Match" in method and "±band" in method

    # summary table in the guide's format
    page.wait_for_selector("#cv-summary-grid tbody tr", timeout=30_000)
    headers = page.locator("#cv-summary-grid th").all_inner_texts()
    for h in (
        "Model",
        "Hardware",
        "Match (count, %, prefill, decode)",
        "Mismatch",
        "Improvement",
        "Flat",
        "Regression",
        "Regression after Perfect Routing",
    ):
        assert h in headers, headers
    summary = page.locator("#cv-summary-grid").inner_text()
    assert "1/2 (50%, prefill 0/0, decode 1/2)" in summary
    assert "DeepSeek-R1" in summary and "H200" in summary
    scope = page.locator("[data-testid=cv-summary-scope]").inner_text()
    assert "±3 %" in scope

    # the status chart drew
    page.wait_for_selector("#cv-status-graph .main-svg", timeout=15_000)
    assert page.locator("#cv-status-graph .barlayer .trace").count() == 3

    # ledger: the 20 mappable workloads, Match first (not mappable hidden by default)
    page.wait_for_selector("#cv-ledger-grid .ag-row", timeout=30_000)
    _wait_rows(page, 20)
    # the grid took the place of the ledger's HTML first page (which held its rows)
    page.wait_for_selector("#cv-ledger-grid-box.ledger-ready", timeout=15_000)
    assert page.locator("#cv-ledger-static-box").is_hidden()
    assert page.locator("#cv-ledger-grid .ag-row").first.is_visible()
    static_first = page.locator("#cv-ledger-static tbody tr").first.locator("td")
    assert static_first.nth(0).text_content() == "Match"
    count = page.locator("[data-testid=cv-ledger-count]").inner_text()
    assert count.startswith("20 workloads: 1 Match, 1 Mismatch, 18 no data")
    assert "1 with a stored end-to-end outcome" in count
    first = page.evaluate(
        "() => window.dash_ag_grid.getApi('cv-ledger-grid').getDisplayedRowAtIndex(0).data"
    )
    assert first[cc.STATUS] == "Match" and first[cc.REASON].startswith("Match (exact)")
    groups = page.evaluate(
        "() => window.dash_ag_grid.getApi('cv-ledger-grid').getColumnDefs().map(g => g.headerName)"
    )
    assert groups[:7] == [
        "status",
        "reason",
        "Workload",
        "Deployed (serving recipe)",
        "bench_moe best (lowest score)",
        "Deployed vs best",
        "End to end (stored outcome)",
    ]

    # a screenshot of the full view for a person
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "crossval.png"), full_page=True)

    # filter: status = Mismatch narrows the ledger to one row and writes the URL
    page.locator("#cv-status").click()
    page.get_by_role("option", name="Mismatch", exact=True).click()
    page.keyboard.press("Escape")
    _wait_rows(page, 1)
    page.wait_for_url("**status=Mismatch**", timeout=10_000)
    row = page.evaluate(
        "() => window.dash_ag_grid.getApi('cv-ledger-grid').getDisplayedRowAtIndex(0).data"
    )
    assert (row[cc.WORKLOAD_ID], row[cc.DIFFERS], row[cc.OUTCOME]) == (
        mismatch_id,
        "backend: CUTLASS->TRTLLM",
        "Improvement",
    )
    assert row[cc.DEPLOYED_GAP_PCT] == 100.0
    page.locator("#cv-ledger-grid .ag-row", has_text="Mismatch").first.wait_for(timeout=15_000)
    # the summary keeps its model/hardware scope (status filters the ledger only)
    assert "1/2 (50%, prefill 0/0, decode 1/2)" in page.locator("#cv-summary-grid").inner_text()

    # ledger CSV = the filtered ledger
    rows = list(
        csv.DictReader(
            io.StringIO(
                _download(page, "#cv-ledger-csv-btn", tmp_path, "crossval-ledger-exact.csv")
            )
        )
    )
    assert [r[cc.WORKLOAD_ID] for r in rows] == [mismatch_id]
    assert rows[0][cc.OUTCOME] == "Improvement" and rows[0][cc.DIFFERS] == (
        "backend: CUTLASS->TRTLLM"
    )
    # summary CSV in the API's columns
    summ = list(
        csv.DictReader(
            io.StringIO(
                _download(page, "#cv-summary-csv-btn", tmp_path, "crossval-summary-exact.csv")
            )
        )
    )
    h200 = [r for r in summ if r["Hardware"] == "H200"]
    assert h200[0]["Match"] == "1/2 (50%, prefill 0/0, decode 1/2)"
    assert h200[0]["Improvement"] == "1/1"

    # band: ±15 % turns the +10 % Improvement Flat (typed into the number box)
    band = page.locator("#cv-band")
    band.fill("15")
    band.press("Enter")
    page.wait_for_url("**band=15**", timeout=10_000)
    page.wait_for_function(
        """() => { try { return window.dash_ag_grid.getApi('cv-ledger-grid')
                     .getDisplayedRowAtIndex(0).data.outcome === 'Flat'; }
                   catch (e) { return false; } }""",
        timeout=15_000,
    )

    # the permalink restores the filters in a fresh page
    link = page.url
    assert "status=Mismatch" in link and "band=15" in link
    again = browser.new_page(viewport={"width": 1440, "height": 900})  # type: ignore[attr-defined]
    again.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    again.on("pageerror", lambda e: errors.append(str(e)))
    again.goto(link, wait_until="networkidle")
    again.wait_for_selector("#cv-ledger-grid .ag-row", timeout=30_000)
    _wait_rows(again, 1)
    assert again.locator("#cv-band").input_value() == "15"
    assert (
        again.evaluate(
            "() => window.dash_ag_grid.getApi('cv-ledger-grid')"
            ".getDisplayedRowAtIndex(0).data.outcome"
        )
        == "Flat"
    )

    # rule within_noise at a 100 % band: the 100 %-slower deployed config is a Match, so
    # the status=Mismatch view of this permalink empties
    rule = again.locator("#cv-rule")
    rule.click()
    again.get_by_role("option", name="within_noise", exact=True).click()
    again.keyboard.press("Escape")
    noise = again.locator("#cv-noise")
    noise.fill("100")
    noise.press("Enter")
    again.wait_for_url("**rule=within_noise**noise=100**", timeout=10_000)
    again.wait_for_selector("[data-testid=cv-ledger-empty]", timeout=20_000)
    assert "within_noise" in again.locator("#cv-rules-grid").inner_text()
    assert "2/2 (100%" in again.locator("#cv-summary-grid").inner_text()

    # a filter with nothing left: its own empty state
    again.goto(f"{server}/crossval?hardware=GB300&status=Match", wait_until="networkidle")
    again.wait_for_selector("[data-testid=cv-ledger-empty]", timeout=20_000)
    again.close()

    # the toggle shows the not-mappable rows too (after the mappable ones)
    page.goto(f"{server}/crossval", wait_until="networkidle")
    page.wait_for_selector("#cv-ledger-grid .ag-row", timeout=30_000)
    page.get_by_label("show rows without mapped workloads").check()
    page.wait_for_url("**show=all**", timeout=10_000)
    _wait_rows(page, 32)
    last = page.evaluate(
        "() => window.dash_ag_grid.getApi('cv-ledger-grid').getDisplayedRowAtIndex(31).data"
    )
    assert last[cc.STATUS] == "not mappable"
    # every ledger row in the grid (here all 32 fit in the first page anyway): a permalink
    assert page.locator("[data-testid=cv-ledger-first-page]").count() == 0
    page.get_by_label("every ledger row in the grid").check()
    page.wait_for_url("**rows=all**", timeout=10_000)
    _wait_rows(page, 32)

    # no clipped cell in the summary: every Match cell's text fits its cell
    page.wait_for_selector("#cv-summary-grid tbody tr", timeout=30_000)
    clipped = page.evaluate(
        """() => [...document.querySelectorAll('#cv-summary-grid td')]
                 .filter(c => c.scrollWidth > c.clientWidth + 1
                              || c.scrollHeight > c.clientHeight + 1)
                 .map(c => c.innerText)"""
    )
    assert clipped == [], clipped

    # the guide's table beside ours, and the sweeps script for the slice
    assert "DeepSeek-V4-Pro" in page.locator("#cv-guide-grid").inner_text()
    page.wait_for_selector("#cv-sweeps-grid tbody tr", timeout=30_000)
    script = _download(page, "#cv-sweeps-sh-btn", tmp_path, "crossval-sweeps-all-all-all.sh")
    assert script.startswith("#!/bin/sh") and "python3 -m bench_moe" in script

    assert errors == [], errors
    page.close()


def test_crossval_page_shows_the_previous_ledger_while_the_new_one_is_computed(
    browser: object, tmp_path: Path
) -> None:
    """Sweeps stored after the ledger (as right after an upload): the first view shows the
    stored ledger with the "Updating…" note, then redraws by itself once the refresh
    has stored the new one."""
    from tests.factories.servers import running_server

    db_url = f"duckdb:///{tmp_path / 'stale.duckdb'}"
    store = open_store(db_url)
    try:
        import_serving_directory(store, FIXTURE, "fixture")  # ledger stored: nothing compared
        ingest_h200_candidates(store)  # not refreshed: the stored ledger predates it
    finally:
        store.close()
    # no warm-up at start: it would bring the ledger up to date before the first view
    with running_server(db_url, env={"MOEDASH_WARM_CACHE": "false"}) as base:
        page = browser.new_page(viewport={"width": 1440, "height": 1000})  # type: ignore[attr-defined]
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/crossval")
        note = page.locator("[data-testid=cv-stale]")
        note.wait_for(timeout=30_000)
        assert "Updating" in note.inner_text() and "previous ledger" in note.inner_text()
        count = page.locator("[data-testid=cv-ledger-count]")
        assert count.inner_text().startswith("20 workloads: 20 no data")  # the previous one
        # the background refresh stores the new ledger; the page polls and redraws
        note.wait_for(state="detached", timeout=30_000)
        page.wait_for_function(
            """() => { const c = document.querySelector('[data-testid=cv-ledger-count]');
                       return c && c.innerText.startsWith('20 workloads: 1 Match, 1 Mis'); }""",
            timeout=30_000,
        )
        assert "1/2 (50%" in page.locator("#cv-summary-grid").inner_text()
        assert errors == [], errors
        page.close()


def test_crossval_page_without_imports(browser: object, tmp_path: Path) -> None:
    from tests.factories.servers import running_server

    db_url = f"duckdb:///{tmp_path / 'empty.duckdb'}"
    open_store(db_url).close()
    with running_server(db_url) as base:
        page = browser.new_page()  # type: ignore[attr-defined]
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{base}/crossval", wait_until="networkidle")
        box = page.locator("[data-testid=cv-no-imports]")
        box.wait_for(timeout=20_000)
        text = box.inner_text()
        assert "moedash import-serving" in text and "POST /api/v1/serving-configs" in text
        assert errors == [], errors
        page.close()
