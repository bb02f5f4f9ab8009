"""The /recommend page in real headless Chromium at 800 px: no horizontal overflow, the
form's controls named by their labels (as the browser computes accessible names), and
the chart PNG and the YAML downloaded under names that say what they hold."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from db.store import open_store
from tests.factories.dashboard import seed_store
from tests.factories.servers import running_server

pytestmark = pytest.mark.browser

KNOWN = "?hardware=GB300&model=deepseek_v4_pro&quant=NVFP4&ws=8&attn=DP&phase=decode&tokens=1024"
SLICE = "deepseek_v4_pro-gb300-nvfp4-8-gpus-decode"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db_url = f"duckdb:///{tmp_path_factory.mktemp('recommend') / 'store.duckdb'}"
    store = open_store(db_url)
    try:
        seed_store(store)
    finally:
        store.close()
    with running_server(db_url) as url:
        yield url


@pytest.fixture
def narrow(browser: Any) -> Iterator[Any]:
    """An 800 px wide page (downloads allowed) collecting console and page errors."""
    context = browser.new_context(viewport={"width": 800, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    context.close()


def _open(pg: Any, url: str) -> None:
    pg.goto(url)
    pg.wait_for_selector("[data-testid=rec-measured]", timeout=60_000)
    pg.wait_for_selector("#rec-evidence .main-svg", timeout=30_000)
    pg.wait_for_load_state("networkidle")
    pg.wait_for_function("() => !document.querySelector('._dash-loading')")


def test_recommend_fits_800_px_and_names_its_controls(base: str, narrow: Any) -> None:
    _open(narrow, base + "/recommend" + KNOWN)
    width = narrow.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert width[0] <= width[1], f"horizontal overflow at 800 px: {width}"
    # the wide tables scroll inside their own box instead
    for test_id in ("rec-measured", "rec-thresholds"):
        box = narrow.locator(f"[data-testid={test_id}]").locator("xpath=..")
        assert box.evaluate("e => getComputedStyle(e).overflowX") == "auto"
    # accessible names, as Chromium computes them: label text, not only the value
    assert narrow.get_by_role("spinbutton", name="world size (GPUs)", exact=True).count() == 1
    assert narrow.get_by_role("spinbutton", name=re.compile(r"^num_tokens \(tokens")).count() == 1
    assert narrow.get_by_role("button", name="model deepseek_v4_pro", exact=True).count() == 1
    assert narrow.get_by_role("button", name="GPU / system GB300", exact=True).count() == 1
    assert narrow.get_by_role("radiogroup", name="phase", exact=True).count() == 1
    # keyboard: Tab reaches the world size input
    narrow.locator("#rec-quant").focus()
    for _ in range(6):
        if narrow.evaluate("() => document.activeElement.id") == "rec-ws":
            break
        narrow.keyboard.press("Tab")
    assert narrow.evaluate("() => document.activeElement.id") == "rec-ws"
    assert narrow.errors == []


def test_png_and_yaml_downloads_are_named_for_the_deployment(
    base: str, narrow: Any, tmp_path: Path
) -> None:
    _open(narrow, base + "/recommend" + KNOWN)
    graph = narrow.locator("#rec-path-graph")
    graph.hover()
    with narrow.expect_download(timeout=30_000) as png:
        graph.locator(".modebar-btn[data-title*='png' i]").click()
    assert png.value.suggested_filename == f"threshold-vs-observed-value-{SLICE}.png"
    saved = tmp_path / "chart.png"
    png.value.save_as(saved)
    assert saved.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with narrow.expect_download() as yml:
        narrow.click("#rec-yaml-btn")
    assert yml.value.suggested_filename == (
        "moe_config_deepseek_v4_pro_GB300_NVFP4_ws8_decode_1024tok_tree.yaml"
    )
    assert Path(yml.value.path()).read_text().startswith("# moedash recommended")
    assert narrow.errors == []
