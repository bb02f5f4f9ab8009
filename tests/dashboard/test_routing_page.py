"""The /routing page as plain functions and registered callbacks over a real store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from analysis import columns as C
from dashboard.app import create_dash, parse_search, render_page
from dashboard.pages import routing
from dashboard.routing_figures import slowdown_figure
from db.store import Store, open_store
from moedash.app import create_app
from moedash.settings import Settings
from service.frames import DashData
from service.routing import SkewQuery, routing_skew
from tests.dashboard.labels_check import control_names, unnamed
from tests.factories.dashboard import seed_store, walk
from tests.factories.routing import CELL_KEY, SKEWED, WORKLOAD, seed_skew

URL = "?model=kimi_k2&hardware=GB300&quant=NVFP4&ws=16&phase=decode&attn=dp&tokens=256"


@pytest.fixture(scope="module")
def data(module_store: Store) -> DashData:
    seed_store(module_store)
    seed_skew(module_store)
    return DashData(module_store, version_ttl=0.0)


def texts(tree: Any) -> str:
    return "\n".join(c for c in walk(tree) if isinstance(c, str))


def by_id(tree: Any, cid: str) -> Any:
    return next(c for c in walk(tree) if getattr(c, "id", None) == cid)


def by_test_id(tree: Any, tid: str) -> Any:
    return next(c for c in walk(tree) if getattr(c, "data-testid", None) == tid)


def callback(app: Any, output: str) -> Any:
    entry = next(v for k, v in app.callback_map.items() if output in k.split(".."))
    return entry["callback"].__wrapped__


def test_permalink_renders_both_rankings_slowdowns_and_advice(data: DashData) -> None:
    page = render_page(data, "/routing", URL)
    assert by_id(page, "routing-cell").value == CELL_KEY
    assert by_id(page, "routing-workload").value == "16|decode|dp|256"
    ranking = texts(by_test_id(page, f"routing-ranking-{'skewed'}"))
    # under skew the fused backend ranks first
    assert ranking.index("MEGAMOE_CUTEDSL") < ranking.index("TRTLLM · NVLINK_ONE_SIDED")
    rows = by_id(page, "routing-grid").rowData
    assert [r["rank_change"] for r in rows[:3]] == [2, 0, -2]
    headers = {d["field"]: d["headerName"] for d in by_id(page, "routing-grid").columnDefs}
    assert headers["slowdown_pct"] == f"slowdown: {SKEWED} / balanced − 1 (%)"
    assert headers["balanced_score_ms"].endswith("(ms)")
    eplb = texts(by_test_id(page, "routing-advice-EPLB"))
    assert "indicated" in eplb and "ep_size 16" in eplb and "Offline plan" in eplb
    assert "not applicable" in texts(by_test_id(page, "routing-advice-DWDP"))
    summary = texts(by_test_id(page, "routing-summary"))
    assert "+19.0 %" in summary  # 1.50 / 1.26 - 1


def test_one_pattern_workload_shows_the_empty_state(data: DashData) -> None:
    page = render_page(data, "/routing", URL.replace("attn=dp", "attn=tp"))
    assert "only one routing pattern" in texts(by_test_id(page, "routing-empty"))


def test_unknown_pattern_in_the_url_is_explained_with_the_known_ones(data: DashData) -> None:
    page = render_page(data, "/routing", URL + "&skewed=hotspot")
    msg = texts(by_test_id(page, "routing-error"))
    assert "skewed" in msg and f"balanced, {SKEWED}" in msg


def test_default_cell_is_one_with_two_patterns_and_empty_db_says_so(
    data: DashData, tmp_path: Path
) -> None:
    state = routing.parse_state(data, {})
    assert state.cell is not None and state.cell.key == CELL_KEY
    assert state.workload is not None and state.workload.startswith("16|")
    empty = open_store(f"duckdb:///{tmp_path / 'empty.duckdb'}")
    try:
        page = render_page(DashData(empty), "/routing", "")
        assert "No runs in the database yet." in texts(page)
    finally:
        empty.close()


def test_callbacks_follow_the_controls_and_write_the_url(data: DashData) -> None:
    app = create_dash(data)
    opts, value = callback(app, "routing-workload.options")(CELL_KEY)
    assert value == "16|decode|dp|256" and len(opts) == 4
    assert "balanced, recv_hotspot" in opts[0]["label"]
    b_opts, s_opts, b, s = callback(app, "routing-balanced.options")(value, CELL_KEY)
    assert [o["value"] for o in s_opts] == ["balanced", SKEWED] and (b, s) == (None, None)
    body, search = callback(app, "routing-body.children")(
        CELL_KEY, "16|prefill|dp|16384", None, None, "latest"
    )
    assert "indicated" in texts(by_test_id(body, "routing-advice-DWDP"))
    assert "phase=prefill" in search and "num_tokens=16384" in search and "repeats=latest" in search


def test_csv_download_is_named_for_its_slice_and_matches_the_service(data: DashData) -> None:
    state = routing.parse_state(data, _query())
    dl = routing.csv_download(data, state)
    assert dl is not None
    assert dl["filename"] == (
        "routing_skew_kimi_k2_GB300_NVFP4_ws16_256tok_decode_dp_balanced_vs_recv_hotspot.csv"
    )
    assert dl["content"] == routing_skew(data, SkewQuery(**WORKLOAD)).csv()


def _query() -> dict[str, str]:
    return {
        "model": "kimi_k2",
        "hardware": "GB300",
        "quant": "NVFP4",
        "ws": "16",
        "phase": "decode",
        "attn": "dp",
        "tokens": "256",
    }


def test_slowdown_figure_has_one_bar_per_paired_configuration(data: DashData) -> None:
    ans = routing_skew(data, SkewQuery(**WORKLOAD))
    assert ans.comparison is not None
    fig = slowdown_figure(ans.comparison.table, "balanced", SKEWED)
    (bar,) = fig.data
    assert list(bar.x) == pytest.approx([50.0, 20.0, 5.0])  # ALLGATHER: balanced only
    assert all(c == "#d92d20" for c in bar.marker.color)  # all beyond the 0.71 % band
    assert "%" in fig.layout.xaxis.title.text
    empty = slowdown_figure(ans.comparison.table.iloc[3:], "balanced", SKEWED)
    assert "no configuration was measured under both" in empty.layout.annotations[0].text
    assert C.BACKEND in ans.comparison.table


def test_controls_are_named_and_the_chart_is_named_for_its_workload(data: DashData) -> None:
    page = render_page(data, "/routing", URL)
    assert unnamed(page) == []
    names = control_names(page)
    assert names["routing-cell"] == "model · hardware · precision"
    assert names["routing-skewed"] == "skewed pattern"
    assert names["routing-repeats"] == "repeat runs"
    graph = by_id(page, "routing-slowdown")
    where = "kimi_k2 · GB300 · NVFP4 · 16 GPUs · decode"
    what = f"slowdown under {SKEWED} vs balanced at 256 tokens, attention DP"
    assert graph.figure.layout.title.text == f"{where}<br>{what}"
    assert graph.config["toImageButtonOptions"]["filename"] == (
        f"slowdown-under-{SKEWED}-vs-balanced-at-256-tokens-attention-dp-"
        "kimi_k2-gb300-nvfp4-16-gpus-decode"
    )
    assert "%" in graph.figure.layout.xaxis.title.text


def test_the_page_url_is_an_api_query(data: DashData) -> None:
    """The page writes its state in GET /api/v1/routing-skew's parameter names: its
    query string, sent to the API, answers the same workload and patterns."""
    state = routing.parse_state(data, _query())  # an old permalink (ws, attn, tokens)
    search = state.search()
    assert "world_size=16" in search and "num_tokens=256" in search and "attention=dp" in search
    assert routing.parse_state(data, parse_search(search)) == state  # round trip
    settings = Settings(database_url="duckdb:///unused", enable_dashboard=False)
    with TestClient(create_app(settings, store=data.store)) as api:
        body = api.get("/api/v1/routing-skew" + search).json()
    page = routing_skew(data, state.query())  # type: ignore[arg-type]
    assert body["workload"]["num_tokens"] == 256 and body["workload"]["world_size"] == 16
    assert (body["balanced"], body["skewed"]) == (page.balanced, page.skewed)
