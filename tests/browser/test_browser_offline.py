"""Nothing leaves the machine (issue 13): every page and /docs, in headless Chromium over
a `moedash serve` that loaded the published snapshot, requests only the app's own host;
no chart offers Plotly's cloud upload or the plotly.com logo link."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from dashboard.app import PAGES
from tests.factories.servers import running_server

pytestmark = pytest.mark.browser

# /run needs a run; the published snapshot's runs have ids 1..48
PATHS = [p + ("?run_id=1" if p == "/run" else "") for p in PAGES] + ["/docs"]
# plotly.js 4: "Share chart..." (sendChartToCloud); older: "Edit in Chart Studio"
_CLOUD = (
    ".modebar-btn[data-title*='Share' i], .modebar-btn[data-title*='Chart Studio' i], "
    ".modebar-btn[data-title*='cloud' i]"
)
_LOGO = ".modebar a[href*='plotly.com'], .modebar a[href*='plot.ly'], .modebar-btn--logo"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("offline") / "fresh.duckdb"
    with running_server(f"duckdb:///{db}", demo=True, timeout=180) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


@pytest.mark.parametrize("path", PATHS)
def test_page_requests_only_its_own_host(base: str, page: Any, path: str) -> None:
    own = urlsplit(base).netloc
    foreign: list[str] = []

    def on_request(request: Any) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in ("data", "blob", "about"):
            return  # inline, not a network request
        if parts.netloc != own:
            foreign.append(request.url)

    page.on("request", on_request)
    page.goto(base + path, wait_until="networkidle", timeout=90_000)
    if path == "/docs":
        page.wait_for_selector(".swagger-ui .info", timeout=30_000)
    else:
        page.wait_for_selector("#page *", timeout=30_000)
        page.wait_for_load_state("networkidle")
    assert foreign == [], f"{path} requested other hosts: {foreign}"
    assert page.locator(_CLOUD).count() == 0, f"{path}: a cloud/Chart Studio button"
    assert page.locator(_LOGO).count() == 0, f"{path}: the plotly logo link"


def test_the_snapshot_pages_have_charts(base: str, page: Any) -> None:
    """The modebar checks above look at real charts: Pareto draws one on first start."""
    page.goto(base + "/pareto", wait_until="networkidle", timeout=90_000)
    page.wait_for_selector(".js-plotly-plot .modebar", state="attached", timeout=60_000)
    title = page.locator(".js-plotly-plot .gtitle").first.text_content() or ""
    # model · GPU · quant · world size(s) · phase
    assert title.startswith("deepseek_v4_pro · B300 · NVFP4 · ") and "decode" in title, title
    # the PNG download is named after the title: model, GPU, quant come first
    page.hover("#pareto-graph .js-plotly-plot")
    with page.expect_download(timeout=30_000) as info:
        page.locator("#pareto-graph .modebar-btn[data-title*='png' i]").first.click(force=True)
    name = info.value.suggested_filename
    assert name.endswith(".png") and "deepseek" in name and "b300" in name.lower(), name
    shots = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "offline-pareto.png"))


@pytest.mark.parametrize(
    ("path", "button", "note", "reason"),
    [
        ("/routing", "#routing-csv-btn", "#routing-csv-note", "one routing pattern"),
        ("/compare", "#cmp-csv-btn", "#cmp-csv-note", "base"),
    ],
)
def test_a_download_with_nothing_to_download_says_why(
    base: str, page: Any, path: str, button: str, note: str, reason: str
) -> None:
    """The published snapshot has one routing pattern and one version per slice: the
    CSV buttons of Routing skew and Compare have nothing to give on first view, and a
    click says so next to the button instead of doing nothing."""
    downloads: list[Any] = []
    page.on("download", lambda d: downloads.append(d))
    page.goto(base + path, wait_until="networkidle", timeout=90_000)
    page.locator(button).click()
    said = page.locator(note)
    said.filter(has_text="Nothing to download").wait_for(timeout=30_000)
    assert reason in said.inner_text()
    assert said.get_attribute("role") == "status"
    assert downloads == []
