"""Analysis endpoints through the real app on synthetic sweeps (DuckDB and PostgreSQL)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import pytest
import yaml
from fastapi.testclient import TestClient

from analysis import columns as C
from db.store import Store
from ingest.demo.generate import dump_report, generate_report
from ingest.detect import parse_upload
from ingest.records import Sweep, UploadMeta
from moedash.app import create_app
from moedash.settings import Settings
from tests import factories
from tests.factories import sweeps

TOKENS = [1, 8, 64, 512, 4096]


@pytest.fixture
def client(db_url: str, store: Store) -> Iterator[TestClient]:
    for ws in (4, 8):
        raw = dump_report(generate_report("deepseek_v4_pro", "GB300", "NVFP4", ws, TOKENS))
        meta = UploadMeta(trtllm_version="v1.3.0rc26-synthetic", synthetic=True)
        store.ingest(parse_upload(raw, meta, f"ws{ws}.json"), raw, meta)
    settings = Settings(database_url=db_url, enable_dashboard=False)
    with TestClient(create_app(settings, store=store)) as c:
        yield c


def test_pareto_points_are_non_dominated_and_carry_recipes(client: TestClient) -> None:
    body = client.get(
        "/api/v1/pareto", params={"model": "deepseek_v4_pro", "phase": "decode", "world_size": 8}
    ).json()
    items = body["items"]
    assert items and body["provenance"]["n_candidates"] > len(items)
    assert body["provenance"]["synthetic"] is True
    for p in items:
        assert p["backend"] and p["parallel_mode"] and p["cuda_graph"] is True
        for q in items:
            dominated = (
                q["score_ms"] <= p["score_ms"]
                and q["tokens_per_s_per_gpu"] >= p["tokens_per_s_per_gpu"]
                and (q["score_ms"], q["tokens_per_s_per_gpu"])
                != (p["score_ms"], p["tokens_per_s_per_gpu"])
            )
            assert not dominated


def test_best_both_groupings_and_csv(client: TestClient) -> None:
    dash = client.get("/api/v1/best", params={"grouping": "dashboard"}).json()["items"]
    assert dash and {
        "best_backend",
        "runner_up_backend",
        "margin_pct",
        "is_tie",
        "activated_tokens_per_rank",
        "dispatch_kb",
    } <= set(dash[0])
    for row in dash:
        if row["runner_up_score_ms"] is not None:
            assert row["best_score_ms"] <= row["runner_up_score_ms"]
    bench = client.get("/api/v1/best", params={"grouping": "bench_moe"}).json()["items"]
    assert {"run_id", "num_tokens", "parallel_mode"} <= set(bench[0])
    text = client.get("/api/v1/best", params={"format": "csv"}).text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(dash)


def test_recommendation_tree_and_measured(client: TestClient) -> None:
    params = {
        "hardware": "GB300",
        "quant": "NVFP4",
        "world_size": 8,
        "attention": "dp",
        "phase": "decode",
        "num_tokens": 100,
        "model": "deepseek_v4_pro",
    }
    body = client.get("/api/v1/recommendation", params=params).json()
    assert body["tree"]["backend"] == "TRTLLM"  # ws <= 8, 100*6/8 = 75 <= 512, graph on
    assert [s["step"] for s in body["tree"]["path"]][:2] == ["STEP1", "STEP2"]
    measured = body["measured"]
    assert measured["measured_num_tokens"] == 64 and measured["exact"] is False
    assert measured["provenance"]["run_ids"]
    big = client.get("/api/v1/recommendation", params={**params, "num_tokens": 4096}).json()
    assert big["tree"]["backend"] == "MEGAMOE_CUTEDSL"  # 4096*6/8 = 3072 > 512


def test_export_yaml_env_and_measured(client: TestClient) -> None:
    params = {
        "hardware": "B300",
        "quant": "NVFP4",
        "world_size": 16,
        "attention": "dp",
        "phase": "decode",
        "num_tokens": 64,
        "model": "deepseek_v4_pro",
    }
    text = client.get("/api/v1/export", params=params).text
    cfg = yaml.safe_load(text)
    assert text.startswith("# moedash")
    assert cfg["moe_config"]["backend"] == "CUTEDSL" and cfg["enable_attention_dp"] is True
    env = client.get("/api/v1/export", params={**params, "format": "env"}).text.strip()
    assert env == "TRTLLM_FORCE_COMM_METHOD=DEEPEPLOWLATENCY"  # cross-domain, small dispatch
    gb = {**params, "hardware": "GB300", "world_size": 8}
    measured = client.get("/api/v1/export", params={**gb, "source": "measured"})
    assert measured.status_code == 200
    assert "run ids:" in measured.text
    none = client.get("/api/v1/export", params={**gb, "model": "glm_5", "source": "measured"})
    assert none.status_code in (404, 422)


def test_export_launch_and_json_workers(client: TestClient) -> None:
    params = {
        "hardware": "GB300",
        "quant": "NVFP4",
        "world_size": 8,
        "phase": "decode",
        "concurrency": 512,
        "mtp": 3,
        "model": "deepseek_v4_pro",
        "prefill_max_num_tokens": 8192,
    }
    body = client.get("/api/v1/export", params={**params, "format": "json"}).json()
    assert [w["role"] for w in body["workers"]] == ["prefill", "decode"]
    dec = body["workers"][1]
    assert dec["options"]["cuda_graph_config"]["max_batch_size"] == 64
    assert dec["options"]["max_num_tokens"] == 256 and body["release"] == "1.3.0rc26"
    assert yaml.safe_load(dec["yaml"]) == dec["options"]
    script = client.get("/api/v1/export", params={**params, "format": "launch"})
    assert script.status_code == 200 and script.text.startswith("#!/bin/sh")
    assert dec["command"] in script.text
    bad = client.get("/api/v1/export", params={**params, "release": "0.1"})
    assert bad.status_code == 422 and "release" in bad.text


def test_thresholds_and_agreement(client: TestClient) -> None:
    table = client.get("/api/v1/thresholds").json()["items"]
    assert len(table) == 5 and {"published", "derived", "verdict"} <= set(table[0])
    ev = client.get("/api/v1/thresholds", params={"evidence": True}).json()["items"]
    assert ev
    summary = client.get("/api/v1/agreement").json()["items"]
    assert summary and 0 <= summary[0]["agreement_pct"] <= 100


@pytest.mark.parametrize(
    ("path", "params", "name"),
    [
        ("/api/v1/pareto", {"x": "bogus"}, "x"),
        ("/api/v1/pareto", {"phase": "both"}, "phase"),
        ("/api/v1/best", {"grouping": "x"}, "grouping"),
        ("/api/v1/best", {"world_size": 0}, "world_size"),
        (
            "/api/v1/recommendation",
            {"hardware": "GB300", "quant": "NVFP4", "world_size": 8},
            "num_tokens",
        ),
        (
            "/api/v1/recommendation",
            {
                "hardware": "GB300",
                "quant": "NVFP4",
                "world_size": 8,
                "num_tokens": 8,
                "model": "nope",
            },
            "model",
        ),
        (
            "/api/v1/export",
            {
                "hardware": "GB300",
                "quant": "NVFP4",
                "world_size": 8,
                "num_tokens": 8,
                "model": "deepseek_v4_pro",
                "format": "xml",
            },
            "format",
        ),
        ("/api/v1/agreement", {"attention": "both"}, "attention"),
    ],
)
def test_bad_parameters_are_422_naming_them(
    client: TestClient, path: str, params: dict[str, object], name: str
) -> None:
    resp = client.get(path, params=params)
    assert resp.status_code == 422, resp.text
    assert name in resp.json()["detail"][0]["loc"]


def test_service_errors_keep_the_envelope_and_name_the_parameter(client: TestClient) -> None:
    gb = {"hardware": "GB300", "quant": "NVFP4", "world_size": 8, "num_tokens": 64}
    none = client.get("/api/v1/export", params={**gb, "model": "glm_5", "source": "measured"})
    assert none.status_code == 404
    (detail,) = none.json()["detail"]
    assert (detail["loc"], detail["type"]) == (["query", "source"], "no_data")
    unknown = client.get("/api/v1/recommendation", params={**gb, "model": "nope"})
    assert unknown.status_code == 422
    (detail,) = unknown.json()["detail"]
    assert (detail["loc"], detail["type"]) == (["query", "model"], "unknown")
    assert "unknown model 'nope'" in detail["msg"]


def test_answers_follow_an_upload_at_once(client: TestClient, store: Store) -> None:
    """The API reads the cached frames, but re-reads the store's version per request."""
    params = {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"}
    before = client.get("/api/v1/pareto", params=params).json()["provenance"]["run_ids"]
    raw = dump_report(generate_report("deepseek_v4_pro", "GB300", "NVFP4", 16, TOKENS))
    meta = UploadMeta(trtllm_version="v1.3.0rc27-synthetic", synthetic=True)
    new = store.ingest(parse_upload(raw, meta, "ws16.json"), raw, meta).runs[0].run_id
    after = client.get("/api/v1/pareto", params=params).json()["provenance"]
    assert after["run_ids"] == sorted([*before, new])
    assert "v1.3.0rc27-synthetic" in after["trtllm_versions"]
    best = client.get("/api/v1/best", params={**params, "world_size": 16}).json()["items"]
    assert best and {r["world_size"] for r in best} == {16}


# ------------------------------------------------------------------ issue 10
GB = {"hardware": "GB300", "quant": "NVFP4", "model": "deepseek_v4_pro"}


def test_answers_carry_routing_and_repeats(client: TestClient) -> None:
    for path in ("/api/v1/pareto", "/api/v1/best", "/api/v1/agreement"):
        body = client.get(path, params={"model": "deepseek_v4_pro"}).json()
        assert body["dispatch"]["used"] == ["balanced"] and body["dispatch"]["default"] is True
        assert "balanced routing" in body["dispatch"]["rule"]
        assert body["repeats"] == "median"
    every = client.get("/api/v1/best", params={"dispatch": "all"}).json()
    assert every["dispatch"]["requested"] == "all"
    latest = client.get("/api/v1/pareto", params={"repeats": "latest"}).json()
    assert latest["repeats"] == "latest" and {"n_repeats", "dispatch"} <= set(latest["items"][0])
    bench = client.get("/api/v1/best", params={"grouping": "bench_moe"}).json()
    assert bench["repeats"] == "per_run" and "dispatch" in bench["items"][0]


@pytest.mark.parametrize(
    ("path", "params", "name", "says"),
    [
        ("/api/v1/best", {"dispatch": "skewed"}, "dispatch", "this slice has: balanced"),
        ("/api/v1/pareto", {"dispatch": "skewed"}, "dispatch", "this slice has: balanced"),
        ("/api/v1/best", {"repeats": "mean"}, "repeats", ""),
        (
            "/api/v1/recommendation",
            {**GB, "world_size": 8, "num_tokens": 64, "concurrency": 64},
            "num_tokens",
            "not both",
        ),
        (
            "/api/v1/recommendation",
            {**GB, "world_size": 8, "max_num_tokens": 8192},
            "num_tokens",
            "concurrency",
        ),
        (
            "/api/v1/recommendation",
            {**GB, "world_size": 8, "num_tokens": 64, "dispatch": "skewed"},
            "dispatch",
            "balanced",
        ),
        ("/api/v1/export", {**GB, "world_size": 8, "concurrency": 0}, "concurrency", ""),
    ],
)
def test_new_parameters_are_422_naming_them(
    client: TestClient, path: str, params: dict[str, object], name: str, says: str
) -> None:
    resp = client.get(path, params=params)
    assert resp.status_code == 422, resp.text
    (detail, *_) = resp.json()["detail"]
    assert name in detail["loc"] and says in detail["msg"]


def test_concurrency_and_max_num_tokens_replace_num_tokens(client: TestClient) -> None:
    dec = client.get(
        "/api/v1/recommendation", params={**GB, "world_size": 8, "concurrency": 256, "mtp": 1}
    ).json()
    assert dec["deployment"]["num_tokens"] == 512  # 32 per rank x 2 tokens x 8 ranks
    assert dec["num_tokens_from"]["batch_per_rank"] == 32
    pre = client.get(
        "/api/v1/export",
        params={
            **GB,
            "world_size": 8,
            "phase": "prefill",
            "max_num_tokens": 8192,
            "format": "json",
        },
    ).json()
    assert pre["num_tokens"] == 65536 and pre["num_tokens_from"]["phase"] == "prefill"
    assert isinstance(pre["warnings"], list)


def test_capabilities_from_the_data_and_conflicts_shown(client: TestClient, store: Store) -> None:
    rows = [
        {C.BACKEND: "CUTLASS", C.COMM: "NVLINK_ONE_SIDED", C.SCORE_MS: 1.0},
        {C.BACKEND: "TRTLLM", C.COMM: "NVLINK_TWO_SIDED", C.SCORE_MS: 1.2},
    ]
    frame = factories.make_candidates(
        [{C.CANDIDATE_INDEX: i, C.WORLD_SIZE: 8, **r} for i, r in enumerate(rows)]
    )
    meta = sweeps.make_run(model="deepseek_v4_pro", hardware="B300", quant="NVFP4", world_size=8)
    store.ingest(
        [Sweep(key="", run=meta, candidates=frame[list(C.CANDIDATE_COLUMNS)])],
        b"b300-mnnvl",
        UploadMeta(hardware="B300"),
    )
    body = client.get("/api/v1/capabilities", params={"hardware": "b300"}).json()
    assert {(r["backend"], r["comm"]) for r in body["items"]} == {
        ("CUTLASS", "NVLINK_ONE_SIDED"),
        ("TRTLLM", "NVLINK_TWO_SIDED"),
    }
    (conflict,) = body["conflicts"]
    assert conflict["subject"] == "mnnvl" and conflict["used"] == "data"
    params = {
        "hardware": "B300",
        "quant": "NVFP4",
        "world_size": 8,
        "num_tokens": 64,
        "model": "deepseek_v4_pro",
    }
    rec = client.get("/api/v1/recommendation", params=params).json()
    assert rec["capability_conflicts"] and "no MNNVL for B300" in rec["capability_conflicts"][0]
    # the tree walks B300 with the MNNVL the data proves: AUTO expects NVLINK_ONE_SIDED
    assert rec["tree"]["expected_comm"] in ("NVLINK_ONE_SIDED", "NONE")
    assert rec["tree"]["coverage"] == "inside the guide's coverage"
    h200 = client.get(
        "/api/v1/export", params={**params, "hardware": "H200", "format": "json"}
    ).json()
    # one coverage answer: the JSON flag, its sentence and the warning say the same
    assert h200["in_guide_coverage"] is False
    assert (
        h200["coverage"].startswith("outside the guide's coverage") and "H200" in h200["coverage"]
    )
    assert h200["coverage"] in h200["warnings"]
