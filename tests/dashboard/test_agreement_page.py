"""The /agreement page: disagreements with regret in %, filters, permalinks, evidence
links and the CSV named for its slice, over the dashboard and routing fixtures."""

from __future__ import annotations

import csv
import io
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from dash import html

from dashboard.app import create_dash, render_page
from dashboard.pages import agreement
from db.store import Store
from service.frames import DashData
from tests.dashboard.labels_check import control_names, unnamed
from tests.factories.dashboard import seed_store, walk
from tests.factories.routing import seed_skew


@pytest.fixture(scope="module")
def seeded(module_store: Store) -> tuple[DashData, dict[str, int]]:
    ids = {**seed_store(module_store), **seed_skew(module_store)}
    return DashData(module_store, version_ttl=0.0), ids


def by_id(tree: Any, cid: str) -> Any:
    return next(c for c in walk(tree) if getattr(c, "id", None) == cid)


def texts(tree: Any) -> str:
    return "\n".join(c for c in walk(tree) if isinstance(c, str))


def test_every_disagreement_is_listed_with_regret_in_percent(seeded: tuple) -> None:
    data, ids = seeded
    page = render_page(data, "/agreement", "")
    assert "Regret" in texts(page) and "× 100" in texts(page)
    grid = by_id(page, "agreement-grid")
    rows = grid.rowData
    # known answers (balanced routing): deepseek ws8 1024 tok (tree MEGAMOE, TRTLLM is
    # 1/3 faster), deepseek ws8 256 tok, kimi_k2 ws16 256 tok (tree CUTEDSL 1.10 vs 1.00)
    got = [(r["model"], r["num_tokens"], round(r["regret_pct"], 6)) for r in rows]
    assert got == [
        ("deepseek_v4_pro", 1024, 50.0),
        ("deepseek_v4_pro", 256, 25.0),
        ("kimi_k2", 256, 10.0),
    ]
    shown = texts(page)
    assert "Agreement 57.1 %" in shown and "4 of the 7 workloads" in shown  # % of measured picks
    assert "it differs in 3" in shown and "median regret 25.0 %" in shown
    headers = {d["field"]: d for d in grid.columnDefs}
    assert headers["regret_pct"]["headerName"] == "regret (%)"
    assert "× 100" in headers["regret_pct"]["headerTooltip"]
    assert headers["evidence"]["cellRenderer"] == "markdown"
    assert grid.defaultColDef["sortable"] and grid.defaultColDef["filter"]


def test_each_row_links_to_its_pareto_view_and_run(seeded: tuple) -> None:
    data, ids = seeded
    rows = by_id(render_page(data, "/agreement", "?model=kimi_k2"), "agreement-grid").rowData
    (row,) = rows
    pareto, run = row["evidence"].split(" · ")
    url = pareto[len("[Pareto](") : -1]
    q = parse_qs(urlparse(url).query)
    assert urlparse(url).path == "/pareto"
    assert q == {
        "model": ["kimi_k2"],
        "hardware": ["GB300"],
        "quant": ["NVFP4"],
        "ws": ["16"],
        "phase": ["decode"],
        "attn": ["D"],
        "dispatch": ["balanced"],
    }
    assert run == f"[run {ids['balanced']}](/run?id={ids['balanced']})"


def test_filters_routing_and_show_all_and_the_url(seeded: tuple) -> None:
    data, _ = seeded
    app = create_dash(data)
    fn = next(v for k, v in app.callback_map.items() if "agreement-body.children" in k)
    update = fn["callback"].__wrapped__
    body, search = update(
        "kimi_k2", "GB300", "all", "decode", "all", "published", "median", "disagree", None
    )
    rows = by_id(body, "agreement-grid").rowData
    assert sorted((r["dispatch"], round(r["regret_pct"], 4)) for r in rows) == [
        ("balanced", 10.0),
        ("recv_hotspot", round((1.32 / 1.26 - 1) * 100, 4)),
    ]
    assert parse_qs(search.lstrip("?")) == {
        "model": ["kimi_k2"],
        "hardware": ["GB300"],
        "phase": ["decode"],
        "dispatch": ["all"],
    }
    body, search = update(
        "kimi_k2", "all", "all", "all", "default", "published", "latest", "all", None
    )
    assert len(by_id(body, "agreement-grid").rowData) == 4
    assert "show=all" in search and "repeats=latest" in search
    # a permalink restores the controls
    page = render_page(data, "/agreement", "?" + search.lstrip("?"))
    assert by_id(page, "agreement-show").value == "all"
    assert by_id(page, "agreement-model").value == "kimi_k2"
    assert by_id(page, "agreement-repeats").value == "latest"


def test_nothing_matching_is_an_empty_state_and_unknown_routing_lists_the_known(
    seeded: tuple,
) -> None:
    data, _ = seeded
    page = render_page(data, "/agreement", "?model=deepseek_v4_pro&hardware=B300")
    assert any(getattr(c, "data-testid", None) == "agreement-empty" for c in walk(page))
    page = render_page(data, "/agreement", "?dispatch=local_only")
    err = next(c for c in walk(page) if getattr(c, "data-testid", None) == "agreement-error")
    assert "dispatch" in texts(err) and "balanced, recv_hotspot" in texts(err)
    assert agreement.csv_download(data, {"dispatch": "local_only"}) is None


def test_csv_holds_the_rows_shown_and_is_named_for_the_slice(seeded: tuple) -> None:
    data, _ = seeded
    values = {"model": "deepseek_v4_pro", "hardware": "GB300", "phase": "decode"}
    dl = agreement.csv_download(data, values)
    assert dl["filename"] == (
        "agreement_disagreements_deepseek_v4_pro_GB300_all-quant_decode_default-routing"
        "_published-thresholds.csv"
    )
    rows = list(csv.DictReader(io.StringIO(dl["content"])))
    assert [float(r["regret_pct"]) for r in rows] == [50.0, 25.0]
    assert "evidence" not in rows[0]


def test_every_filter_is_named_by_its_label_and_the_table_loads_visibly(seeded: tuple) -> None:
    data, _ = seeded
    page = render_page(data, "/agreement", "?model=kimi_k2")
    assert unnamed(page) == []
    names = control_names(page)
    assert {k: names[f"agreement-{k}"] for k in ("model", "quant", "phase", "show")} == {
        "model": "model",
        "quant": "precision",
        "phase": "phase",
        "show": "show",
    }
    loading = by_id(page, "agreement-loading")
    assert by_id(loading, "agreement-body") is not None and loading.delay_show == 300


def test_grid_sort_and_filter_come_from_and_go_to_the_url(
    seeded: tuple[DashData, dict[str, int]],
) -> None:
    data, _ = seeded
    query = {"show": "all", "sort": "num_tokens:asc"}
    page = agreement.layout(data, **query)
    grid = next(c for c in html.Div(page)._traverse() if getattr(c, "id", None) == "agreement-grid")
    sorted_cols = [d for d in grid.columnDefs if d.get("sort")]
    assert [(d["field"], d["sort"]) for d in sorted_cols] == [("num_tokens", "asc")]
    # the grid reports a new sort: the URL keeps it with the filters
    store, search = agreement.grid_changed(
        [{"colId": "regret_pct", "sort": "desc", "sortIndex": 0}],
        None,
        ["all", "all", "all", "all", "default", "published", "median", "all"],
        {"sort": [["num_tokens", "asc"]], "filter": {}},
    )
    assert store["sort"] == [["regret_pct", "desc"]]
    assert "sort=regret_pct%3Adesc" in search and "show=all" in search
    # an unknown column in the URL is dropped, not passed to the grid
    page = agreement.layout(data, sort="no_such:asc")
    grid = next(c for c in html.Div(page)._traverse() if getattr(c, "id", None) == "agreement-grid")
    assert not [d for d in grid.columnDefs if d.get("sort") and d["field"] == "no_such"]
