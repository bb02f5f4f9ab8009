"""The /crossval page without a browser: filters <-> URL, layout, callback functions,
figure builders and CSV downloads, on a real DuckDB store with known answers.

Known answers (tests/fixtures/serving + ``ingest_h200_candidates``): of the 32 stored
workloads, the H200 dynamo-trt decode workloads are the only ones compared - conc 8 is a
Match (CUTLASS 1.0 ms beats TRTLLM 2.0 ms), conc 64 a Mismatch (backend CUTLASS->TRTLLM,
deployed 3.0 ms vs best 1.5 ms: gap 100 %). Their prefill workloads are "no data" (no
CUDA-graph-off candidates).
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pandas as pd
import pytest
from dash import dcc

from analysis import columns as C
from analysis import crossval_columns as cc
from dashboard import crossval_figures as XF
from dashboard.app import PAGES, create_dash, render_page
from dashboard.pages import crossval as P
from dashboard.pages import crossval_filters as CF
from dashboard.pages import crossval_grids as G
from dashboard.pages import crossval_render as R
from db.store import Store
from ingest.records import Sweep, UploadMeta
from service.crossval import LEDGER_VIEW_COLUMNS, refresh_ledger
from service.crossval_import import import_serving_directory
from service.crossval_page import CrossvalView
from service.frames import DashData
from tests.api.test_api_crossval import FIXTURE, H200, ingest_h200_candidates
from tests.factories import make_candidates
from tests.factories.dashboard import HOSTILE, by_id, by_testid, text, walk
from tests.factories.sweeps import make_run


@pytest.fixture
def empty(duck: Store) -> DashData:
    return DashData(duck, version_ttl=0.0)


@pytest.fixture
def imported_only(duck: Store) -> DashData:
    import_serving_directory(duck, FIXTURE, "fixture")
    return DashData(duck, version_ttl=0.0)


@pytest.fixture
def data(imported_only: DashData) -> DashData:
    ingest_h200_candidates(imported_only.store)
    refresh_ledger(imported_only.store)  # as `moedash ingest` and the upload route do
    return imported_only


def ids_of(data: DashData, status: str, **filters: Any) -> list[str]:
    f, _ = CF.make_filters(**filters)
    view = P.compute(data, f).view
    return view[view[cc.STATUS] == status][cc.WORKLOAD_ID].tolist()


def h200_decode(data: DashData) -> tuple[str, str]:
    match = ids_of(data, cc.MATCH, hardware="H200", phase="decode")
    mismatch = ids_of(data, cc.MISMATCH, hardware="H200", phase="decode")
    assert len(match) == 1 and len(mismatch) == 1
    return match[0], mismatch[0]


# ------------------------------------------------------------------ filters <-> URL
def test_filters_round_trip_and_defaults() -> None:
    f, notes = CF.parse_query(
        {
            "model": "deepseek_r1",
            "hardware": "h200",
            "phase": "decode",
            "status": "no data",
            "tol": "4",
            "band": "2.5",
        }
    )
    assert notes == []
    assert f == CF.Filters("deepseek_r1", "H200", "decode", "no data", 4.0, 2.5)
    assert f.search() == (
        "?model=deepseek_r1&hardware=H200&phase=decode&status=no+data&tol=4&band=2.5"
    )
    assert (
        CF.parse_query(
            {
                "tol": "4",
                "band": "2.5",
                "status": "no data",
                "model": "deepseek_r1",
                "hardware": "H200",
                "phase": "decode",
            }
        )[0]
        == f
    )

    default, notes = CF.make_filters()
    assert default == CF.Filters() and notes == []
    assert default.search() == "?tol=2&band=3"
    # "all" from the dropdowns and unknown enum values mean no filter
    assert CF.make_filters("all", "all", "both", "maybe")[0] == CF.Filters()


@pytest.mark.parametrize(
    "tol,band,n_notes",
    [
        ("0.5", "3", 1),
        ("2000", "3", 1),
        ("x", "3", 1),
        ("nan", "3", 1),
        ("inf", "3", 1),
        ("2", "-1", 1),
        ("2", "101", 1),
        ("0.5", "abc", 2),
        (None, None, 0),
        ("", "", 0),
        (True, 3, 1),
    ],
)
def test_bad_numbers_fall_back_to_defaults_with_a_note(tol: Any, band: Any, n_notes: int) -> None:
    f, notes = CF.make_filters(tol=tol, band=band)
    assert len(notes) == n_notes
    if n_notes:
        assert any("using" in n for n in notes)
    if tol in ("0.5", "2000", "x", "nan", "inf", None, "", True):
        assert f.tol == 2.0
    if band in ("-1", "101", "abc", None, ""):
        assert f.band == 3.0


def test_bounds_are_accepted() -> None:
    assert CF.make_filters(tol=1, band=0)[0].tol == 1.0
    assert CF.make_filters(tol="1024", band="100")[0].band == 100.0


# ------------------------------------------------------------------ routing + layout
def test_page_is_registered(data: DashData) -> None:
    assert PAGES["/crossval"].module is P and PAGES["/crossval"].nav
    app = create_dash(data)
    outputs = " ".join(app.callback_map)
    for out in (
        "cv-ledger.children",
        "cv-summary.children",
        "cv-url.search",
        "cv-ledger-download.data",
        "cv-summary-download.data",
    ):
        assert out in outputs
    # the registered callback is the page's update, then the stale note and poll switch
    cb = next(v for k, v in app.callback_map.items() if "cv-ledger.children" in k)
    out = cb["callback"].__wrapped__(None, "H200", "decode", "all", 2, 3, "exact", 3, [], [], None)
    assert out[P.N_OUTPUTS - 1] == "?hardware=H200&phase=decode&tol=2&band=3"
    assert out[P.N_OUTPUTS :] == (None, True)  # the ledger is current: no note, no poll
    assert by_testid(out[5], "cv-ledger-count") is not None
    for out_id in ("cv-rules.children", "cv-guide.children", "cv-sweeps.children",
                   "cv-sweeps-download.data"):  # fmt: skip
        assert out_id in outputs


def test_layout_reads_the_permalink(data: DashData) -> None:
    page = render_page(
        data,
        "/crossval",
        "?model=deepseek_r1&hardware=H200&phase=decode&status=Mismatch&tol=4&band=5",
    )
    assert by_id(page, "cv-model").value == "deepseek_r1"
    assert by_id(page, "cv-hardware").value == "H200"
    assert by_id(page, "cv-phase").value == "decode"
    assert by_id(page, "cv-status").value == "Mismatch"
    assert by_id(page, "cv-tol").value == 4.0 and by_id(page, "cv-band").value == 5.0
    assert isinstance(by_id(page, "cv-url"), dcc.Location)
    assert "Match" in text(by_testid(page, "cv-method"))
    model_opts = {o["value"]: o["label"] for o in by_id(page, "cv-model").options}
    assert model_opts["deepseek_r1"] == "DeepSeek-R1 (deepseek_r1)"
    assert set(model_opts) == {"all", "deepseek_r1", "kimi_k2"}
    hw = {o["value"] for o in by_id(page, "cv-hardware").options}
    assert hw == {"all", "B300", "GB200", "GB300", "H200"}
    # every result area is inside a loading wrapper
    for cid in ("cv-ledger-loading", "cv-summary-loading"):
        assert isinstance(by_id(page, cid), dcc.Loading)
    # an unknown model in a permalink stays selected (and shows as no workloads)
    odd = render_page(data, "/crossval", "?model=no_such_model")
    assert by_id(odd, "cv-model").value == "no_such_model"


def test_no_imports_empty_state(empty: DashData) -> None:
    page = render_page(empty, "/crossval", "")
    box = by_testid(page, "cv-no-imports")
    assert box is not None
    msg = text(box)
    assert "moedash import-serving" in msg and "POST /api/v1/serving-configs" in msg
    assert by_id(page, "cv-ledger") is None  # no controls, no callbacks to fire
    out = P.update(empty, None, None, None, None, 2, 3)
    assert by_testid(out[1], "cv-no-imports") is not None and out[3] is None


def test_no_candidates_empty_state(imported_only: DashData) -> None:
    notes, summary, _rules, _guide, figure, ledger, _sweeps, search = P.update(
        imported_only, None, None, None, None, "2", "3", None, None, [CF.SHOW_ALL]
    )
    box = by_testid(summary, "cv-no-candidates")
    assert box is not None and "No bench_moe candidates" in text(box)
    assert "x2" in text(box)
    # the ledger still lists every workload with its reason
    assert "32 workloads" in text(by_testid(ledger, "cv-ledger-count"))
    grid = by_id(ledger, "cv-ledger-grid")
    assert len(grid.rowData) == 32
    assert all(r[cc.STATUS] in (cc.NO_DATA, cc.NOT_MAPPABLE) for r in grid.rowData)
    assert all(r.get(cc.REASON) for r in grid.rowData)
    assert notes is None and figure is not None  # no-data bars still drawn


# ------------------------------------------------------------------ known answers
def test_ledger_and_summary_known_answers(data: DashData) -> None:
    match_id, mismatch_id = h200_decode(data)
    res = P.compute(data, CF.make_filters(hardware="H200")[0])
    view = res.view.set_index(cc.WORKLOAD_ID)
    mm = view.loc[mismatch_id]
    assert (mm[cc.STATUS], mm[cc.DIFFERS]) == (cc.MISMATCH, "backend: CUTLASS->TRTLLM")
    assert (mm[cc.BEST_SCORE_MS], mm[cc.DEPLOYED_SCORE_MS]) == (1.5, 3.0)
    assert mm[cc.DEPLOYED_GAP_PCT] == pytest.approx(100.0) and mm[cc.DEPLOYED_RANK] == 2
    assert not bool(mm[cc.NEAREST_TOKENS_USED]) and pd.isna(mm[cc.OUTCOME])
    assert view.loc[match_id, cc.STATUS] == cc.MATCH
    assert view.loc[match_id, cc.DEPLOYED_RANK] == 1

    assert res.summary[cc.S_MATCH].tolist() == ["1/2 (50%, prefill 0/0, decode 1/2)"]
    assert res.summary[[cc.S_MISMATCH, cc.N_NOT_EVALUATED, cc.N_NO_DATA]].values.tolist() == [
        ["1/2", 1, 2]
    ]

    notes, summary, _rules, _guide, figure, ledger, _sweeps, search = P.update(
        data, None, "H200", None, None, 2, 3, None, None, [CF.SHOW_ALL]
    )
    grid = by_id(summary, "cv-summary-grid")
    assert grid.records[0][cc.S_MODEL] == "DeepSeek-R1"
    assert grid.records[0][cc.S_MATCH] == "1/2 (50%, prefill 0/0, decode 1/2)"
    assert grid.fields == list(G.SUMMARY_GRID_COLUMNS)
    assert isinstance(figure, dcc.Graph)
    line = text(by_testid(ledger, "cv-ledger-count"))
    assert line.startswith("8 workloads: 1 Match, 1 Mismatch, 2 no data, 4 not mappable")


def test_filters_narrow_the_ledger(data: DashData) -> None:
    _, mismatch_id = h200_decode(data)
    _, _, _, _, _, ledger, _, search = P.update(
        data, "deepseek_r1", "H200", "decode", "Mismatch", 2, 3
    )
    rows = by_id(ledger, "cv-ledger-grid").rowData
    assert [r[cc.WORKLOAD_ID] for r in rows] == [mismatch_id]
    assert search == "?model=deepseek_r1&hardware=H200&phase=decode&status=Mismatch&tol=2&band=3"
    # nothing left: its own empty state
    _, _, _, _, _, none, _, _ = P.update(data, "kimi_k2", "H200", None, None, 2, 3)
    assert by_testid(none, "cv-ledger-empty") is not None


def ingest_h200_tokens8_only(store: Store) -> None:
    """H200 decode candidates at num_tokens 8 only (CUTLASS 1.0 ms, TRTLLM 2.0 ms)."""
    rows = [
        {C.NUM_TOKENS: 8, C.BACKEND: "CUTLASS", C.SCORE_MS: 1.0},
        {C.NUM_TOKENS: 8, C.BACKEND: "TRTLLM", C.SCORE_MS: 2.0},
    ]
    shape = {
        C.MODEL: "deepseek_r1",
        C.QUANT: "FP8_BLOCK_SCALES",
        C.HARDWARE: "H200",
        C.WORLD_SIZE: 8,
    }
    frame = make_candidates(
        [{**r, C.CANDIDATE_INDEX: i} for i, r in enumerate(rows)],
        **shape,
        parallel_mode="TEP",
        cuda_graph=True,
        comm="NVLINK_ONE_SIDED",
    )
    run = make_run(**shape, num_experts=256, top_k=8, hidden_size=7168, intermediate_size=2048)
    sweep = Sweep(key="", run=run, candidates=frame[list(C.CANDIDATE_COLUMNS)])
    store.ingest([sweep], b"h200 tokens 8", UploadMeta(trtllm_version="v1.3.0rc26"))
    refresh_ledger(store)  # as `moedash ingest` and the upload route do


def test_token_tolerance_changes_the_ledger(imported_only: DashData) -> None:
    """Only num_tokens 8 measured: the conc-64 decode workload (num_tokens 64, x8 away) is
    "no data" at x2 and compared with the nearest tokens (8) at x8."""
    data = imported_only
    ingest_h200_tokens8_only(data.store)

    def conc64(tol: float) -> pd.Series:
        view = P.compute(data, CF.make_filters(hardware="H200", phase="decode", tol=tol)[0]).view
        rows = view[(view[cc.CONC] == 64) & (view[cc.ENTRY] == H200)]
        assert len(rows) == 1
        return rows.iloc[0]

    at2 = conc64(2)
    assert at2[cc.STATUS] == cc.NO_DATA and "none within x2" in at2[cc.REASON]
    at8 = conc64(8)
    assert at8[cc.STATUS] == cc.MATCH  # CUTLASS, as deployed, is best at 8 tokens
    assert bool(at8[cc.NEAREST_TOKENS_USED]) and at8[cc.MEASURED_NUM_TOKENS] == 8
    _, _, _, _, _, ledger, _, search = P.update(data, None, "H200", "decode", None, "8", 3)
    assert search.endswith("tol=8&band=3")
    assert "1 use the nearest measured num_tokens" in text(by_testid(ledger, "cv-ledger-count"))


def test_outcomes_join_the_ledger_and_follow_the_band(data: DashData) -> None:
    _, mismatch_id = h200_decode(data)
    data.store.crossval.add_outcomes(
        [
            {
                "workload_id": mismatch_id,
                "tps_per_user_deployed": 100.0,
                "tps_per_user_candidate": 110.0,
                "source": HOSTILE,
            }
        ]
    )
    at3 = P.compute(data, CF.make_filters(hardware="H200", band=3)[0])
    row = at3.view.set_index(cc.WORKLOAD_ID).loc[mismatch_id]
    assert (row[cc.OUTCOME], row[cc.CHANGE_PCT]) == (cc.IMPROVEMENT, pytest.approx(10.0))
    assert at3.summary[[cc.S_IMPROVEMENT, cc.N_NOT_EVALUATED]].values.tolist() == [["1/1", 0]]
    at15 = P.compute(data, CF.make_filters(hardware="H200", band=15)[0])
    assert at15.view.set_index(cc.WORKLOAD_ID).loc[mismatch_id, cc.OUTCOME] == cc.FLAT
    assert at15.summary[cc.S_FLAT].tolist() == ["1/1"]
    _, _, _, _, _, ledger, _, _ = P.update(data, None, "H200", None, None, 2, 15)
    assert "1 with a stored end-to-end outcome" in text(by_testid(ledger, "cv-ledger-count"))


# ------------------------------------------------------------------ downloads
def test_csv_downloads(data: DashData) -> None:
    _, mismatch_id = h200_decode(data)
    f = CF.make_filters(status="Mismatch")[0]
    led = P.ledger_csv(data, f)
    assert led["filename"] == "crossval-ledger-exact.csv" and led["type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(led["content"])))
    assert [r[cc.WORKLOAD_ID] for r in rows] == [mismatch_id]
    assert tuple(rows[0]) == LEDGER_VIEW_COLUMNS
    assert rows[0][cc.DEPLOYED_GAP_PCT] == "100.0"
    summ = P.summary_csv(data, CF.make_filters(show=CF.SHOW_ALL)[0])
    table = pd.read_csv(io.StringIO(summ["content"]))
    assert tuple(table.columns) == cc.SUMMARY_COLUMNS
    assert set(table[cc.S_HARDWARE]) == {"H200", "GB200", "GB300", "B300"}
    assert table[cc.S_HARDWARE].iloc[0] == "H200"  # the one with compared workloads first
    # without the toggle: only rows with compared workloads, as on the page
    shown = pd.read_csv(io.StringIO(P.summary_csv(data, CF.make_filters()[0])["content"]))
    assert shown[cc.S_HARDWARE].tolist() == ["H200"]
    assert P.summary_csv(data, CF.make_filters()[0])["filename"] == "crossval-summary-exact.csv"


# ------------------------------------------------------------------ grid details
def test_grid_caps_rows_with_compared_first(data: DashData) -> None:
    view = P.compute(data, CF.make_filters()[0]).view
    shown = G.grid_rows(view, limit=3)
    assert shown[cc.STATUS].tolist() == [cc.MATCH, cc.MISMATCH, cc.NO_DATA]
    assert G.grid_rows(view, limit=100) is view
    big = pd.concat([view] * 112, ignore_index=True)  # 2,240 rows > MAX_GRID_ROWS
    res = CrossvalView(big, big, pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    out = R.render_ledger(res, all_rows=True)
    assert len(by_id(out, "cv-ledger-grid").rowData) == G.MAX_GRID_ROWS
    assert "2,000 of 2,240" in text(by_testid(out, "cv-ledger-capped"))
    assert by_testid(out, "cv-ledger-first-page") is None


def test_grid_gets_the_first_page_until_every_row_is_asked_for(data: DashData) -> None:
    view = P.compute(data, CF.make_filters()[0]).view  # 20 rows: Match, Mismatch, no data
    big = pd.concat([view] * 6, ignore_index=True)  # 120 rows > FIRST_ROWS
    first = R.render_ledger(CrossvalView(big, big, pd.DataFrame(), pd.DataFrame(), pd.DataFrame()))
    rows = by_id(first, "cv-ledger-grid").rowData
    assert len(rows) == G.FIRST_ROWS == 100
    assert [r[cc.WORKLOAD_ID] for r in rows] == big[cc.WORKLOAD_ID].head(100).tolist()
    note = text(by_testid(first, "cv-ledger-first-page"))
    assert "first 100 of 120 rows" in note and "every ledger row in the grid" in note
    assert text(by_testid(first, "cv-ledger-count")).startswith("120 workloads")  # all counted
    # the page: the toggle (rows=all) sends every row, and lands in the URL
    small = P.page_update(data, None, "H200", None, None, 2, 3, None, None, [], [])
    assert by_testid(small[5], "cv-ledger-first-page") is None  # 20 rows: all fit
    out = P.page_update(data, None, None, None, None, 2, 3, None, None, [], [CF.ALL_ROWS])
    assert out[P.N_OUTPUTS - 1].endswith("&rows=all")
    assert len(by_id(out[5], "cv-ledger-grid").rowData) == 20
    f, _ = CF.parse_query({"rows": ["all"]})
    assert f.all_rows and CF.parse_query({})[0].all_rows is False
    assert by_id(P.layout(data, rows=["all"]), "cv-rows").value == [CF.ALL_ROWS]


def test_user_strings_are_plain_cell_values(data: DashData) -> None:
    view = P.compute(data, CF.make_filters()[0]).view
    view.loc[0, cc.ENTRY] = HOSTILE
    view.loc[0, cc.REASON] = HOSTILE
    grid = G.ledger_grid(view)
    assert grid.rowData[0][cc.ENTRY] == HOSTILE and grid.rowData[0][cc.REASON] == HOSTILE
    flat = [d for g in grid.columnDefs for d in g.get("children", [g])]
    assert [d["field"] for d in flat] == list(G.GRID_COLUMNS)
    assert not any("cellRenderer" in d for d in flat)
    assert not getattr(grid, "dangerously_allow_code", False)
    # empty cells are left out of the payload
    assert all(v is not None for r in grid.rowData for v in r.values())


# ------------------------------------------------------------------ figure builders
def test_status_counts_and_figure(data: DashData) -> None:
    led = P.compute(data, CF.make_filters()[0]).ledger
    counts = XF.status_counts(led)
    h200 = counts[counts["hardware"] == "H200"]
    assert h200[XF.GROUP].tolist() == [
        "DeepSeek-R1 · H200 · prefill",
        "DeepSeek-R1 · H200 · decode",
    ]
    assert h200[[cc.MATCH, cc.MISMATCH, cc.NO_DATA]].values.tolist() == [[0, 0, 2], [1, 1, 0]]
    # sorted by display model, hardware, prefill first
    assert counts[XF.GROUP].tolist()[0] == "DeepSeek-R1 · B300 · prefill"
    assert counts[XF.GROUP].tolist()[-1] == "Kimi-K2 · GB300 · decode"
    fig = XF.status_figure(led)
    assert [t.name for t in fig.data] == list(XF.STATUSES)
    assert fig.layout.barmode == "stack"
    by_name = {t.name: dict(zip(t.y, t.x, strict=True)) for t in fig.data}
    assert by_name[cc.MISMATCH]["DeepSeek-R1 · H200 · decode"] == 1
    assert fig.layout.xaxis.title.text == "workloads (count)"


def test_status_figure_empty_and_unmappable_only() -> None:
    assert XF.status_counts(pd.DataFrame()).empty
    only = pd.DataFrame(
        {cc.STATUS: [cc.NOT_MAPPABLE], "model": [None], "hardware": ["H200"], cc.PHASE: ["decode"]}
    )
    assert XF.status_counts(only).empty
    fig = XF.status_figure(only)
    assert not fig.data and "No mappable" in fig.layout.annotations[0].text
    assert XF.model_display(None) == "—" and XF.model_display("glm_5") == "GLM-5"


# ------------------------------------------------------------------ rules, guide, sweeps
def test_rule_noise_and_toggle_round_trip_through_the_url() -> None:
    f, notes = CF.parse_query({"rule": "same_layout", "noise": "5", "show": "all"})
    assert notes == [] and (f.rule, f.noise, f.show_empty) == ("same_layout", 5.0, True)
    assert f.search() == "?tol=2&band=3&rule=same_layout&noise=5&show=all"
    bad, notes = CF.make_filters(rule="loose", noise="500")
    assert (bad.rule, bad.noise) == ("exact", 3.0) and len(notes) == 2
    assert "exact, backend, within_noise, same_layout" in notes[1]


def test_layout_defines_every_rule_and_labels_the_controls(data: DashData) -> None:
    page = render_page(data, "/crossval", "?rule=within_noise&noise=7&show=all")
    assert by_id(page, "cv-rule").value == "within_noise"
    assert by_id(page, "cv-noise").value == 7.0 and by_id(page, "cv-show").value == ["all"]
    defs = text(by_testid(page, "cv-rule-definitions"))
    for rule in ("exact", "backend", "within_noise", "same_layout"):
        assert rule in defs
    labels = [c for c in walk(page) if type(c).__name__ == "Label"]
    assert {"cv-rule", "cv-noise"} <= {getattr(x, "htmlFor", None) for x in labels}
    for cid in ("cv-rules-loading", "cv-guide-loading", "cv-sweeps-loading"):
        assert isinstance(by_id(page, cid), dcc.Loading)


def test_rule_changes_the_status_and_the_side_by_side_table(data: DashData) -> None:
    _, mismatch_id = h200_decode(data)
    # deployed CUTLASS is 100 % slower than TRTLLM: a Mismatch until the band reaches 100 %
    for rule, noise, want in (("exact", 3, cc.MISMATCH), ("within_noise", 3, cc.MISMATCH),
                              ("within_noise", 100, cc.MATCH)):  # fmt: skip
        out = P.update(data, None, "H200", "decode", None, 2, 3, rule, noise, [])
        rows = {r[cc.WORKLOAD_ID]: r for r in by_id(out[5], "cv-ledger-grid").rowData}
        assert rows[mismatch_id][cc.STATUS] == want
        assert rows[mismatch_id][cc.REASON].startswith(f"{want} ({rule})")
    rules = by_id(out[2], "cv-rules-grid").records
    assert [r["exact"] for r in rules] == ["1/2 (50%, prefill 0/0, decode 1/2)"]
    assert rules[0]["within_noise"] == "2/2 (100%, prefill 0/0, decode 2/2)"


def test_guide_beside_ours_and_sweeps_section(data: DashData) -> None:
    out = P.update(data, None, "H200", None, None, 2, 3)
    guide = by_id(out[3], "cv-guide-grid").records
    assert len(guide) == 12 and guide[0]["guide_match"] == 54
    assert len(by_id(out[3], "cv-published-grid").records) == 6
    sweeps = out[6]
    plan = by_id(sweeps, "cv-sweeps-grid").records
    assert len(plan) == 1 and plan[0]["n_rows"] == 2  # the two H200 prefill workloads
    assert "--no_cuda_graph" in plan[0]["command"]
    assert "1 bench_moe command(s) cover 2 no-data workload(s)" in text(
        by_testid(sweeps, "cv-sweeps-count")
    )
    cov = by_id(sweeps, "cv-coverage-grid").records
    assert sum(r["n_workloads"] for r in cov) == 4 and sum(r["n_covered"] for r in cov) == 2
    sh = P.sweeps_sh(data, CF.make_filters(hardware="H200")[0])
    assert sh["filename"] == "crossval-sweeps-all-h200-all.sh"
    assert sh["content"].count("python3 -m bench_moe") == 1


def test_long_cells_wrap_instead_of_clipping(data: DashData) -> None:
    out = P.update(data, None, "H200", None, None, 2, 3)
    summary = by_id(out[1], "cv-summary-grid")
    match_cells = [
        c for c in walk(summary) if getattr(c, "tag", None) == "td" and c.data_col == cc.S_MATCH
    ]
    assert match_cells and all("wrap" in (c.className or "") for c in match_cells)
    flat = [d for g in by_id(out[5], "cv-ledger-grid").columnDefs for d in g.get("children", [g])]
    reason = next(d for d in flat if d["field"] == cc.REASON)
    assert reason["wrapText"] and reason["autoHeight"]
