"""Accessibility of every page (issue 13): axe-core (npm, pinned in moedash.assets) run in
headless Chromium over a `moedash serve` that loaded the published snapshot, with no
serious or critical violation; and the page shell: ``lang``, landmarks, a skip link that
appears on focus and moves the focus to the page, the navigation usable by keyboard.

Every violation axe finds (any impact) is printed; with ``MOEDASH_AXE_REPORT=<file>``
they are also appended to that file, one block per page, so they can be routed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dashboard.app import PAGES
from moedash.assets import AXE_CORE, fetch
from tests.factories.servers import running_server

pytestmark = pytest.mark.browser

# every routed page; /run with a run of the snapshot (id filled in by the fixture)
PATHS = list(PAGES)
BLOCKING = ("serious", "critical")
AXE_OPTIONS = {
    "runOnly": {
        "type": "tag",
        "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"],
    },
    "resultTypes": ["violations"],
}
# a page is settled when Dash has no callback in flight and nothing is marked loading
SETTLED = (
    "() => !document.querySelector('._dash-loading, [data-dash-is-loading=\"true\"]')"
    " && document.querySelector('#page *') !== null"
)


@pytest.fixture(scope="module")
def axe_source() -> str:
    """axe-core's browser build, fetched from the npm registry on first use (pinned
    version and sha512; cached in the virtualenv)."""
    try:
        return fetch(AXE_CORE).read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        pytest.fail(f"axe-core {AXE_CORE.version} unavailable (`make assets`): {exc}")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("a11y") / "fresh.duckdb"
    with running_server(f"duckdb:///{db}", demo=True, timeout=240) as url:
        yield url


@pytest.fixture(scope="module")
def run_id(base: str) -> int:
    runs = httpx.get(f"{base}/api/v1/runs", params={"limit": 1}, timeout=30).json()
    items = runs["items"] if isinstance(runs, dict) else runs
    return int(items[0]["run_id"] if "run_id" in items[0] else items[0]["id"])


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


def _open(page: Any, url: str) -> None:
    page.goto(url, wait_until="networkidle", timeout=120_000)
    page.wait_for_function(SETTLED, timeout=60_000, polling=100)
    page.wait_for_load_state("networkidle")


def _describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for v in violations:
        lines.append(f"  [{v['impact']}] {v['id']}: {v['help']} ({len(v['nodes'])} nodes)")
        for node in v["nodes"][:5]:
            lines.append(f"      {' '.join(map(str, node['target']))}")
            summary = (node.get("failureSummary") or "").replace("\n", " ")[:240]
            if summary:
                lines.append(f"        {summary}")
    return "\n".join(lines)


def _report(path: str, violations: list[dict[str, Any]]) -> None:
    text = f"{path}: {len(violations)} violation(s)\n{_describe(violations)}\n"
    print(text)
    target = os.environ.get("MOEDASH_AXE_REPORT")
    if target:
        with Path(target).open("a", encoding="utf-8") as fh:
            fh.write(text + "\n")


@pytest.mark.parametrize("path", PATHS)
def test_page_has_no_serious_axe_violation(
    base: str, run_id: int, page: Any, axe_source: str, path: str
) -> None:
    _open(page, base + path + (f"?id={run_id}" if path == "/run" else ""))
    page.add_script_tag(content=axe_source)
    result = page.evaluate("(options) => axe.run(document, options)", AXE_OPTIONS)
    violations = result["violations"]
    _report(path, violations)
    blocking = [v for v in violations if v["impact"] in BLOCKING]
    assert blocking == [], f"{path}: serious/critical axe violations\n{_describe(blocking)}"
    # one page title as the top heading, for screen readers' heading navigation
    titles = page.locator("h1")
    assert titles.count() == 1 and titles.first.inner_text().strip(), f"{path}: one <h1>"


def test_page_shell_language_and_landmarks(base: str, page: Any) -> None:
    _open(page, base + "/")
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.locator("header nav[aria-label]").count() == 1
    assert page.locator("main#page").count() == 1
    assert page.title() == "moedash"


def test_skip_link_is_first_shown_on_focus_and_moves_focus(base: str, page: Any) -> None:
    _open(page, base + "/pareto")
    skip = page.locator("a.skip-link")
    assert skip.bounding_box()["y"] < 0  # off screen until focused
    page.keyboard.press("Tab")
    page.wait_for_function("document.activeElement.classList.contains('skip-link')")
    box = skip.bounding_box()
    assert box["y"] >= 0 and box["height"] > 10  # visible now
    redraws: list[str] = []  # the router drawing the page again (it took the focus once)
    page.on(
        "request",
        lambda r: (
            redraws.append(r.url)
            if "_dash-update-component" in r.url and "page.children" in (r.post_data or "")
            else None
        ),
    )
    page.keyboard.press("Enter")
    page.wait_for_function("document.activeElement.id === 'page'", timeout=10_000)
    # the next Tab lands inside the page, past the navigation
    page.keyboard.press("Tab")
    page.wait_for_function(
        "document.getElementById('page').contains(document.activeElement)"
        " && document.activeElement.id !== 'page'",
        timeout=10_000,
    )
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("#page") and "/pareto" in page.url
    assert redraws == [], "the skip link made the router draw the page again"


def test_navigation_works_by_keyboard_alone(base: str, page: Any) -> None:
    _open(page, base + "/")
    labels = []
    for _ in range(4):  # skip link, brand is not focusable, then Overview, Pareto
        page.keyboard.press("Tab")
        labels.append(page.evaluate("document.activeElement.textContent"))
    assert labels[:3] == ["Skip to main content", "Overview", "Pareto"], labels
    ring = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert ring != "none"  # a visible focus indicator
    page.keyboard.press("Shift+Tab")  # back to Pareto
    page.keyboard.press("Enter")
    page.wait_for_url("**/pareto**", timeout=30_000)
    page.wait_for_function(SETTLED, timeout=60_000, polling=100)
    assert page.locator("#page h1").first.text_content()


def _name(page: Any, selector: str) -> str:
    """The text of the elements an element's aria-labelledby names (its accessible name)."""
    return page.evaluate(
        """(sel) => { const el = document.querySelector(sel);
            return (el.getAttribute('aria-labelledby') || '').split(' ').filter(Boolean)
              .map(id => document.getElementById(id)).filter(Boolean)
              .map(e => e.textContent.trim()).join(' '); }""",
        selector,
    )


def test_dash_controls_are_named_by_their_labels_and_work_by_keyboard(base: str, page: Any) -> None:
    """static/a11y.js: a dropdown is a Tab stop named "<label> <value>" that opens with
    Enter; radio items are a radiogroup named by their label, options plain labels."""
    _open(page, base + "/pareto")
    button = "button.dash-dropdown"
    first = page.locator(button).first
    button_id = first.get_attribute("id")
    label = page.locator(f"label[for='{button_id}']").first.text_content() or ""
    name = _name(page, f"#{button_id}")
    assert label and name.startswith(label.strip()), (label, name)
    assert first.get_attribute("tabindex") == "0"
    assert page.locator(".dash-dropdown-focus-target[tabindex='0']").count() == 0
    for _ in range(60):  # Tab from the top until the dropdown has the focus
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == button_id:
            break
    else:
        pytest.fail(f"Tab never reached #{button_id}")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#{button_id}[aria-expanded='true']", timeout=10_000)
    page.keyboard.press("Escape")
    radios = page.locator(".dash-radioitems")
    assert radios.count() > 0
    for i in range(radios.count()):
        group = radios.nth(i)
        assert group.get_attribute("role") == "radiogroup"
        gid = group.get_attribute("id")
        assert _name(page, f"#{gid}"), f"radio group #{gid} has no name"
    assert page.locator(".dash-options-list-option[role]").count() == 0


def test_every_page_fits_800_px_without_sideways_scrolling(
    base: str, run_id: int, browser: Any
) -> None:
    """Issue 13: usable at 800 px. Wide content may scroll inside its own box (grids,
    ``.scroll-x``); the page itself must not."""
    context = browser.new_context(viewport={"width": 800, "height": 900})
    page = context.new_page()
    wide: dict[str, int] = {}
    try:
        for path in PATHS:
            _open(page, base + path + (f"?id={run_id}" if path == "/run" else ""))
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > page.evaluate("document.documentElement.clientWidth"):
                wide[path] = width
    finally:
        context.close()
    assert wide == {}, f"pages wider than 800 px (scrollWidth): {wide}"


def test_a_clicked_dropdown_filters_as_you_type(base: str, page: Any) -> None:
    """Click a dropdown, type part of a name: the list keeps the matching options (the
    search box takes the focus when the list opens, static/a11y.js)."""
    _open(page, base + "/best")
    page.locator("#best-cell").click()
    search = page.locator(".dash-dropdown-content input.dash-dropdown-search")
    search.wait_for(timeout=15_000)
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.matches('.dash-dropdown-search')",
        timeout=5_000,
    )
    options = page.locator(".dash-dropdown-content [role=option]")
    assert options.count() >= 2  # the published cells
    page.keyboard.type("kimi")
    page.wait_for_function(
        """() => {
            const o = document.querySelectorAll('.dash-dropdown-content [role=option]');
            return o.length > 0 && Array.from(o).every(e => e.innerText.includes('kimi'));
        }""",
        timeout=10_000,
    )
    page.keyboard.press("Escape")
