"""Pareto CSV downloads in a real browser: a click on each button saves a file named for
the slice, holding the frontier / every point of the chart (fixture
``tests.factories.dashboard``: cell deepseek_v4_pro · GB300 · NVFP4, world size 8,
decode frontier = candidates 1 and 2)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from db.store import open_store
from tests.factories.dashboard import KNOWN_FRONTIER, KNOWN_FRONTIER_TRTLLM, seed_store
from tests.factories.servers import running_server

pytestmark = pytest.mark.browser

PARETO = "/pareto?model=deepseek_v4_pro&hardware=GB300&quant=NVFP4"
SLICE = "deepseek_v4_pro-gb300-nvfp4-8-gpus-decode"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("pareto-csv") / "moedash.duckdb"
    url = f"duckdb:///{db}"
    store = open_store(url)
    seed_store(store)
    store.close()  # DuckDB: one process per file; the server opens it next
    with running_server(url) as base:
        yield base


def _download(page: Any, button: str, tmp_path: Path) -> tuple[str, list[dict[str, str]]]:
    with page.expect_download(timeout=30_000) as info:
        page.locator(button).click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return info.value.suggested_filename, list(csv.DictReader(io.StringIO(path.read_text())))


def test_frontier_and_points_buttons_download_what_the_chart_shows(
    server: str, page: Any, tmp_path: Path
) -> None:
    page.goto(server + PARETO)
    page.wait_for_selector("[data-testid=pareto-count]", timeout=30_000)
    page.wait_for_load_state("networkidle")

    name, rows = _download(page, "#pareto-csv-frontier-btn", tmp_path)
    assert name == f"pareto-frontier-{SLICE}.csv"
    assert {int(r["candidate_index"]) for r in rows} == KNOWN_FRONTIER
    assert {"latency_score_ms", "throughput_tokens_per_s_per_gpu"} <= set(rows[0])

    name, rows = _download(page, "#pareto-csv-points-btn", tmp_path)
    assert name == f"pareto-points-{SLICE}.csv"
    assert [int(r["candidate_index"]) for r in rows] == [0, 1, 2, 3]
    assert {int(r["candidate_index"]) for r in rows if r["on_frontier"] == "True"} == (
        KNOWN_FRONTIER
    )

    # the file follows the filters on screen (permalink with backend=TRTLLM)
    page.goto(server + PARETO + "&backend=TRTLLM")
    page.wait_for_selector("[data-testid=pareto-count]", timeout=30_000)
    page.wait_for_load_state("networkidle")
    _, rows = _download(page, "#pareto-csv-frontier-btn", tmp_path)
    assert {int(r["candidate_index"]) for r in rows} == KNOWN_FRONTIER_TRTLLM
    assert page.errors == []
