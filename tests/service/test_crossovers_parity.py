"""Parity: the /crossovers page and GET /api/v1/crossovers give the same answer on the
same store (DuckDB; PostgreSQL with the postgres marker).

The page side is what the registered Dash callback returns for the control values a
browser sends (switch grid rows, series list, the chart's bands and curves) and the CSV
download; the API side is the real app over HTTP. Each side has its own read path, so a
shared cache cannot hide a difference.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from dashboard.pages import crossovers as P
from dashboard.pages import crossovers_form as F
from dashboard.pages.crossovers_render import GRID_COLUMNS
from db.store import Store
from tests.factories.dashboard import seed_store, walk
from tests.service.test_crossovers import GEMM_SLICE, REPEAT_SLICE, seed_crossovers
from tests.service.test_parity_analysis import callback

SLICES: list[dict[str, Any]] = [
    {**GEMM_SLICE},
    {**GEMM_SLICE, "axis": "activated_tokens_per_rank"},
    {**GEMM_SLICE, "option": "backend+comm", "axis": "dispatch_kb"},
    {**REPEAT_SLICE},
    {**REPEAT_SLICE, "world_size": 8, "phase": "decode", "option": "comm"},
    {"model": "deepseek_v4_pro"},
    {"model": "kimi_k2", "option": "parallel_mode"},
    {},
    {"phase": "decode", "attention": "dp", "dispatch": "balanced", "option": "backend+comm"},
]


@pytest.fixture(scope="module")
def seeded(module_store: Store) -> Store:
    seed_crossovers(module_store)
    seed_store(module_store)  # the dashboard's known sweep and a 40-candidate kimi_k2 cell
    return module_store


def _controls(params: dict[str, Any], series: str | None = None) -> list[Any]:
    form = F.make_form(**params, series=series)
    values = [getattr(form, k) if getattr(form, k) is not None else F.ALL for k in F.FILTERS]
    return [*values, form.option, form.axis, form.series]


@pytest.mark.parametrize(
    "params", SLICES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "all"
)
def test_switches_series_bands_and_curves_agree(
    api: TestClient, page: Any, params: dict[str, Any]
) -> None:
    body = api.get("/api/v1/crossovers", params={**params, "curves": "true"}).json()
    out = callback(page, "xo-body.children")(*_controls(params))
    shown, _, charted, series_opts = out[:4]
    assert [o["value"] for o in series_opts] == [s["series_label"] for s in body["series"]]
    grid = next((c for c in walk(shown) if getattr(c, "id", None) == "xo-switch-grid"), None)
    rows = grid.rowData if grid is not None else []
    assert len(rows) == len(body["switches"])
    for got, want in zip(rows, body["switches"], strict=True):
        assert {k: got[k] for k in GRID_COLUMNS} == {k: want[k] for k in GRID_COLUMNS}
    if not body["series"]:
        return
    # the chart: one band per segment of the charted series, one curve per option
    fig = next(c for c in walk(shown) if getattr(c, "id", None) == "xo-graph").figure
    sid = next(s["series"] for s in body["series"] if s["series_label"] == charted)
    segments = [s["option"] for s in body["segments"] if s["series"] == sid]
    assert [s.label.text for s in fig.layout.shapes] == segments
    points = [p for p in body["points"] if p["series"] == sid]
    drawn = {(t.name, float(x), float(y)) for t in fig.data for x, y in zip(t.x, t.y, strict=True)}
    assert drawn == {(p["option"], p["axis_value"], p["score_ms"]) for p in points}


@pytest.mark.parametrize("params", SLICES[:5])
def test_csv_download_equals_the_api_csv(
    api: TestClient, page: Any, params: dict[str, Any]
) -> None:
    resp = api.get("/api/v1/crossovers", params={**params, "format": "csv"})
    data = page.server.config["MOEDASH_DATA"]
    download = P.csv_download(data, F.make_form(**params))
    assert download is not None
    assert download["content"] == resp.text
    assert f'filename="{download["filename"]}"' in resp.headers["content-disposition"]


def test_every_series_of_a_slice_can_be_charted(api: TestClient, page: Any) -> None:
    body = api.get("/api/v1/crossovers", params={"model": "deepseek_v4_pro", "curves": "true"})
    labels = [s["series_label"] for s in body.json()["series"]]
    assert len(labels) > 1
    for label in labels:
        out = callback(page, "xo-body.children")(*_controls({"model": "deepseek_v4_pro"}, label))
        assert out[2] == label
        assert urlencode({"series": label}) in out[1]  # the permalink names the series
