"""Parity: the /predictions page and GET /api/v1/predictions/validation give the same
numbers -- the page's tables (leave one token count out, leave one model out, what to
measure next) and its CSV download against the API's JSON over HTTP, each through its
own read path; and the page's URL query, sent to the API, asks the same question.

The validations asked here are computed once for the module and shared through the
database, as the warm-up at start and the recomputation after an upload do
(``service.predictions.warm_validations``): the page and the API then read the same
stored answer, each rendering it its own way -- which is what these tests compare. That
both compute it the same way is one function (``service.predictions.validation``);
tests/service/test_predictions_shared.py checks a shared answer equals a computed one."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from dashboard.pages import predictions as page_mod
from dashboard.pages import predictions_view as V
from db.store import Store
from ingest.bench_moe import parse_bench_moe
from ingest.demo.generate import dump_report, generate_report
from ingest.records import UploadMeta
from service import predictions as S
from service import shared_answers as shared
from service.frames import Cell, DashData

TOKENS = tuple(2**j for j in range(0, 15, 1))
CELL = {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"}


@pytest.fixture(scope="module")
def seeded(module_store: Store) -> Store:
    for model in ("deepseek_v4_pro", "glm_5", "kimi_k2"):
        raw = dump_report(generate_report(model, "GB300", "NVFP4", 8, TOKENS))
        meta = UploadMeta(hardware="GB300", filename=f"{model}.json")
        module_store.ingest(parse_bench_moe(raw, meta), raw, meta)
    data = DashData(module_store)
    with shared.writing():  # the two confidences the tests ask, once (module docstring)
        for confidence in (0.9, 0.8):
            S.validation(data, **CELL, confidence=confidence)
    return module_store


def _page_answer(store: Store, query: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    data = DashData(store, version_ttl=0.0)
    state = page_mod.parse_state(data, query)
    got = page_mod.answer(data, state)
    assert isinstance(got, dict)
    return got, state


def _same(frame: pd.DataFrame, rows: tuple[tuple[str, str], ...], summary: dict[str, Any]) -> None:
    for (key, name), row in zip(rows, frame.to_dict("records"), strict=False):
        assert row["answer"] == name
        for col in ("n", "censored", "median_regret_pct", "p90_regret_pct", "worst_regret_pct",
                    "wrong_picks"):  # fmt: skip
            assert row[col] == pytest.approx(summary[key][col], nan_ok=True), (key, col)


def test_page_tables_equal_the_api(api: TestClient, seeded: Store) -> None:
    got, state = _page_answer(seeded, CELL)
    body = api.get("/api/v1/predictions/validation" + state.search()).json()
    assert body["cell"] == CELL and body["confidence"] == 0.9
    assert body["summary"]["n_queries"] >= 10
    _same(V.token_summary(got), V.TOKEN_ROWS, body["summary"])
    lomo = body["leave_one_model_out"]["summary"]
    assert lomo["n_workloads"] > 0  # three models on GB300 NVFP4
    table = V.model_summary(got)
    _same(table, V.MODEL_ROWS, lomo)
    paired = table.iloc[len(V.MODEL_ROWS) :]
    assert list(paired["n"]) == [lomo["paired"]["n"]] * 2
    assert V.coverage_pct(got["summary"]) == pytest.approx(100 * body["summary"]["coverage"])
    nxt = V.next_frame(got)
    assert len(nxt) == len(body["measure_next"]) > 0
    for row, want in zip(nxt.to_dict("records"), body["measure_next"], strict=True):
        assert row["command"] == want["command"] and row["num_tokens"] == want["num_tokens"]
        assert row["p_fastest"] == pytest.approx(100 * want["p_fastest"])
        assert row["expected_regret_pct"] == pytest.approx(want["expected_regret_pct"])


def test_page_download_holds_the_api_rows(api: TestClient, seeded: Store) -> None:
    data = DashData(seeded, version_ttl=0.0)
    state = page_mod.PredictionsState(Cell(**CELL), 0.8)
    assert state.search().endswith("confidence=0.8")
    got = page_mod.csv_download(data, state)
    assert isinstance(got, dict)
    assert got["filename"] == "held-out-token-counts_deepseek_v4_pro_gb300_nvfp4.csv"
    body = api.get("/api/v1/predictions/validation" + state.search()).json()
    assert body["confidence"] == 0.8
    csv = pd.read_csv(pd.io.common.StringIO(got["content"]))
    assert len(csv) == len(body["items"])
    want = [r["regret_pct"] for r in body["items"]]
    assert csv[V.HELD_OUT_COLUMNS["regret_pct"]].tolist() == pytest.approx(want, nan_ok=True)
    assert csv[V.HELD_OUT_COLUMNS["num_tokens"]].tolist() == [
        r["num_tokens"] for r in body["items"]
    ]


def test_an_unknown_cell_falls_back(seeded: Store) -> None:
    _, state = _page_answer(seeded, {"model": "nope", "hardware": "GB300", "quant": "NVFP4"})
    assert state.cell is not None and state.cell.model != "nope"


def test_an_empty_store_says_so(store: Store) -> None:
    empty = page_mod.answer(DashData(store), page_mod.parse_state(DashData(store), {}))
    assert empty == "No runs in the database yet."
