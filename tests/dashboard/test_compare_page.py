"""The /compare page without a browser: layout and defaults, the registered callback,
empty and invalid states and the CSV download, on a real DuckDB store seeded with the
three-version sweeps of tests/factories/version_sweeps.py (known verdicts)."""

from __future__ import annotations

from typing import Any

import pytest
from dash import html

from analysis import compare as K
from dashboard.app import PAGES, create_dash, render_page
from dashboard.pages import compare as P
from dashboard.pages import compare_form as F
from dashboard.pages.compare_view import COUNTS
from db.store import Store
from service.frames import DashData
from tests.factories import version_sweeps as V
from tests.factories.dashboard import by_id, by_testid, callback, text, walk


@pytest.fixture(scope="module")
def data(module_duck: Store) -> DashData:
    V.seed_versions(module_duck)
    return DashData(module_duck, version_ttl=0.0)


def controls(**form: Any) -> list[Any]:
    """The values the page's controls send, in callback order ("all" for unset)."""
    f = F.Form(**form)
    return [getattr(f, k) if getattr(f, k) is not None else F.ALL for k in F.FIELDS]


def counts(body: Any) -> dict[str, int]:
    return {key: int(by_testid(body, f"cmp-count-{key}").children) for key, _ in COUNTS}


def test_page_is_registered_with_labelled_controls_and_defaults(data: DashData) -> None:
    assert PAGES["/compare"].module is P and PAGES["/compare"].nav
    page = render_page(data, "/compare", "")
    # no URL: the slice with the most versions, base/head its last two versions
    assert by_id(page, "cmp-model").value == V.MODEL
    assert by_id(page, "cmp-world_size").value == V.WORLD_SIZE
    assert (by_id(page, "cmp-base").value, by_id(page, "cmp-head").value) == (V.RC27, V.RC28)
    # both lists offer versions (in version order) and runs (newest first)
    values = [o["value"] for o in by_id(page, "cmp-base").options]
    assert values == [V.RC9, V.RC27, V.RC28, "4", "3", "2", "1"]
    # every control has a visible label tied to it
    labelled = {getattr(c, "htmlFor", None) for c in walk(page) if isinstance(c, html.Label)}
    assert set(P.IDS) <= labelled
    assert by_id(page, "cmp-loading") is not None


def test_callback_counts_grid_and_url_for_two_versions(data: DashData) -> None:
    app = create_dash(data)
    out = callback(app, "cmp-body.children")(
        *controls(base=V.RC27, head=V.RC28, **V.SLICE, threshold_pct=5.0)
    )
    body, search, base, head = out[:4]
    assert (base, head) == (V.RC27, V.RC28)
    assert search == (
        f"?base={V.RC27}&head={V.RC28}&model={V.MODEL}&hardware={V.HARDWARE}"
        f"&quant={V.QUANT}&world_size={V.WORLD_SIZE}"
    )
    got = counts(body)
    assert got == {k: V.EXPECTED_COUNTS[k] for k in got}
    grid = by_id(body, "cmp-grid")
    rows = grid.rowData
    assert len(rows) == sum(v for k, v in V.EXPECTED_COUNTS.items() if k != "best_changed")
    # what needs attention comes first: the +20 % regression
    first = rows[0]
    assert first[K.VERDICT] == "regression" and first["num_tokens"] == 256
    assert first[K.CHANGE_PCT] == pytest.approx(20.0)
    headers = {d["field"]: d["headerName"] for d in grid.columnDefs}
    assert headers[K.CHANGE_PCT] == "change (%)" and headers[K.BASE_MS] == "base score (ms)"
    best = by_id(body, "cmp-best-grid").rowData
    assert [(r["num_tokens"], r[K.GAIN_PCT]) for r in best] == [(256, pytest.approx(8.3333, 1e-3))]
    # the chart: one trace per verdict measured on both sides, the threshold drawn
    fig = by_id(body, "cmp-graph").figure
    assert {t.name for t in fig.data} == {"regression", "improvement", "inconclusive", "unchanged"}
    assert sorted(s.y0 for s in fig.layout.shapes) == [-5.0, 5.0]
    assert V.MODEL in fig.layout.title.text and "1.2.0rc27 → 1.2.0rc28" in fig.layout.title.text
    assert "run" in text(by_testid(body, "cmp-summary"))
    links = [c.href for c in walk(by_testid(body, "cmp-summary")) if isinstance(c, html.A)]
    assert links == [
        F.Form(base=V.RC27, head=V.RC28, **V.SLICE).api_href(),
        F.Form(base=V.RC27, head=V.RC28, **V.SLICE).api_href("csv"),
    ]


def test_a_higher_threshold_turns_changes_unchanged(data: DashData) -> None:
    app = create_dash(data)
    body = callback(app, "cmp-body.children")(
        *controls(base=V.RC27, head=V.RC28, **V.SLICE, threshold_pct=25.0)
    )[0]
    got = counts(body)
    assert got[K.REGRESSION] == 0 and got[K.IMPROVEMENT] == 0
    # the +20 %, the -10 % and the +5.9 % inside the noise band
    assert got[K.UNCHANGED] == V.EXPECTED_COUNTS[K.UNCHANGED] + 3


def test_runs_as_sides_and_a_version_not_stored(data: DashData) -> None:
    ids = {name: i + 1 for i, (name, _, _) in enumerate(V.RUNS)}
    body = P.update(data, *controls(base=str(ids["rc27b"]), head=str(ids["rc28"]), **V.SLICE))[0]
    summary = text(by_testid(body, "cmp-summary"))
    assert "run 3 (1.2.0rc27)" in summary and "run 4 (1.2.0rc28)" in summary
    bad = P.update(data, *controls(base=V.RC27, head="9.9.9", **V.SLICE))[0]
    box = by_testid(bad, "cmp-invalid")
    assert box is not None and "head" in text(box) and V.RC28 in text(box)


def test_changing_the_slice_moves_sides_that_it_does_not_hold(data: DashData) -> None:
    values = controls(base="1", head="4", **V.SLICE, phase="decode")
    # the same cell, another world size nobody measured: the sides reset (none stored)
    out = P.update(data, *[*values[:5], 4, *values[6:]], trigger="cmp-world_size")
    assert out[2:4] == (None, None)
    assert by_testid(out[0], "cmp-empty") is not None
    # a change of threshold keeps what the user picked
    out = P.update(data, *values, trigger="cmp-threshold_pct")
    assert out[2:4] == ("1", "4")


def test_empty_database_says_what_to_upload(duck: Store) -> None:
    page = render_page(DashData(duck, version_ttl=0.0), "/compare", "")
    box = by_testid(page, "cmp-empty")
    assert box is not None and "moedash upload" in text(box)


def test_a_single_run_says_nothing_to_compare(duck: Store) -> None:
    V.seed_versions(duck, ("rc28",))
    data = DashData(duck, version_ttl=0.0)
    page = render_page(data, "/compare", "")
    assert by_id(page, "cmp-base").value is None
    body = P.update(data, *[by_id(page, i).value for i in P.IDS])[0]
    assert "single run" in text(by_testid(body, "cmp-empty"))


def test_csv_download_names_what_it_holds(data: DashData) -> None:
    form = F.make_form(*controls(base=V.RC27, head=V.RC28, **V.SLICE, phase="decode"))
    got = P.csv_download(data, form)
    assert got is not None and got["type"] == "text/csv"
    assert got["filename"] == (
        "compare-deepseek_v4_pro-GB300-NVFP4-ws8-decode-1.2.0rc27-vs-1.2.0rc28.csv"
    )
    lines = got["content"].splitlines()
    assert "verdict" in lines[0].split(",") and len(lines) == 1 + 6
    # nothing to download: the reason the page shows instead of a file
    reason = P.csv_download(data, F.make_form(*controls(base="x", head="y", **V.SLICE)))
    assert reason == (
        f"base: unknown TensorRT-LLM version 'x' in this slice; known: 1.2.0rc9, {V.RC27}, {V.RC28}"
    )
