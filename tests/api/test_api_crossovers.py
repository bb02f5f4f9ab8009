"""GET /api/v1/crossovers over HTTP on a real store (DuckDB; PostgreSQL with the marker):
the known switches, CSV named for the slice, and a 422 naming the parameter and the
allowed values for every kind of bad input (stores: tests/service/test_crossovers.py)."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from fastapi.testclient import TestClient

from db.store import Store
from tests.service.test_crossovers import GEMM_SLICE, REPEAT_SLICE, seed_crossovers

URL = "/api/v1/crossovers"


@pytest.fixture
def api(client: TestClient, store: Store) -> TestClient:
    seed_crossovers(store)
    return client


def test_the_unknown_gemm_backends_switch_twice(api: TestClient) -> None:
    body = api.get(URL, params=GEMM_SLICE).json()
    assert (body["option"], body["axis"], body["filters"]) == ("backend", "num_tokens", GEMM_SLICE)
    assert body["units"] == {"axis": "tokens", "score": "ms", "margin": "%", "noise": "%"}
    rows = [(s["before"], s["after"], s["bracket_lo"], s["bracket_hi"]) for s in body["switches"]]
    assert rows == [("GEMM_ALPHA", "GEMM_BETA", 2.0, 4.0), ("GEMM_BETA", "GEMM_GAMMA", 16.0, 32.0)]
    first = body["switches"][0]
    assert first["margin_lo_pct"] == pytest.approx(25.0)
    assert (first["n_before"], first["n_after"], first["verdict"]) == (2, 3, "robust")
    # the switch names its series; the series row carries the slice's columns
    assert "model" not in first and first["series_label"].startswith("toy_moe · H200 · FP8")
    (series,) = body["series"]
    assert (series["series"], series["model"], series["world_size"]) == (
        first["series"],
        "toy_moe",
        1,
    )
    assert (series["cuda_graph"], series["attn"], series["dispatch"]) == (True, "D", "balanced")
    assert [s["option"] for s in body["segments"]] == ["GEMM_ALPHA", "GEMM_BETA", "GEMM_GAMMA"]
    assert body["series"][0]["rank1_sequence"] == "GEMM_ALPHA → GEMM_BETA → GEMM_GAMMA"
    assert "points" not in body
    assert body["provenance"]["n_candidates"] == 21
    curves = api.get(URL, params={**GEMM_SLICE, "curves": "true"}).json()["points"]
    assert len(curves) == 21 and {p["option"] for p in curves} == set(
        ["GEMM_ALPHA", "GEMM_BETA", "GEMM_GAMMA"]
    )
    assert all(p["score_ms"] > 0 and p["rank"] in (1, 2, 3) for p in curves)


def test_repeats_that_flip_answer_a_tie_and_missing_numbers_are_null(api: TestClient) -> None:
    body = api.get(URL, params={**REPEAT_SLICE, "option": "backend comm"}).json()
    assert body["option"] == "backend+comm"
    (sw,) = body["switches"]
    assert (sw["verdict"], sw["noise_source"]) == ("tie within noise", "repeats")
    assert (sw["before"], sw["after"]) == ("TRTLLM + NVLINK_ONE_SIDED", "MEGAMOE_CUTEDSL + NONE")


def test_csv_is_named_for_the_slice(api: TestClient) -> None:
    params = {**GEMM_SLICE, "world_size": 1, "phase": "decode", "format": "csv"}
    resp = api.get(URL, params=params)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv")
    name = "crossovers_backend_num_tokens_toy_moe_H200_FP8_ws1_decode.csv"
    assert resp.headers["content-disposition"] == f'attachment; filename="{name}"'
    rows = list(csv.DictReader(io.StringIO(resp.text)))
    assert [(r["before"], r["bracket_lo"], r["verdict"]) for r in rows] == [
        ("GEMM_ALPHA", "2.0", "robust"),
        ("GEMM_BETA", "16.0", "robust"),
    ]
    seg = api.get(URL, params={**params, "table": "segments"})
    assert (
        'filename="crossovers_backend_num_tokens_toy_moe_H200_FP8_ws1_decode_segments.csv"'
        in (seg.headers["content-disposition"])
    )
    assert seg.text.splitlines()[0].startswith("series,series_label,segment,option,axis_lo")


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"option": "kernel"}, "option", "allowed: backend, comm, backend+comm, parallel_mode"),
        ({"axis": "latency"}, "axis", "allowed: num_tokens, activated_tokens_per_rank"),
        ({"model": "nope"}, "model", "stored: [deepseek_v4_pro, toy_moe]"),
        ({"model": "toy_moe", "hardware": "b300"}, "hardware", "stored: [H200]"),
        ({"model": "toy_moe", "world_size": 8}, "world_size", "stored: [1]"),
        ({**GEMM_SLICE, "phase": "prefill"}, "phase", "stored: [decode]"),
        ({**GEMM_SLICE, "attention": "tp"}, "attention", "stored: [dp]"),
        ({**GEMM_SLICE, "dispatch": "hot"}, "dispatch", "stored: [balanced]"),
        ({**GEMM_SLICE, "run_id": 999}, "run_id", "runs [999]"),
        ({"phase": "decode", "cuda_graph": "false"}, "cuda_graph", "phase=prefill"),
        # malformed values are refused by the parameter model, with the allowed ones
        ({"phase": "both"}, "phase", "'decode' or 'prefill'"),
        ({"attention": "ep"}, "attention", "'dp' or 'tp'"),
        ({"world_size": "eight"}, "world_size", "valid integer"),
        ({"format": "xml"}, "format", "'json' or 'csv'"),
        ({"table": "rows"}, "table", "'switches', 'segments', 'series' or 'points'"),
    ],
)
def test_bad_input_is_a_422_naming_the_parameter_and_the_allowed_values(
    api: TestClient, params: dict[str, Any], field: str, words: str
) -> None:
    resp = api.get(URL, params=params)
    assert resp.status_code == 422, resp.text
    (item,) = resp.json()["detail"]
    assert item["loc"] == ["query", field]
    assert words in item["msg"]


def test_an_empty_store_answers_empty_tables(client: TestClient) -> None:
    body = client.get(URL).json()
    assert body["switches"] == [] and body["series"] == [] and body["segments"] == []
    assert body["provenance"]["n_candidates"] == 0
    assert client.get(URL, params={"model": "x"}).json()["detail"][0]["msg"].endswith("none")
