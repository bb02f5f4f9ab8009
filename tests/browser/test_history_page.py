"""The /history page in real headless Chromium against a real `moedash serve`.

The DuckDB file holds the three-version sweeps of tests/factories/version_sweeps.py.
What a person does: open the page (it lands on the slice with the most versions), see
the best of each workload over rc9 → rc27 → rc28 (version order, not text order) and
the frontier change in numbers, pick one workload and one configuration from the
lists, pick another base version, download the CSV and check it, reopen the permalink.
The console stays clean. Saves artifacts/screenshots/history.png.
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
CONFIG = "TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1"
TRACES = """() => { const g = document.querySelector('#hist-graph .js-plotly-plot');
    return g && g.data ? g.data.map(t => ({name: t.name, x: t.x, y: t.y})) : null; }"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.factories.servers import running_server

    db_url = f"duckdb:///{tmp_path_factory.mktemp('history') / 'store.duckdb'}"
    store = open_store(db_url)
    try:
        V.seed_versions(store)
    finally:
        store.close()  # DuckDB: one process per file
    with running_server(db_url) as base:
        yield base


def _traces(page: Any, n: int) -> list[dict[str, Any]]:
    page.wait_for_function(f"() => ({TRACES})() && ({TRACES})().length === {n}", timeout=30_000)
    got: list[dict[str, Any]] = page.evaluate(TRACES)
    return got


def _pick(page: Any, control: str, option: str) -> None:
    page.locator(f"#{control}").click()
    page.get_by_role("option", name=option, exact=True).click()


def test_history_select_read_download_and_permalink(
    server: str, page: Any, browser: Any, tmp_path: Path
) -> None:
    page.goto(server + "/history", wait_until="networkidle")
    nav = page.locator("a.nav-link", has_text="History")
    nav.first.wait_for(timeout=30_000)
    assert nav.count() == 1
    page.wait_for_url("**phase=decode**base=1.2.0rc27&head=1.2.0rc28**", timeout=30_000)
    traces = _traces(page, 2)
    assert all(t["x"] == [V.RC9, V.RC27, V.RC28] for t in traces)
    numbers = page.locator("[data-testid=hist-fc-numbers]")
    numbers.wait_for(timeout=20_000)
    assert "+11.11 %" in numbers.inner_text() and "ms·tokens/s/GPU" in numbers.inner_text()
    frontier = page.locator("#hist-frontier-graph")
    assert "TensorRT-LLM version" in frontier.inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "history.png"), full_page=True)

    # one workload, then one configuration of it: TRTLLM went 1.0 → 1.0 → 1.2 ms
    _pick(page, "hist-num_tokens", "256 tokens")
    page.wait_for_url("**num_tokens=256**", timeout=15_000)
    _traces(page, 1)
    _pick(page, "hist-config", CONFIG)
    page.wait_for_url("**config=TRTLLM**", timeout=15_000)
    page.wait_for_function(
        f"() => {{ const t = ({TRACES})(); return t && t.length === 1 && t[0].y[2] === 1.2; }}",
        timeout=20_000,
    )
    assert _traces(page, 1)[0]["y"] == [1.0, 1.0, 1.2]

    # the frontier change from the oldest version
    _pick(page, "hist-base", "version 1.2.0rc9 · 1 run · 2026-08-01")
    page.wait_for_url("**base=1.2.0rc9**", timeout=15_000)
    page.get_by_text("From 1.2.0rc9 to 1.2.0rc28", exact=False).wait_for(timeout=20_000)

    # the CSV holds the charted points, named for the slice and the workload
    with page.expect_download() as info:
        page.locator("#hist-csv-btn").click()
    name = "history-scores-deepseek_v4_pro-gb300-nvfp4-ws8-decode-256tok.csv"
    assert info.value.suggested_filename == name
    path = tmp_path / name
    info.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert [(r["trtllm_version"], float(r["score_ms"])) for r in rows] == [
        (V.RC9, 1.0),
        (V.RC27, 1.0),
        (V.RC28, 1.2),
    ]
    assert {r["config"] for r in rows} == {CONFIG}

    # the permalink restores every control in a fresh page
    again = browser.new_page(viewport={"width": 1440, "height": 1000})
    again.on("pageerror", lambda e: page.errors.append(str(e)))
    again.goto(page.url, wait_until="networkidle")
    assert _traces(again, 1)[0]["y"] == [1.0, 1.0, 1.2]
    assert CONFIG in again.locator("#hist-config").inner_text()
    assert "1.2.0rc9" in again.locator("#hist-base").inner_text()
    again.close()
    assert page.errors == [], page.errors
