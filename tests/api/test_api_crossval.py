"""/api/v1/serving-configs and /api/v1/crossval/* through the real app, on DuckDB and
(marker postgres) PostgreSQL."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from analysis import columns as C
from analysis import crossval_columns as cc
from db.store import Store
from ingest.records import Sweep, UploadMeta
from ingest.serving_configs import import_directory
from moedash.app import create_app
from moedash.settings import Settings
from tests.factories import make_candidates
from tests.factories.sweeps import make_run

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "serving"
H200 = "dsr1-fp8-h200-dynamo-trt"


@pytest.fixture
def token(store: Store) -> str:
    return store.tokens.create_token("ci", ["upload"])[1]


def auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def fixture_files() -> list[tuple[str, tuple[str, bytes, str]]]:
    """Every YAML of the mini data dir as a multipart part named by its relative path."""
    paths = sorted(p for p in FIXTURE.rglob("*") if p.suffix in (".yaml", ".yml"))
    return [
        ("files", (str(p.relative_to(FIXTURE)), p.read_bytes(), "application/yaml")) for p in paths
    ]


def upload(client: TestClient, secret: str, files: list[Any] | None = None) -> Any:
    return client.post(
        "/api/v1/serving-configs", files=files or fixture_files(), headers=auth(secret)
    )


@pytest.fixture
def imported(client: TestClient, token: str) -> dict[str, Any]:
    resp = upload(client, token)
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


def decode_id(client: TestClient, conc: int) -> str:
    items = client.get(
        "/api/v1/crossval/workloads", params={"hardware": "h200", "phase": "decode", "limit": 100}
    ).json()["items"]
    found = [w["workload_id"] for w in items if w["entry"] == H200 and w["conc"] == conc]
    assert len(found) == 1
    return str(found[0])


def ingest_h200_candidates(store: Store) -> None:
    """bench_moe candidates for the two H200 decode workloads (deployed: CUTLASS, TEP8).

    num_tokens 8 (conc 8): CUTLASS 1.0 ms beats TRTLLM 2.0 ms -> Match.
    num_tokens 64 (conc 64): TRTLLM 1.5 ms beats CUTLASS 3.0 ms -> Mismatch (backend).
    A failed TRTLLM row at num_tokens 8 with a better score must be ignored.
    """
    rows = [
        {C.NUM_TOKENS: 8, C.BACKEND: "CUTLASS", C.SCORE_MS: 1.0},
        {C.NUM_TOKENS: 8, C.BACKEND: "TRTLLM", C.SCORE_MS: 2.0},
        {C.NUM_TOKENS: 8, C.BACKEND: "TRTLLM", C.SCORE_MS: 0.1, C.STATUS: "failed"},
        {C.NUM_TOKENS: 64, C.BACKEND: "CUTLASS", C.SCORE_MS: 3.0},
        {C.NUM_TOKENS: 64, C.BACKEND: "TRTLLM", C.SCORE_MS: 1.5},
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
    store.ingest([sweep], b"h200 candidates", UploadMeta(trtllm_version="v1.3.0rc26"))


# --------------------------------------------------------------------------- import
def test_upload_imports_once(client: TestClient, token: str, store: Store) -> None:
    first = upload(client, token)
    assert first.status_code == 201, first.text
    body = first.json()
    # Same content hash as importing the directory itself: the tree was rebuilt exactly.
    assert body["content_hash"] == import_directory(FIXTURE).content_hash
    assert (body["n_entries"], body["n_points"], body["n_workloads"]) == (6, 16, 32)
    assert (body["n_mappable"], body["n_unmappable"]) == (20, 12)
    assert (body["n_new_workloads"], body["n_existing_workloads"]) == (32, 0)
    assert body["source"] == f"upload by ci: {len(fixture_files())} files"

    again = upload(client, token)
    assert again.status_code == 200
    assert again.json()["already_existed"] is True and again.json()["n_new_workloads"] == 0
    assert store.crossval.crossval_counts()["serving_workloads"] == 32
    listing = client.get("/api/v1/serving-configs").json()["items"]
    assert [i["import_id"] for i in listing] == [body["import_id"]]


def test_upload_errors(client: TestClient, token: str, store: Store) -> None:
    parts = fixture_files()
    bad_name = "srt-slurm/sa-submission-q2-2026/recipes/trtllm/broken.yaml"
    bad = upload(client, token, [*parts, ("files", (bad_name, b"a: [1, 2\nb: c", "text/yaml"))])
    assert bad.status_code == 422
    err = bad.json()["detail"][0]
    assert err["loc"] == ["body", "files", bad_name] and "invalid YAML" in err["msg"]

    for name in ("../etc/x.yaml", "/abs/x.yaml", "inferencex/./a.yaml", "notes.txt"):
        resp = upload(client, token, [*parts[:1], ("files", (name, b"a: 1", "text/yaml"))])
        assert resp.status_code == 422, name
        assert resp.json()["detail"][0]["loc"][:2] == ["body", "files"]

    recipes_only = [p for p in parts if not p[1][0].startswith("inferencex/configs/")]
    none = upload(client, token, recipes_only)
    assert none.status_code == 422 and "no NVIDIA master" in none.json()["detail"][0]["msg"]

    master = "inferencex/configs/nvidia-master.yaml"
    broken = upload(client, token, [("files", (master, b"e1:\n  model: x\n", "text/yaml"))])
    assert broken.status_code == 422
    assert broken.json()["detail"][0]["loc"] == ["body", "files", master]

    dup = upload(client, token, [parts[0], parts[0]])
    assert dup.status_code == 422 and dup.json()["detail"][0]["type"] == "duplicate"

    not_multipart = client.post(
        "/api/v1/serving-configs",
        content=b"a: 1",
        headers={**auth(token), "Content-Type": "text/yaml"},
    )
    assert not_multipart.status_code == 415
    assert store.crossval.crossval_counts()["serving_imports"] == 0


def test_auth(client: TestClient, token: str, store: Store, settings: Settings) -> None:
    assert client.post("/api/v1/serving-configs", files=fixture_files()).status_code == 401
    assert upload(client, "mdt_wrong").status_code == 401
    outcome = [{"workload_id": "x:decode", "tps_per_user_deployed": 1, "tps_per_user_candidate": 2}]
    no_token = client.post("/api/v1/crossval/outcomes", json=outcome)
    assert no_token.status_code == 401
    assert no_token.json()["detail"][0]["loc"] == ["header", "Authorization"]
    store.tokens.revoke_token("ci")
    assert upload(client, token).status_code == 401
    # An admin token carries every scope.
    admin = store.tokens.create_token("admin", ["admin"])[1]
    assert upload(client, admin).status_code == 201
    # Closed reads: GETs need a valid token too.
    closed = settings.model_copy(update={"read_requires_token": True})
    with TestClient(create_app(closed, store=store)) as c:
        for path in ("workloads", "ledger", "summary", "outcomes"):
            assert c.get(f"/api/v1/crossval/{path}").status_code == 401
            assert c.get(f"/api/v1/crossval/{path}", headers=auth(admin)).status_code == 200


# --------------------------------------------------------------------------- reads
def test_workloads_filters_and_paging(client: TestClient, imported: dict[str, Any]) -> None:
    page = client.get("/api/v1/crossval/workloads", params={"limit": 5, "offset": 30}).json()
    assert (page["total"], len(page["items"])) == (32, 2)
    assert set(page["items"][0]) == set(cc.WORKLOAD_COLUMNS)
    dec = client.get(
        "/api/v1/crossval/workloads", params={"phase": "decode", "mappable": "true"}
    ).json()
    assert dec["total"] == 10 and all(w["mappable"] for w in dec["items"])
    gb200 = client.get(
        "/api/v1/crossval/workloads", params={"model": "deepseek_r1", "hardware": "GB200"}
    ).json()
    assert gb200["total"] == 8 and {w["hardware"] for w in gb200["items"]} == {"GB200"}
    first = gb200["items"][0]
    assert first["num_tokens"] == 32768 and first["cuda_graph"] is False


def test_ledger_and_summary_with_known_answers(
    client: TestClient, store: Store, imported: dict[str, Any]
) -> None:
    ingest_h200_candidates(store)
    match_id, mismatch_id = decode_id(client, 8), decode_id(client, 64)
    led = client.get(
        "/api/v1/crossval/ledger", params={"hardware": "H200", "phase": "decode"}
    ).json()
    by_id = {r["workload_id"]: r for r in led["items"]}
    assert led["total"] == 4  # 2 dynamo-trt (mappable) + 2 single-node trt (not mappable)
    assert by_id[match_id]["crossval_status"] == "Match"
    assert by_id[match_id]["best_backend"] == "CUTLASS" and by_id[match_id]["deployed_rank"] == 1
    mm = by_id[mismatch_id]
    assert (mm["crossval_status"], mm["differs"]) == ("Mismatch", "backend: CUTLASS->TRTLLM")
    assert mm["deployed_gap_pct"] == pytest.approx(100.0)  # (3.0 - 1.5) / 1.5
    statuses = sorted(r["crossval_status"] for r in led["items"])
    assert statuses == ["Match", "Mismatch", "not mappable", "not mappable"]

    only = client.get("/api/v1/crossval/ledger", params={"status": "Mismatch"}).json()
    assert [r["workload_id"] for r in only["items"]] == [mismatch_id]

    csv = client.get(
        "/api/v1/crossval/ledger",
        params={"model": "deepseek_r1", "hardware": "H200", "format": "csv"},
    )
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    frame = pd.read_csv(io.StringIO(csv.text))
    assert tuple(frame.columns) == (*cc.LEDGER_COLUMNS, *cc.RULED_COLUMNS) and len(frame) == 8
    assert frame[cc.STATUS].value_counts().to_dict() == {
        "not mappable": 4,
        "no data": 2,  # prefill: no CUDA-graph-off candidates
        "Match": 1,
        "Mismatch": 1,
    }

    def h200_row(**params: Any) -> dict[str, Any]:
        items = client.get("/api/v1/crossval/summary", params=params).json()["items"]
        rows = [r for r in items if r["Hardware"] == "H200"]
        assert len(rows) == 1
        return dict(rows[0])

    row = h200_row()
    assert row["Model"] == "DeepSeek-R1"
    assert row["Match"] == "1/2 (50%, prefill 0/0, decode 1/2)"
    assert (row["n_mismatch"], row["n_no_data"], row["n_not_evaluated"]) == (1, 2, 1)

    # +10% end to end: an Improvement at the default ±3% band, Flat at ±15%.
    outcome = {
        "workload_id": mismatch_id,
        "tps_per_user_deployed": 100,
        "tps_per_user_candidate": 110,
        "source": "e2e run 1",
    }
    assert (
        client.post(
            "/api/v1/crossval/outcomes",
            json=[outcome],
            headers=auth(store.tokens.create_token("bot", ["upload"])[1]),
        ).status_code
        == 201
    )
    row = h200_row()
    assert (row["Improvement"], row["n_improvement"], row["n_not_evaluated"]) == ("1/1", 1, 0)
    row = h200_row(band_pct=15)
    assert (row["Flat"], row["n_improvement"]) == ("1/1", 0)

    csv = client.get("/api/v1/crossval/summary", params={"format": "csv"})
    table = pd.read_csv(io.StringIO(csv.text))
    assert tuple(table.columns) == cc.SUMMARY_COLUMNS
    assert set(table["Hardware"]) == {"H200", "GB200", "GB300", "B300"}


def test_bad_query_params_name_the_parameter(client: TestClient) -> None:
    cases = [
        ("ledger", {"token_tolerance": "0.5"}, "token_tolerance"),
        ("ledger", {"format": "xml"}, "format"),
        ("ledger", {"status": "maybe"}, "status"),
        ("ledger", {"phase": "both"}, "phase"),
        ("summary", {"band_pct": "-1"}, "band_pct"),
        ("summary", {"format": "yaml"}, "format"),
        ("workloads", {"limit": "0"}, "limit"),
        ("workloads", {"mappable": "perhaps"}, "mappable"),
        ("outcomes", {"band_pct": "x"}, "band_pct"),
        ("ledger", {"rule": "loose"}, "rule"),
        ("summary", {"noise_pct": "-2"}, "noise_pct"),
        ("guide", {"rule": "EXACT"}, "rule"),
        ("sweeps", {"format": "bash"}, "format"),
        ("rules", {"noise_pct": "nan"}, "noise_pct"),
    ]
    for path, params, name in cases:
        resp = client.get(f"/api/v1/crossval/{path}", params=params)
        assert resp.status_code == 422, (path, params)
        assert resp.json()["detail"][0]["loc"] == ["query", name]


# --------------------------------------------------------------------------- outcomes
def test_outcomes_post_repeat_conflict_replace(
    client: TestClient, token: str, imported: dict[str, Any]
) -> None:
    a, b = decode_id(client, 8), decode_id(client, 64)
    rec_a = {"workload_id": a, "tps_per_user_deployed": 50, "tps_per_user_candidate": 40.0}
    rec_b = {
        "workload_id": b,
        "tps_per_user_deployed": 100,
        "tps_per_user_candidate": 90,
        "tps_per_user_candidate_perfect_routing": 95,
        "tps_per_user_deployed_perfect_routing": 100,
    }
    post = client.post("/api/v1/crossval/outcomes", json=[rec_a, rec_b], headers=auth(token))
    assert post.status_code == 201, post.text
    assert post.json()["n_created"] == 2

    same = client.post("/api/v1/crossval/outcomes", json=[rec_b], headers=auth(token))
    assert same.status_code == 200
    assert same.json()["items"] == [{"workload_id": b, "state": "already existed"}]

    changed = [rec_a, {**rec_b, "tps_per_user_candidate": 91}]
    conflict = client.post("/api/v1/crossval/outcomes", json=changed, headers=auth(token))
    assert conflict.status_code == 409
    assert conflict.json()["detail"][0]["loc"] == ["body", 1, "tps_per_user_candidate"]

    replaced = client.post(
        "/api/v1/crossval/outcomes", json=changed, params={"replace": "true"}, headers=auth(token)
    )
    assert replaced.status_code == 201
    assert (replaced.json()["n_existing"], replaced.json()["n_replaced"]) == (1, 1)

    listed = client.get("/api/v1/crossval/outcomes").json()["items"]
    by_id = {r["workload_id"]: r for r in listed}
    # -20% -> Regression; -9%, and under perfect routing (both runs) -5% -> Regression
    # after perfect routing.
    assert by_id[a]["outcome"] == "Regression" and by_id[a]["change_pct"] == -20.0
    assert by_id[b]["outcome"] == "Regression after perfect routing"
    assert by_id[b]["tps_per_user_candidate"] == 91.0 and by_id[b]["updated_at"] is not None
    wide = client.get("/api/v1/crossval/outcomes", params={"band_pct": 25}).json()["items"]
    assert {r["outcome"] for r in wide} == {"Flat"}
    csv = client.get("/api/v1/crossval/outcomes", params={"format": "csv"})
    assert pd.read_csv(io.StringIO(csv.text))[cc.WORKLOAD_ID].tolist() == sorted([a, b])


def test_outcome_validation_names_the_record_field(
    client: TestClient, token: str, store: Store, imported: dict[str, Any]
) -> None:
    a = decode_id(client, 8)
    good = {"workload_id": a, "tps_per_user_deployed": 50, "tps_per_user_candidate": 40}
    cases = [
        ([good, {**good, "tps_per_user_deployed": -1}], ["body", 1, "tps_per_user_deployed"]),
        ([{**good, "tps_per_user_candidate": True}], ["body", 0, "tps_per_user_candidate"]),
        ([{**good, "tps_per_user_candidate": "40"}], ["body", 0, "tps_per_user_candidate"]),
        ([{**good, "speedup": 2}], ["body", 0, "speedup"]),
        ([{**good, "workload_id": ""}], ["body", 0, "workload_id"]),
        ([good, {**good, "workload_id": "nope:decode"}], ["body", 1, "workload_id"]),
        ([good, good], ["body", 1, "workload_id"]),
    ]
    for body, loc in cases:
        resp = client.post("/api/v1/crossval/outcomes", json=body, headers=auth(token))
        assert resp.status_code == 422, body
        assert resp.json()["detail"][0]["loc"] == loc, resp.json()
    for body in ([], {"workload_id": a}):
        resp = client.post("/api/v1/crossval/outcomes", json=body, headers=auth(token))
        assert resp.status_code == 422
    # NaN / Infinity literals in the JSON body: 422 naming the field, never 500.
    for literal in ("NaN", "Infinity", "-Infinity"):
        raw = (
            f'[{{"workload_id": "{a}", "tps_per_user_deployed": {literal}, '
            '"tps_per_user_candidate": 40}]'
        )
        resp = client.post(
            "/api/v1/crossval/outcomes",
            content=raw,
            headers={**auth(token), "Content-Type": "application/json"},
        )
        assert resp.status_code == 422, (literal, resp.text)
        assert resp.json()["detail"][0]["loc"][:3] == ["body", 0, "tps_per_user_deployed"]
    assert store.crossval.crossval_counts()["crossval_outcomes"] == 0


def test_outcome_for_a_match_workload_is_refused(
    client: TestClient,
    token: str,
    store: Store,
    imported: dict[str, Any],
    db_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ingest_h200_candidates(store)
    match_id, mismatch_id = decode_id(client, 8), decode_id(client, 64)
    rec = {"workload_id": mismatch_id, "tps_per_user_deployed": 50, "tps_per_user_candidate": 55}
    body = [rec, {**rec, "workload_id": match_id}]
    resp = client.post("/api/v1/crossval/outcomes", json=body, headers=auth(token))
    assert resp.status_code == 422
    detail = resp.json()["detail"][0]
    assert detail["loc"] == ["body", 1, "workload_id"] and "Match" in detail["msg"]
    assert store.crossval.crossval_counts()["crossval_outcomes"] == 0  # all or none
    assert (
        client.post("/api/v1/crossval/outcomes", json=[rec], headers=auth(token)).status_code == 201
    )
    # The CLI refuses the Match workload alike.
    from moedash.cli import main

    path = tmp_path / "match.json"
    path.write_text(json.dumps([{**rec, "workload_id": match_id}]))
    assert main(["outcomes", str(path), "--db", db_url]) == 1
    assert "is a Match" in capsys.readouterr().err


def test_rules_guide_and_sweeps(client: TestClient, store: Store, imported: dict[str, Any]) -> None:
    ingest_h200_candidates(store)
    mismatch_id = decode_id(client, 64)

    def status(rule: str, **extra: Any) -> str:
        led = client.get(
            "/api/v1/crossval/ledger",
            params={"hardware": "H200", "phase": "decode", "rule": rule, **extra},
        ).json()
        assert led["rule"] == rule
        row = {r["workload_id"]: r for r in led["items"]}[mismatch_id]
        assert row["reason"].startswith(row["crossval_status"])
        return str(row["crossval_status"])

    # Deployed CUTLASS TEP8 3.0 ms vs best TRTLLM TEP8 1.5 ms: a backend difference, same
    # layout, deployed 100 % slower.
    assert status("exact") == "Mismatch"
    assert status("backend") == "Mismatch"
    assert status("same_layout") == "Mismatch"
    assert status("within_noise") == "Mismatch"
    assert status("within_noise", noise_pct=100) == "Match"

    rules = client.get("/api/v1/crossval/rules", params={"hardware": "H200"}).json()
    assert set(rules["definitions"]) == {"exact", "backend", "within_noise", "same_layout"}
    assert [r["exact"] for r in rules["items"]] == ["1/2 (50%, prefill 0/0, decode 1/2)"]

    guide = client.get("/api/v1/crossval/guide").json()
    assert len(guide["published"]) == 6 and len(guide["items"]) == 12
    dsv4 = guide["items"][0]
    assert (dsv4["Model"], dsv4["hardware"], dsv4["phase"]) == (
        "DeepSeek-V4-Pro",
        "GB300",
        "prefill",
    )
    assert (dsv4["guide_match"], dsv4["guide_n"]) == (54, 54)

    sweeps = client.get("/api/v1/crossval/sweeps", params={"hardware": "h200"}).json()
    assert sweeps["filename"] == "crossval-sweeps-all-h200-all.sh"
    # The two H200 prefill workloads (graph off) have no data: one command covers both.
    assert sweeps["n_commands"] == 1
    cmd = sweeps["items"][0]["command"]
    assert "--world_size 8" in cmd and "--no_cuda_graph" in cmd and "--model deepseek_r1" in cmd
    sh = client.get("/api/v1/crossval/sweeps", params={"hardware": "H200", "format": "sh"})
    assert sh.status_code == 200 and sh.text.startswith("#!/bin/sh") and cmd in sh.text
    assert 'filename="crossval-sweeps-all-h200-all.sh"' in sh.headers["content-disposition"]


# --------------------------------------------------------------------------- CLI
# `moedash import-serving` / `moedash outcomes` share import_serving_directory and the
# store with the endpoints above.
def test_cli_import_serving_and_outcomes(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from db.store import open_store
    from moedash.cli import main

    assert main(["import-serving", str(FIXTURE), "--db", db_url]) == 0
    out = capsys.readouterr().out
    for label, value in (("entries", 6), ("points", 16), ("mappable", 20), ("new", 32)):
        assert any(line.split() == [label, str(value)] for line in out.splitlines()), out
    assert main(["import-serving", str(FIXTURE), "--db", db_url]) == 0
    assert "already imported" in capsys.readouterr().out
    assert main(["import-serving", str(tmp_path), "--db", db_url]) == 1
    assert "nvidia-master.yaml" in capsys.readouterr().err

    store = open_store(db_url)
    try:
        wid = str(store.crossval.serving_workloads({cc.PHASE: "decode"})[cc.WORKLOAD_ID].iloc[0])
    finally:
        store.close()
    rec = {"workload_id": wid, "tps_per_user_deployed": 10, "tps_per_user_candidate": 12}
    path = tmp_path / "outcomes.json"
    path.write_text(json.dumps([rec]))
    assert main(["outcomes", str(path), "--db", db_url]) == 0
    assert "1 created" in capsys.readouterr().out
    path.write_text(json.dumps([{**rec, "tps_per_user_candidate": 13}]))
    assert main(["outcomes", str(path), "--db", db_url]) == 1
    assert "replace" in capsys.readouterr().err
    assert main(["outcomes", str(path), "--db", db_url, "--replace"]) == 0
    assert "1 replaced" in capsys.readouterr().out
    path.write_text('{"not": "a list"}')
    assert main(["outcomes", str(path), "--db", db_url]) == 1
    # The API's rules: empty list, NaN / Infinity refused, naming the field.
    path.write_text("[]")
    assert main(["outcomes", str(path), "--db", db_url]) == 1
    assert "at least one outcome" in capsys.readouterr().err
    for literal in ("NaN", "Infinity"):
        path.write_text(
            f'[{{"workload_id": "{wid}", "tps_per_user_deployed": {literal}, '
            '"tps_per_user_candidate": 1}]'
        )
        assert main(["outcomes", str(path), "--db", db_url]) == 1
        assert f"{literal} is not allowed" in capsys.readouterr().err
    store = open_store(db_url)
    try:
        assert store.crossval.outcomes()[cc.TPS_CANDIDATE].tolist() == [13.0]
    finally:
        store.close()
