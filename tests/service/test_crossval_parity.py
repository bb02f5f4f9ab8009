"""Parity: the /crossval page's callback and ``GET /api/v1/crossval/ledger`` +
``/summary`` give the same answer on the same seeded store (DuckDB; PostgreSQL with the
postgres marker).

The page is driven through its callback (``dashboard.pages.crossval.update``, what the
registered Dash callback calls) and read back from the components it returns: the
ledger grid's rows, the count line and the summary grid. The API is the real app over the
same store, through Starlette's test client.
"""

from __future__ import annotations

import io
from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from analysis import crossval_columns as cc
from dashboard.pages import crossval as P
from dashboard.pages import crossval_filters as CF
from dashboard.pages.crossval_grids import SUMMARY_GRID_COLUMNS
from db.store import Store
from service.crossval import STATUSES, refresh_ledger
from service.crossval_import import import_serving_directory
from service.frames import DashData
from tests.api.test_api_crossval import FIXTURE, H200, ingest_h200_candidates
from tests.dashboard.test_crossval_page import ingest_h200_tokens8_only
from tests.factories.dashboard import walk


@pytest.fixture
def seeded(store: Store) -> Store:
    """Fixture serving configs, the H200 candidates (one Match, one Mismatch) and an
    end-to-end outcome for the Mismatch (+10 %: Improvement at ±3 %, Flat at ±15 %)."""
    import_serving_directory(store, FIXTURE, "fixture")
    ingest_h200_candidates(store)
    refresh_ledger(store)  # as `moedash ingest` and the upload route do
    w = store.crossval.serving_workloads({cc.PHASE: "decode", "hardware": "H200"})
    mismatch = str(w[(w[cc.ENTRY] == H200) & (w[cc.CONC] == 64)][cc.WORKLOAD_ID].iloc[0])
    store.crossval.add_outcomes(
        [
            {
                "workload_id": mismatch,
                "tps_per_user_deployed": 100.0,
                "tps_per_user_candidate": 110.0,
            }
        ]
    )
    return store


def _by_id(component: Any, cid: str) -> Any:
    found = [c for c in walk(component) if getattr(c, "id", None) == cid]
    assert len(found) == 1, cid
    return found[0]


def _by_testid(component: Any, test_id: str) -> Any:
    found = [c for c in walk(component) if getattr(c, "data-testid", None) == test_id]
    assert len(found) == 1, test_id
    return found[0]


# (page controls: model, hardware, phase, status, tol, band, rule, noise, show) and the
# same as API params ("show" has no API parameter: the API always lists every row)
ALL_ROWS = [CF.SHOW_ALL]
CASES: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((None, None, None, None, 2, 3, None, None, ALL_ROWS), {}),
    ((None, None, None, None, 2, 3, None, None, []), {}),
    (
        (None, "H200", "decode", None, 2, 3, "within_noise", 100, ALL_ROWS),
        {"hardware": "H200", "phase": "decode", "rule": "within_noise", "noise_pct": 100},
    ),
    (
        ("deepseek_r1", "h200", None, "Mismatch", "2", "15", "backend", None, ALL_ROWS),
        {
            "model": "deepseek_r1",
            "hardware": "h200",
            "status": "Mismatch",
            "band_pct": 15,
            "rule": "backend",
        },
    ),  # fmt: skip
    (
        (None, "H200", "decode", None, 8, 3, "same_layout", "3", []),
        {"hardware": "H200", "phase": "decode", "token_tolerance": 8, "rule": "same_layout"},
    ),
    (
        ("all", "all", "all", "all", "1024", "0", "exact", "0", ALL_ROWS),
        {"token_tolerance": 1024, "band_pct": 0, "noise_pct": 0},
    ),
]


def _page_order(rows: list[dict[str, Any]], show: bool) -> list[dict[str, Any]]:
    """API rows as the page lists them: mappable first (stable), not mappable only
    with the toggle on."""
    rank = {s: i for i, s in enumerate(STATUSES)}
    kept = [r for r in rows if show or r[cc.STATUS] != cc.NOT_MAPPABLE]
    return sorted(kept, key=lambda r: rank[r[cc.STATUS]])


@pytest.mark.parametrize(("controls", "params"), CASES, ids=lambda v: str(v))
def test_page_callback_and_api_agree(
    seeded: Store, client: TestClient, controls: tuple[Any, ...], params: dict[str, Any]
) -> None:
    data = DashData(seeded, version_ttl=0.0)
    notes, summary, _rules, _guide, _figure, ledger, _sweeps, _search = P.update(data, *controls)
    assert notes is None  # every control value above is valid
    show = bool(controls[-1])

    ledger_params = {k: v for k, v in params.items() if k != "band_pct"}
    api_ledger = client.get("/api/v1/crossval/ledger", params=ledger_params)
    assert api_ledger.status_code == 200, api_ledger.text
    api_rows = _page_order(api_ledger.json()["items"], show)
    page_rows = _by_id(ledger, "cv-ledger-grid").rowData
    # Match / Mismatch / no data / not mappable per workload, in the same order
    assert [(r[cc.WORKLOAD_ID], r[cc.STATUS]) for r in page_rows] == [
        (r[cc.WORKLOAD_ID], r[cc.STATUS]) for r in api_rows
    ]
    for page_row, api_row in zip(page_rows, api_rows, strict=True):
        for col in (cc.BEST_BACKEND, cc.DIFFERS, cc.DEPLOYED_RANK, cc.DEPLOYED_GAP_PCT,
                    cc.REASON, cc.CAUSE):  # fmt: skip
            assert page_row.get(col) == api_row[col], (col, api_row[cc.WORKLOAD_ID])
    # the count line says what the API's rows hold
    count_line = " ".join(
        c for c in walk(_by_testid(ledger, "cv-ledger-count")) if isinstance(c, str)
    )
    assert count_line.startswith(f"{len(api_rows)} workloads")
    for status in STATUSES:
        n = sum(r[cc.STATUS] == status for r in api_rows)
        assert (f"{n} {status}" in count_line) == (n > 0), (status, count_line)

    summary_params = {k: v for k, v in params.items() if k not in ("phase", "status")}
    api_summary = client.get("/api/v1/crossval/summary", params=summary_params)
    assert api_summary.status_code == 200, api_summary.text
    items = api_summary.json()["items"]
    items = (
        sorted(items, key=lambda r: r[cc.N_COMPARED] == 0)
        if show
        else [r for r in items if r[cc.N_COMPARED] > 0]
    )
    api_table = [{c: r[c] for c in SUMMARY_GRID_COLUMNS} for r in items]
    grid = _by_id(summary, "cv-summary-grid")
    assert [{c: r.get(c) for c in SUMMARY_GRID_COLUMNS} for r in grid.records] == api_table


def test_known_answers_on_both_sides(seeded: Store, client: TestClient) -> None:
    """The parity above is not two empty answers: the H200 decode pair is there."""
    data = DashData(seeded, version_ttl=0.0)
    out = P.update(data, None, "H200", "decode", None, 2, 3, None, None, ALL_ROWS)
    summary, ledger = out[1], out[5]
    statuses = [r[cc.STATUS] for r in _by_id(ledger, "cv-ledger-grid").rowData]
    assert statuses == [cc.MATCH, cc.MISMATCH, cc.NOT_MAPPABLE, cc.NOT_MAPPABLE]
    hidden = P.update(data, None, "H200", "decode", None, 2, 3)[5]
    assert [r[cc.STATUS] for r in _by_id(hidden, "cv-ledger-grid").rowData] == statuses[:2]
    row = _by_id(summary, "cv-summary-grid").records[0]
    api = client.get("/api/v1/crossval/summary", params={"hardware": "H200"}).json()["items"]
    assert row[cc.S_MATCH] == api[0][cc.S_MATCH] == "1/2 (50%, prefill 0/0, decode 1/2)"
    assert row[cc.S_IMPROVEMENT] == api[0][cc.S_IMPROVEMENT] == "1/1"
    assert row[cc.N_NO_DATA] == api[0][cc.N_NO_DATA] == 2


def test_token_tolerance_parity(store: Store, client: TestClient) -> None:
    """Only num_tokens 8 measured: the conc-64 workload is "no data" at x2 and compared
    with the nearest tokens at x8, on the page and in the API alike."""
    import_serving_directory(store, FIXTURE, "fixture")
    ingest_h200_tokens8_only(store)
    data = DashData(store, version_ttl=0.0)
    seen = []
    for tol in (2, 8):
        ledger = P.update(data, None, "H200", "decode", None, tol, 3, None, None, ALL_ROWS)[5]
        page = [(r[cc.WORKLOAD_ID], r[cc.STATUS]) for r in _by_id(ledger, "cv-ledger-grid").rowData]
        params = {"hardware": "H200", "phase": "decode", "token_tolerance": tol}
        items = _page_order(
            client.get("/api/v1/crossval/ledger", params=params).json()["items"], True
        )
        assert page == [(r[cc.WORKLOAD_ID], r[cc.STATUS]) for r in items]
        seen.append(sorted(status for _, status in page))
    assert seen[0] != seen[1]  # the tolerance changed the answer
    assert cc.NO_DATA in seen[0] and seen[1].count(cc.MATCH) == 2


def test_page_downloads_equal_the_api(store: Store, client: TestClient) -> None:
    """The page's summary table and ledger CSV against the API's (moved from the page
    tests): an outcome of -10 %, -1 % with perfect routing, is a Regression at ±3 %."""
    import_serving_directory(store, FIXTURE, "fixture")
    ingest_h200_candidates(store)
    refresh_ledger(store)  # as `moedash ingest` and the upload route do
    data = DashData(store, version_ttl=0.0)
    view = P.compute(data, CF.make_filters(hardware="H200", phase="decode")[0]).view
    mismatch_id = str(view[view[cc.STATUS] == cc.MISMATCH][cc.WORKLOAD_ID].iloc[0])
    store.crossval.add_outcomes(
        [
            {
                "workload_id": mismatch_id,
                "tps_per_user_deployed": 100.0,
                "tps_per_user_candidate": 90.0,
                "tps_per_user_candidate_perfect_routing": 99.0,
                "tps_per_user_deployed_perfect_routing": 100.0,
            }
        ]
    )
    for params in (
        {},
        {"hardware": "H200", "band_pct": 5, "token_tolerance": 4},
        {"model": "deepseek_r1"},
    ):
        api = client.get("/api/v1/crossval/summary", params=params).json()["items"]
        f, _ = CF.make_filters(
            params.get("model"),
            params.get("hardware"),
            None,
            None,
            params.get("token_tolerance", 2),
            params.get("band_pct", 3),
            show=CF.SHOW_ALL,
        )
        page = P.compute(data, f).summary
        api = sorted(api, key=lambda r: r[cc.N_COMPARED] == 0)  # the page: compared first
        assert (
            pd.DataFrame(api)[list(cc.SUMMARY_COLUMNS)].astype(str).values.tolist()
            == page[list(cc.SUMMARY_COLUMNS)].astype(str).values.tolist()
        )
    api_csv = client.get("/api/v1/crossval/ledger", params={"phase": "decode", "format": "csv"})
    api_led = pd.read_csv(io.StringIO(api_csv.text))
    page_csv = P.ledger_csv(data, CF.make_filters(phase="decode", show=CF.SHOW_ALL)[0])["content"]
    page_led = pd.read_csv(io.StringIO(page_csv))
    api_led = api_led.set_index(cc.WORKLOAD_ID).loc[page_led[cc.WORKLOAD_ID]].reset_index()
    cols = [*cc.LEDGER_COLUMNS, *cc.RULED_COLUMNS]
    assert page_led[cols].equals(api_led[cols])
    row = page_led.set_index(cc.WORKLOAD_ID).loc[mismatch_id]
    assert row[cc.OUTCOME] == cc.REGRESSION  # -10 %, perfect routing -1 % (within band)


def test_sweeps_script_download_equals_the_api(seeded: Store, client: TestClient) -> None:
    data = DashData(seeded, version_ttl=0.0)
    for params in ({}, {"hardware": "H200"}, {"hardware": "GB200", "phase": "prefill"}):
        f, _ = CF.make_filters(None, params.get("hardware"), params.get("phase"))
        page = P.sweeps_sh(data, f)
        api = client.get("/api/v1/crossval/sweeps", params={**params, "format": "sh"})
        assert page["content"] == api.text and page["content"].startswith("#!/bin/sh")
        assert f'filename="{page["filename"]}"' in api.headers["content-disposition"]
        plan = client.get("/api/v1/crossval/sweeps", params=params).json()
        assert plan["n_commands"] == page["content"].count("python3 -m bench_moe")


def test_guide_fit_headline_is_the_same_on_page_and_api(seeded: Store, client: TestClient) -> None:
    data = DashData(seeded, version_ttl=0.0)
    _notes, summary, *_ = P.update(data, *CASES[0][0])
    shown = _by_testid(summary, "cv-headline").children
    api = client.get("/api/v1/crossval/guide-fit").json()
    assert shown == api["headline"] and api["fixed_only"] is True
    assert api["default_rule"] == api["fit"][0]["spec"]
    assert {r["phase"] for r in api["items"]} == {"prefill", "decode"}


def test_agentic_switch_reaches_the_guide_fit_on_page_and_api(
    seeded: Store, client: TestClient
) -> None:
    data = DashData(seeded, version_ttl=0.0)
    f, notes = CF.parse_query({"traces": ["agentic"]})
    assert f.agentic and not notes and "traces=agentic" in f.search()
    page = P.compute(data, f).fit
    api = client.get("/api/v1/crossval/guide-fit", params={"fixed_only": False}).json()
    assert page is not None and page.headline == api["headline"]
    fixed = P.compute(data, CF.parse_query({})[0]).fit
    assert (
        fixed is not None
        and fixed.headline == client.get("/api/v1/crossval/guide-fit").json()["headline"]
    )
