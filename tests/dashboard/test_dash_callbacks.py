"""Page layouts and callback functions called directly against a real store."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
import yaml
from dash import dcc, html

from analysis import columns as C
from dashboard import components as ui
from dashboard.app import create_dash, parse_search, render_page
from dashboard.pages import best, overview, pareto, recommend, run
from db.store import Store
from ingest.records import UploadMeta
from service.frames import Cell, DashData
from tests.factories import sweeps
from tests.factories.dashboard import (
    HOSTILE,
    KNOWN_FRONTIER,
    KNOWN_FRONTIER_TRTLLM,
    seed_store,
    walk,
)

KNOWN = Cell("deepseek_v4_pro", "GB300", "NVFP4")


@pytest.fixture
def seeded(store: Store) -> tuple[DashData, dict[str, int]]:
    ids = seed_store(store)
    return DashData(store, version_ttl=0.0), ids


def leaf_defs(defs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Column definitions with column groups flattened (the Best grid groups its details)."""
    return [leaf for d in defs for leaf in (leaf_defs(d["children"]) if "children" in d else [d])]


def texts(component: Any) -> list[str]:
    return [c for c in walk(component) if isinstance(c, str)]


def frontier_candidates(fig: Any) -> set[int]:
    traces = [t for t in fig.data if str(t.name).startswith("Pareto frontier")]
    return {int(round(k)) for t in traces for k in t.customdata[:, 0]}


def _keys_to_candidates(data: DashData, keys: set[int]) -> set[int]:
    frame = data.cell_frame(KNOWN)
    return {int(frame.iloc[k][C.CANDIDATE_INDEX]) for k in keys}


# ------------------------------------------------------------------ pareto
def test_pareto_figure_callback_highlights_the_known_frontier(seeded: Any) -> None:
    data, _ = seeded
    q = pareto.ParetoQuery(cell=KNOWN)
    fig, status = pareto.update_figure(data, q)
    assert _keys_to_candidates(data, frontier_candidates(fig)) == KNOWN_FRONTIER
    assert "4 successful" in texts(status)[0]


def test_pareto_filter_change_changes_the_frontier(seeded: Any) -> None:
    data, _ = seeded
    q = pareto.query_from_controls(
        KNOWN.key,
        "all",
        "decode",
        "all",
        [],
        [],
        ["TRTLLM"],
        [],
        C.SCORE_MS,
        C.TOKENS_PER_S_PER_GPU,
        ["x", "y"],
    )
    fig, _ = pareto.update_figure(data, q)
    assert _keys_to_candidates(data, frontier_candidates(fig)) == KNOWN_FRONTIER_TRTLLM


def test_pareto_empty_filter_says_what_to_relax(seeded: Any) -> None:
    data, _ = seeded
    q = pareto.query_from_controls(
        KNOWN.key,
        8,
        "prefill",
        "T",
        [],
        [],
        ["CUTEDSL"],
        [],
        C.SCORE_MS,
        C.TOKENS_PER_S_PER_GPU,
        [],
    )
    _, status = pareto.update_figure(data, q)
    words = " ".join(texts(status))
    assert "No runs for this filter" in words
    assert "phase" in words and "backend filter (CUTEDSL)" in words and "attention" in words


def test_pareto_query_round_trips_through_the_url(seeded: Any) -> None:
    data, _ = seeded
    q = pareto.ParetoQuery(
        cell=KNOWN,
        ws=8,
        phase="all",
        attn="D",
        backend=("TRTLLM", "CUTEDSL"),
        comm=("NONE",),
        x=C.ACTIVATED_TOKENS_PER_RANK,
        y=C.SCORE_MS,
        logx=False,
        logy=True,
        point="1:2",
    )
    again = pareto.parse_query(parse_search(q.search()), data.cells())
    assert again == q


def test_pareto_layout_restores_controls_from_the_query(seeded: Any) -> None:
    data, _ = seeded
    page = render_page(
        data,
        "/pareto",
        "?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4&backend=TRTLLM&phase=prefill&logx=0",
    )
    by_id = {getattr(c, "id", None): c for c in walk(page)}
    assert by_id["pareto-backend"].value == ["TRTLLM"]
    assert by_id["pareto-phase"].value == "prefill"
    assert by_id["pareto-log"].value == ["y"]
    assert by_id["pareto-cell"].value == KNOWN.key


def test_pareto_click_gives_detail_and_exportable_yaml(seeded: Any) -> None:
    data, ids = seeded
    frame = data.cell_frame(KNOWN)
    key = int(frame.index[frame[C.CANDIDATE_INDEX] == 1][0])
    point = pareto.point_from_click(data, KNOWN.key, {"points": [{"customdata": [key, 0.0]}]})
    assert point == f"{ids['known']}:1"
    detail = pareto.render_detail(data, KNOWN.key, point)
    yaml_pre = [c for c in walk(detail) if getattr(c, "id", None) == "pareto-yaml"][0]
    body = yaml.safe_load(yaml_pre.children)
    assert body["moe_config"] == {"backend": "MEGAMOE_CUTEDSL"}
    assert body["moe_expert_parallel_size"] == 8 and body["enable_attention_dp"] is True
    dl = pareto.download_yaml(data, KNOWN.key, point)
    assert dl is not None and yaml.safe_load(dl["content"]) == body
    assert pareto.render_detail(data, KNOWN.key, "999:1").__class__ is html.Div
    assert (
        pareto.point_from_click(data, KNOWN.key, {"points": [{"customdata": [10**6, 0]}]}) is None
    )


def test_cell_change_resets_filters_to_the_new_cells_values(seeded: Any) -> None:
    data, _ = seeded
    app = create_dash(data)
    cb = next(v for k, v in app.callback_map.items() if "pareto-ws.options" in k)
    out = cb["callback"].__wrapped__("kimi_k2|B300|NVFP4")
    ws_options = out[0]
    assert [o["value"] for o in ws_options] == ["all", 4]
    assert out[5:] == ["all", [], [], [], []]


# ------------------------------------------------------------------ best
def test_best_table_has_margin_tie_and_derived_columns(seeded: Any) -> None:
    data, ids = seeded
    body, search = best.update_table(data, KNOWN.key, "bench_moe", "all")
    grid = [c for c in walk(body) if getattr(c, "id", None) == "best-grid"][0]
    rows = {r[C.NUM_TOKENS]: r for r in grid.rowData}
    assert rows[256]["best_backend"] == "MEGAMOE_CUTEDSL"
    assert rows[256]["margin_pct"] == pytest.approx(25.0)  # 1.0 ms vs 0.8 ms
    assert rows[256]["tie_state"] == "no tie"
    assert rows[256][C.ACTIVATED_TOKENS_PER_RANK] == pytest.approx(256 * 6 / 8)
    assert rows[256][C.DISPATCH_KB] == pytest.approx(192 * 7168 * 0.5 / 1024)
    headers = {d["field"]: d["headerName"] for d in leaf_defs(grid.columnDefs)}
    assert headers[C.DISPATCH_KB] == "dispatch_KB (KiB)"
    assert headers["best_score_ms"] == "best score (ms)"
    assert "grouping=bench_moe" in search and "model=deepseek_v4_pro" in search


def test_best_dashboard_grouping_and_csv(seeded: Any) -> None:
    data, _ = seeded
    dl = best.csv_download(data, KNOWN.key, "dashboard", "all")
    assert dl is not None
    rows = list(csv.DictReader(io.StringIO(dl["content"])))
    # decode 256, decode 1024, prefill 256: three dashboard workloads
    assert len(rows) == 3
    assert {"margin_pct", "tie_state", C.DISPATCH_KB, C.ACTIVATED_TOKENS_PER_RANK} <= set(rows[0])


def test_best_empty_world_size_says_so(seeded: Any) -> None:
    data, _ = seeded
    body, _ = best.update_table(data, KNOWN.key, "bench_moe", 64)
    assert "No successful candidates" in " ".join(texts(body))


# ------------------------------------------------------------------ run
def test_run_grid_lists_failed_candidates_with_hostile_reason_as_text(seeded: Any) -> None:
    data, ids = seeded
    grid_box, search = run.update_grid(data, ids["known"], "failed")
    grid = [c for c in walk(grid_box) if getattr(c, "id", None) == "run-grid"][0]
    assert [r[C.SKIP_REASON] for r in grid.rowData] == [HOSTILE]
    assert grid.rowData[0][C.FAILURE_CATEGORY] == "timed_phase_error"
    assert search == f"?id={ids['known']}&status=failed"
    every, _ = run.update_grid(data, ids["known"], "all")
    grid = [c for c in walk(every) if getattr(c, "id", None) == "run-grid"][0]
    assert {r[C.STATUS] for r in grid.rowData} == {"success", "failed", "skipped"}


def test_run_page_has_metadata_raw_link_and_candidate_detail(seeded: Any) -> None:
    data, ids = seeded
    page = run.layout(data, id=str(ids["known"]))
    links = [c for c in walk(page) if getattr(c, "id", None) == "run-raw-link"]
    assert links[0].href == f"/api/v1/runs/{ids['known']}/raw"
    assert HOSTILE in texts(page)  # filename/notes shown verbatim, as text
    detail = run.candidate_detail(data, ids["known"], 1)
    assert any('"rank1"' in t for t in texts(detail))
    missing = run.layout(data, id="999")
    assert "does not exist" in " ".join(texts(missing))


# ------------------------------------------------------------------ overview
def test_overview_links_cells_to_pareto_and_marks_synthetic(seeded: Any) -> None:
    data, _ = seeded
    page = overview.layout(data)
    # server-rendered tables (dashboard.static_html): in-app links are <a data-nav>
    hrefs = [c.href for c in walk(page) if getattr(c, "tag", None) == "a" and c.nav]
    assert "/pareto?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4&world_size=8" in hrefs
    assert "/pareto?model=kimi_k2&hardware=B300&quant=NVFP4&world_size=4" in hrefs
    badges = [
        c
        for c in walk(page)
        if getattr(c, "tag", None) == "span" and "badge-synthetic" in (c.className or "")
    ]
    assert badges, "synthetic data carries a badge"
    anchors = [c for c in walk(page) if getattr(c, "tag", None) == "a"]
    assert all(not a.href.startswith("javascript") for a in anchors)
    assert "https://ci.example/run/1" in [a.href for a in anchors]


def test_new_upload_appears_without_restart(seeded: Any) -> None:
    data, _ = seeded
    before = len(data.cells())
    data.store.ingest(
        [sweeps.make_sweep(10, seed=9, model="glm_5", num_experts=256, top_k=8, hidden_size=6144)],
        b"new-bytes",
        UploadMeta(hardware="GB300", filename="fresh.json"),
    )
    assert len(data.cells()) == before + 1
    assert "fresh.json" in texts(overview.layout(data))


def test_empty_database_pages_explain_what_to_do(store: Store) -> None:
    data = DashData(store)
    for path in ("/", "/pareto", "/best"):
        page = render_page(data, path, "")
        assert any(
            isinstance(c, html.Div) and getattr(c, "className", None) == "empty-state"
            for c in walk(page)
        ), path


# ------------------------------------------------------------------ recommend
def test_recommend_shows_path_measured_best_and_exports(seeded: Any) -> None:
    data, _ = seeded
    form = recommend.Form(
        hardware="GB300",
        model="deepseek_v4_pro",
        quant="NVFP4",
        ws=8,
        attn="DP",
        phase="decode",
        tokens=300,
    )
    body, search = recommend.update(data, form)
    words = " ".join(texts(body))
    assert "decode_megamoe_tokens_per_rank" in words
    assert "num_tokens = 256" in words  # nearest measured workload to 300
    assert "tokens=300" in search
    dl = recommend.download(data, "yaml", form)
    assert dl is not None
    cfg = yaml.safe_load(dl["content"])
    # 300 * 6 / 8 = 225 activated tokens per rank <= 512 and ws <= 8 -> TRTLLM
    assert cfg["moe_config"]["backend"] == "TRTLLM"
    env = recommend.download(data, "env", form)
    assert env is not None and "AUTO" in env["content"]


def test_recommend_forces_comm_across_the_nvlink_domain(seeded: Any) -> None:
    data, _ = seeded
    form = recommend.Form(
        hardware="B300",
        model="deepseek_v4_pro",
        quant="NVFP4",
        ws=16,
        attn="DP",
        phase="decode",
        tokens=256,
    )
    env = recommend.download(data, "env", form)
    assert env is not None and env["content"].strip() == "TRTLLM_FORCE_COMM_METHOD=DEEPEPLOWLATENCY"
    body, _ = recommend.update(data, form)
    assert any(
        c.__class__ is html.Div and getattr(c, "className", None) == "empty-state"
        for c in walk(body)
    ), "no measured data for B300 ws16 is said plainly"


def test_recommend_unknown_model_is_an_empty_state(seeded: Any) -> None:
    data, _ = seeded
    body, _ = recommend.update(data, recommend.Form(model="no_such_model"))
    assert "unknown model" in " ".join(texts(body))


def test_recommend_form_round_trips_through_the_url() -> None:
    form = recommend.Form(
        hardware="B300",
        model="kimi_k2",
        quant="NVFP4",
        ws=16,
        attn="TP",
        phase="prefill",
        tokens=4096,
        th="derived",
        check="small_world_size",
    )
    assert recommend.parse_form(parse_search(form.search())) == form


# ------------------------------------------------------------------ app-wide
def test_router_renders_every_page_and_a_clear_not_found(seeded: Any) -> None:
    data, ids = seeded
    for path in ("/", "/pareto", "/best", "/recommend", "/run"):
        assert render_page(data, path, f"?id={ids['known']}") is not None
    missing = render_page(data, "/nope", "")
    assert missing.className == "empty-state"


def test_no_component_renders_user_text_as_html(seeded: Any) -> None:
    data, ids = seeded
    pages = [
        overview.layout(data),
        run.layout(data, id=str(ids["known"])),
        run.update_grid(data, ids["known"], None)[0],
        pareto.render_detail(data, KNOWN.key, f"{ids['known']}:1"),
    ]
    for page in pages:
        for c in walk(page):
            assert not isinstance(c, dcc.Markdown)
            assert not getattr(c, "dangerously_allow_html", False)
            defs = getattr(c, "columnDefs", None) or []
            assert all("cellRenderer" not in d for d in defs)


def test_search_string_skips_empty_values() -> None:
    assert (
        ui.search_string({"a": None, "b": [], "c": ["x", "y"], "d": 0, "e": True})
        == "?c=x&c=y&d=0&e=1"
    )
    assert parse_search("?c=x&c=y&d=0") == {"c": ["x", "y"], "d": "0"}


def test_synthetic_data_is_marked_where_numbers_are_shown(seeded: Any, store: Store) -> None:
    data, _ = seeded
    _, status = pareto.update_figure(data, pareto.ParetoQuery(cell=KNOWN))
    assert not any(getattr(c, "data-testid", None) == "synthetic-note" for c in walk(status))
    body, _ = best.update_table(data, KNOWN.key, "bench_moe", "all")
    assert "synthetic" not in " ".join(texts(body))
    grid = [c for c in walk(body) if getattr(c, "id", None) == "best-grid"][0]
    graph_col = [d for d in leaf_defs(grid.columnDefs) if d["field"] == "best_cuda_graph"][0]
    assert "'on'" in graph_col["valueFormatter"]["function"]  # words, not checkboxes

    demo = sweeps.make_sweep(12, seed=9, synthetic=True, hardware="B300")
    store.ingest([demo], b"synthetic-demo", UploadMeta(synthetic=True))
    data.invalidate()
    cell = Cell("deepseek_v4_pro", "B300", "NVFP4")
    assert data.is_synthetic(cell) and not data.is_synthetic(KNOWN)
    _, status = pareto.update_figure(data, pareto.ParetoQuery(cell=cell))
    assert "synthetic" in " ".join(texts(status))
    body, _ = best.update_table(data, cell.key, "bench_moe", "all")
    assert "synthetic" in " ".join(texts(body))


# ------------------------------------------------------------------ issue 10 controls
def test_best_routing_and_repeats_controls_and_permalink(seeded: Any) -> None:
    data, _ = seeded
    page = render_page(
        data, "/best", "?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4&repeats=latest"
    )
    by_id = {getattr(c, "id", None): c for c in walk(page)}
    assert by_id["best-dispatch"].value == "balanced"
    assert by_id["best-dispatch"].options == [{"label": "balanced (default)", "value": "balanced"}]
    assert by_id["best-repeats"].value == "latest"
    body, search = best.update_table(data, KNOWN.key, "dashboard", "all", "balanced", "latest")
    assert "dispatch=balanced" in search and "repeats=latest" in search
    assert "Routing: balanced." in " ".join(texts(body))
    ws_opts, ws, opts, value = best.cell_controls(data, KNOWN.key)
    assert ws == "all" and value == "balanced" and opts[0]["label"] == "balanced (default)"
    # a cell whose rows record no routing label: nothing to choose, every row counts
    _, _, opts, value = best.cell_controls(data, "kimi_k2|B300|NVFP4")
    assert (opts, value) == ([], None)
    body, _ = best.update_table(data, "kimi_k2|B300|NVFP4", "dashboard", "all")
    assert "Routing: not recorded (default)." in " ".join(texts(body))
    dl = best.csv_download(data, KNOWN.key, "dashboard", "all", None, "median")
    assert dl is not None and dl["filename"].endswith("_dashboard_balanced_median.csv")
    assert "best_n_repeats" in dl["content"].splitlines()[0]
    # bench_moe's grouping ranks per run, as the page says: the file name says so too
    per_run = best.csv_download(data, KNOWN.key, "bench_moe", "all", None, "median")
    assert per_run is not None and per_run["filename"].endswith("_bench_moe_balanced_per_run.csv")
    body, _ = best.update_table(data, KNOWN.key, "bench_moe", "all")
    assert "Repeats: per run" in " ".join(texts(body))
    bad, _ = best.update_table(data, KNOWN.key, "dashboard", "all", "nope", None)
    assert "unknown routing pattern 'nope'" in " ".join(texts(bad))


def test_pareto_routing_is_one_pattern_and_repeats_round_trip(seeded: Any) -> None:
    data, _ = seeded
    q = pareto.query_from_controls(
        KNOWN.key, "all", "decode", "all", ["balanced", "x"], [], [], [],
        C.SCORE_MS, C.TOKENS_PER_S_PER_GPU, ["x", "y"], "latest",
    )  # fmt: skip
    assert q.dispatch == ("balanced",) and q.filter.repeats == "latest"
    again = pareto.parse_query(parse_search(q.search()), data.cells())
    assert again == q
    page = render_page(data, "/pareto", "?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4")
    by_id = {getattr(c, "id", None): c for c in walk(page)}
    assert by_id["pareto-dispatch"].multi is False
    assert by_id["pareto-dispatch"].value == "balanced"
    assert by_id["pareto-repeats"].value == "median"


def test_recommend_form_takes_the_serving_load_and_shows_the_formula(seeded: Any) -> None:
    data, _ = seeded
    # 300 requests over 8 DP ranks: 38 per rank, CUDA-graph padded to 40, 2 tokens each
    form = recommend.Form(size="load", conc=300, mtp=1, dispatch="balanced", repeats="latest")
    assert recommend.parse_form(parse_search(form.search())) == form
    note = " ".join(texts(recommend.size_note(form)))
    assert "num_tokens = 640" in note and "40 x (1 + 1 MTP) = 80" in note
    body, search = recommend.update(data, form)
    assert "size=load" in search and "concurrency=300" in search
    assert "num_tokens = 640" in " ".join(texts(body))
    prefill = recommend.Form(size="load", phase="prefill", mnt=4096, ws=8)
    assert "num_tokens = 32768" in " ".join(texts(recommend.size_note(prefill)))
    page = render_page(data, "/recommend", form.search())
    by_id = {getattr(c, "id", None): c for c in walk(page)}
    assert by_id["rec-conc"].value == 300 and by_id["rec-size"].value == "load"
    assert by_id["rec-dispatch"].value == "balanced"
