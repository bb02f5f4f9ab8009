"""The Pareto page's CSV downloads: the frontier and every point, with units and names."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from analysis import columns as C
from dashboard.app import create_dash
from dashboard.pages import pareto
from dashboard.pages.pareto_downloads import csv_download
from db.store import Store
from service.frames import Cell, DashData
from tests.factories.dashboard import (
    KNOWN_FRONTIER,
    KNOWN_FRONTIER_TRTLLM,
    callback,
    seed_store,
    walk,
)

KNOWN = Cell("deepseek_v4_pro", "GB300", "NVFP4")
CONTROLS_DEFAULT = ["all", "decode", "all", [], [], [], [], C.SCORE_MS, C.TOKENS_PER_S_PER_GPU]


@pytest.fixture(scope="module")
def data(module_store: Store) -> DashData:
    seed_store(module_store)
    return DashData(module_store, version_ttl=0.0)


def _rows(payload: dict[str, Any]) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(payload["content"])))


def test_frontier_csv_holds_the_known_frontier_with_units(data: DashData) -> None:
    got = csv_download(data, "frontier", pareto.ParetoQuery(cell=KNOWN))
    assert got is not None and got["type"] == "text/csv"
    assert got["filename"] == "pareto-frontier-deepseek_v4_pro-gb300-nvfp4-8-gpus-decode.csv"
    rows = _rows(got)
    assert {int(r["candidate_index"]) for r in rows} == KNOWN_FRONTIER
    header = got["content"].splitlines()[0].split(",")
    for name in ("latency_score_ms", "throughput_tokens_per_s_per_gpu", "world_size_gpus"):
        assert name in header
    assert header[:3] == ["model", "hardware", "quant"]
    by_cand = {int(r["candidate_index"]): r for r in rows}
    assert float(by_cand[2]["latency_score_ms"]) == pytest.approx(2.0)
    # tokens / (score_ms / 1000) / world size
    assert float(by_cand[2]["throughput_tokens_per_s_per_gpu"]) == pytest.approx(1024 / 2e-3 / 8)
    assert {r["model"] for r in rows} == {"deepseek_v4_pro"}


def test_points_csv_holds_every_plotted_point_and_marks_the_frontier(data: DashData) -> None:
    got = csv_download(data, "points", pareto.ParetoQuery(cell=KNOWN))
    assert got is not None
    assert got["filename"] == "pareto-points-deepseek_v4_pro-gb300-nvfp4-8-gpus-decode.csv"
    rows = _rows(got)
    # decode successes 0-3; 4 is prefill, 5 failed, 6 skipped
    assert [int(r["candidate_index"]) for r in rows] == [0, 1, 2, 3]
    on = {int(r["candidate_index"]) for r in rows if r["on_frontier"] == "True"}
    assert on == KNOWN_FRONTIER


def test_csv_follows_the_filters(data: DashData) -> None:
    q = pareto.ParetoQuery(cell=KNOWN, backend=("TRTLLM",))
    rows = _rows(csv_download(data, "frontier", q) or {})
    assert {int(r["candidate_index"]) for r in rows} == KNOWN_FRONTIER_TRTLLM
    both = pareto.ParetoQuery(cell=KNOWN, phase="all")
    got = csv_download(data, "points", both)
    assert got is not None and "2-phases" in got["filename"]
    assert [int(r["candidate_index"]) for r in _rows(got)] == [0, 1, 2, 3, 4]


def test_empty_filter_gives_a_header_only_file_named_for_the_query(data: DashData) -> None:
    q = pareto.ParetoQuery(cell=KNOWN, ws=64)
    got = csv_download(data, "frontier", q)
    assert got is not None
    assert got["content"].splitlines()[0].startswith("model,hardware,quant")
    assert len(got["content"].splitlines()) == 1
    assert got["filename"] == "pareto-frontier-deepseek_v4_pro-gb300-nvfp4-64-gpus-decode.csv"
    assert csv_download(data, "frontier", pareto.ParetoQuery(cell=None)) is None


def test_buttons_are_on_the_page_and_their_callbacks_answer(data: DashData) -> None:
    layout = pareto.layout(data, model=KNOWN.model, hardware=KNOWN.hardware, quant=KNOWN.quant)
    ids = {getattr(c, "id", None) for c in walk(layout)}
    assert {"pareto-csv-frontier-btn", "pareto-csv-points-btn"} <= ids
    assert {"pareto-csv-frontier", "pareto-csv-points"} <= ids
    app = create_dash(data)
    values = [KNOWN.key, *CONTROLS_DEFAULT, ["x", "y"], "median"]
    got = callback(app, "pareto-csv-points.data")(1, *values)
    assert [int(r["candidate_index"]) for r in _rows(got)] == [0, 1, 2, 3]
    got = callback(app, "pareto-csv-frontier.data")(1, *values)
    assert {int(r["candidate_index"]) for r in _rows(got)} == KNOWN_FRONTIER
