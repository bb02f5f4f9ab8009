"""Parity: the /compare and /history pages show what GET /api/v1/compare and
/api/v1/history* answer -- the same service functions, each side through its own read
path (``DashData``) over the same store (DuckDB; PostgreSQL with the postgres marker).

The page side is what the registered Dash callbacks return for the control values a
browser sends, and the CSV downloads; the API side is the real app over HTTP.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from analysis import compare as K
from dashboard.app import create_dash
from dashboard.pages import compare as CP
from dashboard.pages import compare_form as CF
from dashboard.pages import history as HP
from dashboard.pages import history_form as HF
from dashboard.pages.compare_view import COUNTS, GRID_COLUMNS
from db.store import Store
from moedash.app import create_app
from moedash.settings import Settings
from service.frames import DashData
from tests.factories import version_sweeps as V
from tests.factories.dashboard import by_id, by_testid, callback, text

CASES: list[dict[str, Any]] = [
    {"base": V.RC27, "head": V.RC28, **V.SLICE},
    {"base": V.RC9, "head": V.RC28, **V.SLICE, "phase": "decode", "threshold_pct": 2.0},
    {"base": "3", "head": "4", **V.SLICE, "repeats": "latest"},
]


@pytest.fixture
def seeded(store: Store) -> Store:
    V.seed_versions(store)
    return store


@pytest.fixture
def api(db_url: str, seeded: Store) -> Iterator[TestClient]:
    settings = Settings(database_url=db_url, enable_dashboard=False)
    with TestClient(create_app(settings, store=seeded)) as client:
        yield client


@pytest.fixture
def page(seeded: Store) -> Any:
    return create_dash(DashData(seeded, version_ttl=0.0))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


@pytest.mark.parametrize("params", CASES, ids=lambda p: f"{p['base']}-vs-{p['head']}")
def test_compare_page_shows_the_api_answer(
    api: TestClient, page: Any, params: dict[str, Any]
) -> None:
    form = CF.make_form(**params)
    body = api.get("/api/v1/compare", params=params).json()
    # the page's "same answer from the API" link asks exactly that question
    assert api.get(form.api_href()).json() == body
    values = [getattr(form, k) if getattr(form, k) is not None else CF.ALL for k in CF.FIELDS]
    shown = callback(page, "cmp-body.children")(*values)[0]
    for key, _ in COUNTS:
        assert int(by_testid(shown, f"cmp-count-{key}").children) == body["counts"][key]
    rows = by_id(shown, "cmp-grid").rowData
    # the grid orders rows for attention; as sets of rows they are the API's items
    cols = [c for c in GRID_COLUMNS if c in body["items"][0]]
    key = (K.CONFIG_LABEL, "num_tokens", "phase", "attn", "dispatch")

    def index(items: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
        return {tuple(r[k] for k in key): r for r in items}

    got, want = index(rows), index(body["items"])
    assert got.keys() == want.keys() and len(rows) == len(body["items"])
    for k, row in got.items():
        assert all(_same(row[c], want[k][c]) for c in cols), (k, row, want[k])
    best = by_id(shown, "cmp-best-grid")
    best_rows = best.rowData if best is not None else []
    pick = ("num_tokens", K.BASE_BEST, K.HEAD_BEST, K.GAIN_PCT)
    assert [tuple(r[c] for c in pick) for r in best_rows] == [
        tuple(r[c] for c in pick) for r in body["best_changes"]
    ]


@pytest.mark.parametrize("params", CASES[:2], ids=["versions", "decode"])
def test_compare_csv_is_the_api_csv(api: TestClient, page: Any, params: dict[str, Any]) -> None:
    resp = api.get("/api/v1/compare", params={**params, "format": "csv"})
    got = CP.csv_download(page.server.config["MOEDASH_DATA"], CF.make_form(**params))
    assert got is not None and got["content"] == resp.text
    assert f'filename="{got["filename"]}"' in resp.headers["content-disposition"]


def test_history_page_shows_the_api_answer(api: TestClient, page: Any) -> None:
    params = {**V.SLICE, "phase": "decode"}
    body = api.get("/api/v1/history", params={**params, "best_only": "true"}).json()
    form = HF.Form(**params, base=V.RC27, head=V.RC28)
    values = [getattr(form, k) if getattr(form, k) is not None else HF.ALL for k in HF.FIELDS]
    shown = callback(page, "hist-body.children")(*values)[0]
    fig = by_id(shown, "hist-graph").figure
    drawn = {(x, y) for t in fig.data for x, y in zip(t.x, t.y, strict=True)}
    assert drawn == {(r["trtllm_version"], r["score_ms"]) for r in body["items"]}
    assert list(fig.layout.xaxis.categoryarray) == [v["version"] for v in body["versions"]]
    front = api.get("/api/v1/history/frontier", params=params).json()
    ffig = by_id(shown, "hist-frontier-graph").figure
    drawn = {(t.name, x, y) for t in ffig.data for x, y in zip(t.x, t.y, strict=True)}
    assert drawn == {
        (r["trtllm_version"], r["score_ms"], r["tokens_per_s_per_gpu"]) for r in front["items"]
    }
    change = api.get(
        "/api/v1/history/frontier-change", params={**params, "base": V.RC27, "head": V.RC28}
    ).json()
    (item,) = change["slices"]
    numbers = text(by_testid(shown, "hist-fc-numbers"))
    for name in ("throughput_change_pct", "latency_change_pct", "hypervolume_change_pct"):
        assert f"{item['summary'][name]:+.2f} %" in numbers


def test_history_csv_is_the_api_rows(api: TestClient, page: Any) -> None:
    params = {**V.SLICE, "phase": "decode", "num_tokens": 256}
    body = api.get("/api/v1/history", params={**params, "best_only": "true"}).json()
    got = HP.csv_download(page.server.config["MOEDASH_DATA"], HF.make_form(**params))
    assert got is not None
    lines = got["content"].splitlines()
    assert len(lines) == 1 + len(body["items"])
    header = lines[0].split(",")
    versions = [line.split(",")[header.index("trtllm_version")] for line in lines[1:]]
    assert versions == [r["trtllm_version"] for r in body["items"]]
