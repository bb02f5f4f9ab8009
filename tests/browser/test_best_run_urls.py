"""Best and Run pages in a real browser: a header click sorts, the URL then holds the
sort and a reload restores it; a floating filter goes to the URL too; the Best
details open from their group header; the Run page's raw download of an NVIDIA
dashboard-format run saves that run's rows only."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from analysis import columns as C
from db.store import open_store
from ingest.detect import parse_upload
from ingest.records import UploadMeta
from tests.factories.dashboard import seed_store
from tests.factories.servers import running_server

pytestmark = pytest.mark.browser

DATAJS = Path(__file__).resolve().parents[1] / "fixtures" / "dashboard" / "data.js"
BEST = "/best?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = tmp_path_factory.mktemp("grid-urls") / "moedash.duckdb"
    url = f"duckdb:///{db}"
    store = open_store(url)
    ids: dict[str, Any] = seed_store(store)
    raw = DATAJS.read_bytes()
    meta = UploadMeta(filename="/srv/ci/checkout/data.js")
    for ref in store.ingest(parse_upload(raw, meta), raw, meta).runs:
        run = store.get_run(ref.run_id)
        ids[(run[C.MODEL], int(run[C.WORLD_SIZE]))] = ref.run_id
    store.close()  # DuckDB: one process per file; the server opens it next
    with running_server(url) as base:
        yield {"base": base, **ids}


def _query(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def _column(page: Any, grid: str, col: str) -> list[str]:
    """The grid's cell texts of column ``col``, in displayed row order."""
    return page.evaluate(
        """([grid, col]) => Array.from(
            document.querySelectorAll(`#${grid} .ag-center-cols-container .ag-row`))
          .sort((a, b) => Number(a.getAttribute('row-index')) - Number(b.getAttribute('row-index')))
          .map(r => (r.querySelector(`[col-id="${col}"]`) || {}).textContent || '')""",
        [grid, col],
    )


def _displayed(page: Any) -> list[tuple[str, int]]:
    """(column id, width in px) of the Best grid's displayed columns, in order."""
    cols = page.evaluate(
        "() => dash_ag_grid.getApi('best-grid').getAllDisplayedColumns()"
        ".map(c => [c.getColId(), c.getActualWidth()])"
    )
    return [(str(c), int(w)) for c, w in cols]


def _wait_grid(page: Any, grid: str) -> None:
    page.wait_for_selector(f"#{grid} .ag-center-cols-container .ag-row", timeout=30_000)


def _sort_by(page: Any, grid: str, col: str, param: str) -> None:
    """Click the header of ``col`` (scrolled into view first: AG Grid draws only the
    columns on screen) and wait until the URL's ``sort`` is ``param``."""
    page.evaluate("([g, c]) => dash_ag_grid.getApi(g).ensureColumnVisible(c)", [grid, col])
    page.locator(f"#{grid} .ag-header-cell[col-id='{col}'] .ag-header-cell-label").click()
    page.wait_for_function(
        "(p) => new URLSearchParams(location.search).get('sort') === p", arg=param
    )


def test_best_sort_filter_and_details(server: dict[str, Any], page: Any) -> None:
    page.goto(server["base"] + BEST)
    _wait_grid(page, "best-grid")
    # the decision columns lead; the details open from the group header
    header = page.locator("#best-grid .ag-header-row-column .ag-header-cell-text")
    assert header.all_inner_texts()[:5] == ["num_tokens (tokens)", "parallel mode",
                                            "world size (GPUs)", "phase", "run"]  # fmt: skip
    shown = _displayed(page)
    # the confidence verdict opens the collapsed details and stays shown
    assert [c for c, _ in shown][5:10] == ["winner", "margin_pct", "runner_up", "tie_state",
                                            "confidence"]  # fmt: skip
    width = page.evaluate("() => document.querySelector('#best-grid').clientWidth")
    assert sum(w for _, w in shown) <= width  # the decision fits a 1440 px screen
    group = page.locator("#best-grid .ag-header-group-cell")
    assert group.get_attribute("aria-expanded") == "false"
    group.locator(".ag-header-expand-icon-collapsed").click()
    page.wait_for_function(
        "() => dash_ag_grid.getApi('best-grid').getAllDisplayedColumns()"
        ".some(c => c.getColId() === 'best_backend')"
    )
    assert group.get_attribute("aria-expanded") == "true"

    _sort_by(page, "best-grid", "margin_pct", "margin_pct:asc")
    margins = [float(m) for m in _column(page, "best-grid", "margin_pct") if m]
    assert margins == sorted(margins) and len(margins) >= 2
    page.reload()
    _wait_grid(page, "best-grid")
    assert _query(page)["sort"] == ["margin_pct:asc"]
    cell = page.locator("#best-grid [role=columnheader][col-id='margin_pct']")
    assert cell.get_attribute("aria-sort") == "ascending"
    assert [float(m) for m in _column(page, "best-grid", "margin_pct") if m] == margins

    # a filter typed into the floating filter goes to the URL and comes back
    page.locator("#best-grid .ag-floating-filter input").first.fill("256")
    page.wait_for_function("() => new URLSearchParams(location.search).has('filter')")
    model = json.loads(_query(page)["filter"][0])
    assert model[C.NUM_TOKENS]["filter"] == 256
    page.reload()
    _wait_grid(page, "best-grid")
    page.wait_for_function(
        "() => { const api = dash_ag_grid.getApi('best-grid'), f = api.getFilterModel();"
        " const n = []; api.forEachNodeAfterFilter(r => n.push(r.data.num_tokens));"
        " return f && f.num_tokens && n.length > 0 && n.every(t => t === 256); }",
        timeout=15_000,
    )
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll("
        "'#best-grid .ag-center-cols-container .ag-row [col-id=num_tokens]'))"
        ".every(c => c.textContent === '256')"
    )
    assert set(_column(page, "best-grid", C.NUM_TOKENS)) == {"256"}
    assert _query(page)["filter"] == [json.dumps(model, separators=(",", ":"))]
    assert page.errors == []


def test_run_raw_download_and_grid_sort(server: dict[str, Any], page: Any, tmp_path: Path) -> None:
    run_id = server[("tiny_moe", 4)]
    page.goto(f"{server['base']}/run?id={run_id}")
    _wait_grid(page, "run-grid")
    assert "/srv" not in page.locator("[data-testid=run-meta]").inner_text()
    with page.expect_download(timeout=30_000) as info:
        page.locator("#run-raw-link").click()
    assert info.value.suggested_filename == "tiny_moe_NVFP4_B300_ws4.csv"
    path = tmp_path / "rows.csv"
    info.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert [r["world_size"] for r in rows] == ["4", "4", "4"]
    assert len(path.read_bytes()) < len(DATAJS.read_bytes())

    _sort_by(page, "run-grid", C.SCORE_MS, f"{C.SCORE_MS}:asc")
    _sort_by(page, "run-grid", C.SCORE_MS, f"{C.SCORE_MS}:desc")
    scores = [float(s) for s in _column(page, "run-grid", C.SCORE_MS)]
    assert scores == sorted(scores, reverse=True)
    entries = page.evaluate("history.length")
    page.reload()
    _wait_grid(page, "run-grid")
    page.wait_for_load_state("networkidle")
    assert _query(page)["sort"] == [f"{C.SCORE_MS}:desc"]
    # the reload wrote no URL of its own (it used to drop the sort, then put it back)
    assert page.evaluate("history.length") == entries
    page.evaluate(f"() => dash_ag_grid.getApi('run-grid').ensureColumnVisible('{C.SCORE_MS}')")
    cell = page.locator(f"#run-grid [role=columnheader][col-id='{C.SCORE_MS}']")
    assert cell.get_attribute("aria-sort") == "descending"
    assert [float(s) for s in _column(page, "run-grid", C.SCORE_MS)] == scores
    assert page.errors == []


def test_agreement_sort_is_kept_in_the_url(server: dict[str, Any], page: Any) -> None:
    """Tree vs data: the URL holds the grid's sort (first the default, regret largest
    first), a header click changes it, a reload restores it."""
    page.goto(server["base"] + "/agreement?show=all")
    _wait_grid(page, "agreement-grid")
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('sort') === 'regret_pct:desc'"
    )
    _sort_by(page, "agreement-grid", C.NUM_TOKENS, f"{C.NUM_TOKENS}:asc")
    tokens = [int(t) for t in _column(page, "agreement-grid", C.NUM_TOKENS) if t]
    assert tokens == sorted(tokens) and len(set(tokens)) >= 2
    page.reload()
    _wait_grid(page, "agreement-grid")
    assert _query(page)["sort"] == [f"{C.NUM_TOKENS}:asc"]
    assert _query(page)["show"] == ["all"]
    header = page.locator(f"#agreement-grid [role=columnheader][col-id='{C.NUM_TOKENS}']")
    assert header.get_attribute("aria-sort") == "ascending"
    assert [int(t) for t in _column(page, "agreement-grid", C.NUM_TOKENS) if t] == tokens
    assert page.errors == []
