"""The Best page: decision columns first, details collapsed, sort/filter in the URL,
the first table drawn with the page, the default cell."""

from __future__ import annotations

import csv
import io
import json
from typing import Any
from urllib.parse import parse_qs

import pytest

from analysis import columns as C
from dashboard import grid_state as gs
from dashboard.app import create_dash
from dashboard.pages import best
from dashboard.pages.best_grid import DETAILS_GROUP, lead_columns
from db.store import Store
from service.frames import Cell, DashData
from tests.factories.dashboard import by_id, callback, seed_store, walk

KNOWN = Cell("deepseek_v4_pro", "GB300", "NVFP4")
OTHER = Cell("kimi_k2", "B300", "NVFP4")  # 40 candidates: the cell with the most data


@pytest.fixture(scope="module")
def data(module_store: Store) -> DashData:
    seed_store(module_store)
    return DashData(module_store, version_ttl=0.0)


def _grid(body: Any) -> Any:
    return next(c for c in walk(body) if getattr(c, "id", None) == "best-grid")


@pytest.mark.parametrize("grouping", ["bench_moe", "dashboard"])
def test_grid_leads_with_the_decision_and_collapses_the_details(
    data: DashData, grouping: str
) -> None:
    body, _ = best.update_table(data, KNOWN.key, grouping, "all")
    defs = _grid(body).columnDefs
    groups = [d for d in defs if "children" in d]
    assert len(groups) == 1 and groups[0]["groupId"] == DETAILS_GROUP
    assert groups[0]["openByDefault"] is False
    lead = [d["field"] for d in defs if "children" not in d]
    assert lead == lead_columns(grouping)
    assert lead[-4:] == ["winner", "margin_pct", "runner_up", "tie_state"]
    children = groups[0]["children"]
    # the confidence verdict stays shown while the details are collapsed
    assert children[0]["field"] == "confidence" and "columnGroupShow" not in children[0]
    assert children[0]["tooltipField"] == "confidence_note"
    assert all(c["columnGroupShow"] == "open" for c in children[1:])
    hidden = {c["field"] for c in children[1:]}
    assert {"best_backend", "runner_up_score_ms", "noise_band_pct", C.DISPATCH_KB} <= hidden
    assert len(lead) + 1 <= 10  # what a 1440 px screen shows without scrolling


def test_winner_and_runner_up_name_backend_and_comm(data: DashData) -> None:
    body, _ = best.update_table(data, KNOWN.key, "bench_moe", "all")
    rows = {r[C.NUM_TOKENS]: r for r in _grid(body).rowData}
    assert rows[256]["winner"] == "MEGAMOE_CUTEDSL · NONE"
    assert rows[256]["runner_up"].startswith("TRTLLM · ")
    assert rows[256]["margin_pct"] == pytest.approx(25.0)
    body, _ = best.update_table(data, KNOWN.key, "dashboard", "all")
    # the dashboard grouping ranks configurations: the parallel mode is part of them
    assert all(r["winner"].count(" · ") == 2 for r in _grid(body).rowData)


def test_csv_columns_follow_the_grid_order(data: DashData) -> None:
    dl = best.csv_download(data, KNOWN.key, "bench_moe", "all")
    assert dl is not None
    header = next(csv.reader(io.StringIO(dl["content"])))
    assert header[: len(lead_columns("bench_moe"))] == lead_columns("bench_moe")
    assert "best_backend" in header and "runner_up_score_ms" in header


def test_sort_and_filter_go_to_the_url_and_come_back(data: DashData) -> None:
    column_state = [
        {"colId": "margin_pct", "sort": "desc", "sortIndex": 0},
        {"colId": C.NUM_TOKENS, "sort": None, "sortIndex": None},
    ]
    model = {C.NUM_TOKENS: {"filterType": "number", "type": "equals", "filter": 256}}
    stored, search = best.grid_changed(column_state, model, KNOWN.key, "bench_moe", "all")
    query = parse_qs(search[1:])
    assert query["sort"] == ["margin_pct:desc"]
    assert json.loads(query["filter"][0]) == model
    assert query["model"] == [KNOWN.model]
    # a reload: the layout reads the URL, keeps the state and draws the grid with it
    layout = best.layout(data, **{k: v[0] for k, v in query.items()})
    assert by_id(layout, "best-gridstate").data == stored
    grid = _grid(layout)
    defs = [leaf for d in grid.columnDefs for leaf in d.get("children", [d])]
    margin = next(d for d in defs if d["field"] == "margin_pct")
    assert margin["sort"] == "desc" and margin["sortIndex"] == 0
    assert all(d.get("sort") is None for d in defs if d["field"] != "margin_pct")
    assert grid.filterModel == model
    # the table callback keeps the state in the URL it writes
    _, again = best.update_table(data, KNOWN.key, "bench_moe", "all", None, None, stored)
    assert parse_qs(again[1:])["sort"] == ["margin_pct:desc"]


def test_url_state_of_unknown_columns_or_bad_json_is_dropped() -> None:
    fields = best.grid_fields()
    state = gs.parse({"sort": "nope:asc,margin_pct:sideways,tie_state:asc", "filter": "{"}, fields)
    assert state.sort == (("tie_state", "asc"),) and dict(state.filter) == {}
    state = gs.parse({"filter": json.dumps({"nope": {}, "tie_state": {"type": "x"}})}, fields)
    assert dict(state.filter) == {"tie_state": {"type": "x"}}
    huge = json.dumps({"tie_state": {"filter": "x" * (gs.MAX_FILTER_CHARS + 1)}})
    assert dict(gs.parse({"filter": huge}, fields).filter) == {}
    assert gs.from_store("garbage", fields) == gs.GridState()
    assert gs.from_grid(None, None, fields) == gs.GridState()


def test_a_grid_reporting_only_its_filter_keeps_the_sort_held_so_far() -> None:
    """A just-mounted grid reports its empty filterModel before its columnState: the
    sort from the URL must survive that first report (it used to drop for ~0.1 s)."""
    fields = best.grid_fields()
    kept = gs.GridState((("margin_pct", "desc"),), {"tie_state": {"type": "x"}}).to_store()
    assert gs.from_grid(None, {}, fields, kept) == gs.GridState((("margin_pct", "desc"),), {})
    assert gs.from_grid([], None, fields, kept) == gs.GridState((), {"tie_state": {"type": "x"}})
    stored, search = best.grid_changed(None, {}, KNOWN.key, "bench_moe", "all", kept=kept)
    assert parse_qs(search[1:])["sort"] == ["margin_pct:desc"] and stored["filter"] == {}


def test_first_table_comes_with_the_page_on_the_cell_with_most_data(data: DashData) -> None:
    layout = best.layout(data)
    assert by_id(layout, "best-cell").value == OTHER.key  # not the alphabetically first
    body = by_id(layout, "best-body")
    assert _grid(body).rowData  # drawn without a callback round trip
    asked = best.layout(data, model=KNOWN.model, hardware=KNOWN.hardware, quant=KNOWN.quant)
    assert by_id(asked, "best-cell").value == KNOWN.key


def test_gridstate_callback_is_registered_and_writes_the_url(data: DashData) -> None:
    app = create_dash(data)
    fn = callback(app, "best-gridstate.data")
    state = [{"colId": "tie_state", "sort": "asc", "sortIndex": 0}]
    # Dash passes the five controls, then the state held so far (none yet)
    stored, search = fn(state, None, KNOWN.key, "bench_moe", "all", None, "latest", None)
    assert stored["sort"] == [["tie_state", "asc"]] and "sort=tie_state%3Aasc" in search
    assert "repeats=latest" in search  # the controls are not shifted into the held state


def test_no_runner_up_sorts_last_in_either_direction() -> None:
    # the grid's comparator, run as AG Grid runs it (node: the expression as a function)
    import shutil
    import subprocess

    from dashboard.pages.best_grid import TIE_COMPARATOR

    node = shutil.which("node") or shutil.which("nodejs")
    values = ["no runner-up", "tie", "no tie", "no runner-up", "tie"]
    if node is None:  # the expression still names the state it keeps last
        assert "'no runner-up'" in TIE_COMPARATOR
        return
    js = (
        f"const f=(valueA,valueB,nodeA,nodeB,isDescending)=>({TIE_COMPARATOR});"
        f"const v={json.dumps(values)};"
        "const asc=[...v].sort((a,b)=>f(a,b,null,null,false));"
        "const desc=[...v].sort((a,b)=>-f(a,b,null,null,true));"
        "console.log(JSON.stringify([asc,desc]));"
    )
    asc, desc = json.loads(
        subprocess.run([node, "-e", js], capture_output=True, text=True, check=True).stdout
    )
    assert asc[-2:] == ["no runner-up", "no runner-up"] and desc[-2:] == asc[-2:]
    assert asc[:3] == ["no tie", "tie", "tie"] and desc[:3] == ["tie", "tie", "no tie"]
