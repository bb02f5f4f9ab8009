"""The /planner page in real headless Chromium against a real `moedash serve`.

Loads the page, edits the form (heterogeneous H20 + L40S), submits it, and checks the
best-plan table, the constraint table, both charts, the URL permalink and the JSON
download, with no console errors. Saves artifacts/screenshots/planner.png.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from db.store import open_store
from tests.api.test_api_planner import ingest_linear
from tests.factories.servers import running_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db_url = f"duckdb:///{tmp_path_factory.mktemp('planner') / 'store.duckdb'}"
    store = open_store(db_url)
    try:
        ingest_linear(store, hardware="H20")
    finally:
        store.close()
    with running_server(db_url) as base:
        yield base


def test_planner_page_plans_and_renders(server: str, browser: object, tmp_path: Path) -> None:
    page = browser.new_page(
        viewport={"width": 1440, "height": 1000},  # type: ignore[attr-defined]
        accept_downloads=True,
    )
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/planner", wait_until="networkidle")

    # the initial plan of the defaults renders first
    page.wait_for_selector("[data-testid=planner-best]", timeout=30_000)
    assert page.locator("a.nav-link", has_text="Planner").count() == 1

    # edit the form: add L40S, heterogeneous, SLO 100 ms, then submit
    page.locator("#plan-gpus").click()
    page.get_by_role("option", name="L40S").click()
    page.keyboard.press("Escape")
    # edit the L40S price in the GPU grid (the callback adds its row first)
    page.get_by_text("GPU figures", exact=False).click()
    cell = page.locator("#plan-gpu-grid .ag-row[row-index='1'] [col-id=price]")
    cell.wait_for(timeout=10_000)
    assert page.locator("#plan-gpu-grid .ag-row[row-index='1'] [col-id=gpu]").inner_text() == "L40S"
    cell.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("1.2")
    page.keyboard.press("Enter")
    page.get_by_label("heterogeneous", exact=False).check()
    slo = page.locator("#plan-slo")
    slo.fill("100")
    slo.press("Tab")
    page.locator("#plan-run").click()
    page.wait_for_function(
        "() => document.querySelector('#plan-status') && "
        "document.querySelector('#plan-status').textContent.includes('heterogeneous')",
        timeout=60_000,
    )

    page.wait_for_selector("#plan-run:not([disabled])")
    best = page.locator("[data-testid=planner-best]")
    best.wait_for(state="visible")
    text = best.inner_text()
    assert "attention" in text and "experts" in text and "TBT (ms)" in text and "SLO 100" in text
    constraints = page.locator("[data-testid=planner-constraints]").inner_text()
    for label in ("Ta ≈ Te", "Tc < Tf", "m ≥ 2·(1 + Tc/Tf)"):
        assert label in constraints
    assert "met" in constraints
    fits = page.locator("[data-testid=planner-fits]").inner_text()
    assert "fit" in fits and "H20" in fits and "L40S" in fits and "roofline" in fits
    assert page.locator("[data-testid=planner-colocated]").count() == 1
    assert page.locator("[data-testid=planner-verdict]").inner_text().startswith("disaggregation")

    # both charts drew (plotly adds .main-svg with traces)
    for graph in ("#plan-sweep", "#plan-timeline"):
        page.wait_for_selector(f"{graph} .main-svg", timeout=15_000)
    assert page.locator("#plan-sweep .scatterlayer .trace").count() >= 2
    assert page.locator("#plan-timeline .barlayer .trace").count() >= 2
    assert page.locator("#plan-alts .ag-row").count() >= 1

    # the URL is a permalink of the submitted form
    assert "mode=heterogeneous" in page.url and "gpu=L40S" in page.url and "slo=100" in page.url
    assert "L40S.price=1.2" in page.url

    # JSON download matches the page
    with page.expect_download() as info:
        page.locator("#plan-download-btn").click()
    path = tmp_path / "plan.json"
    info.value.save_as(path)
    doc = json.loads(path.read_text())
    assert doc["mode"] == "heterogeneous" and doc["workload"]["slo_tbt_ms"] == 100
    assert {g["name"]: g["price"] for g in doc["gpus"]} == {"H20": 1.85, "L40S": 1.2}
    assert doc["best"]["constraints"][0]["label"] == "Ta ≈ Te"

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "planner.png"), full_page=True)
    assert not errors, errors
    page.close()


def test_planner_permalink_and_bound(server: str, browser: object) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    # a permalink with an edited GPU price plans on load and keeps the edit
    page.goto(
        f"{server}/planner?model=dbrx&gpu=H20&H20.price=1.2&slo=120", wait_until="networkidle"
    )
    page.wait_for_selector("[data-testid=planner-best]", timeout=30_000)
    assert page.locator("#plan-status").inner_text().count("dbrx") == 1
    assert "H20.price=1.2" in page.url
    # a GPU cap and a near-best band from the URL: the plan respects the cap
    page.goto(f"{server}/planner?gpu=H20&cap=20&near=5&cb=3&sens=1", wait_until="networkidle")
    page.wait_for_selector("[data-testid=planner-near-best]", timeout=30_000)
    assert page.locator("#plan-cap").input_value() == "20"
    assert page.locator("#plan-cb").input_value() == "3"
    assert "#3" in page.locator("[data-testid=planner-compare]").inner_text()
    assert "price x1.2" in page.locator("[data-testid=planner-sensitivity]").inner_text()
    near = page.locator("[data-testid=planner-near-best]").inner_text()
    assert "within 5 %" in near
    # a search over its work estimate: refused, naming what to reduce
    page.goto(
        f"{server}/planner?gpu=GB300&gpu=B200&gpu=B300&gpu=H200&mode=heterogeneous&nm=8",
        wait_until="networkidle",
    )
    err = page.wait_for_selector("[data-testid=planner-error]", timeout=30_000)
    assert "plan evaluations" in err.inner_text() and "gpus" in err.inner_text()
    assert not errors, errors
    page.close()
