"""The store contract, on a fresh DuckDB file and again on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from analysis import columns as C
from db import Conflict, NotFound, StoreError
from db.errors import DatabaseLocked, UniqueViolation
from db.store import Store, open_store
from ingest.records import UploadMeta
from tests.factories.sweeps import make_sweep

META = UploadMeta(hardware="GB300", trtllm_version="v1.3.0rc26", filename="a.json")


def test_schema_version_and_reopen_is_idempotent(db_url: str) -> None:
    first = open_store(db_url)
    version = first.upgrade()
    first.close()
    again = open_store(db_url)
    assert again.upgrade() == version >= 2
    again.close()


def test_ingest_stores_runs_candidates_and_raw_bytes(store: Store) -> None:
    sweep = make_sweep(30)
    raw = b'{"benchmark": "bench_moe", "x": Infinity}'
    result = store.ingest([sweep], raw, META, uploaded_by="ci")
    assert not result.already_existed
    assert result.n_candidates == 30
    run_id = result.runs[0].run_id
    assert store.table_counts() == {"uploads": 1, "runs": 1, "candidates": 30, "api_tokens": 0}
    assert store.raw_upload(run_id).content == raw
    run = store.get_run(run_id)
    assert run["model"] == "deepseek_v4_pro" and run["hardware"] == "GB300"
    assert run["n_success"] == 27 and run["n_failed"] == 3
    assert run["model"] == "deepseek_v4_pro" and run["filename"] == "a.json"
    assert run["uploaded_by"] == "ci"


def test_candidates_round_trip_losslessly(store: Store) -> None:
    sweep = make_sweep(25, seed=3)
    run_id = store.ingest([sweep], b"x1", META).runs[0].run_id
    page = store.list_candidates(run_id, limit=1000)
    got = page.items
    assert page.total == 25
    want = sweep.candidates
    assert list(got[C.CANDIDATE_INDEX]) == list(want[C.CANDIDATE_INDEX])
    for col in (C.SCORE_MS,):
        pd.testing.assert_series_equal(
            got[col].astype(float), want[col].astype(float), check_names=False
        )
    for col in (C.BACKEND, C.STATUS, C.SKIP_REASON, C.PARALLEL_MODE, C.COMM):
        assert [None if pd.isna(v) else v for v in got[col]] == [
            None if pd.isna(v) else v for v in want[col]
        ]
    assert list(got[C.CUDA_GRAPH].astype(bool)) == list(want[C.CUDA_GRAPH])


def test_same_bytes_twice_is_one_run(store: Store) -> None:
    first = store.ingest([make_sweep(10)], b"same", META)
    second = store.ingest([make_sweep(10)], b"same", META)
    assert second.already_existed and second.runs == first.runs
    assert store.table_counts()["candidates"] == 10


def test_same_bytes_other_metadata_conflicts_and_writes_nothing(store: Store) -> None:
    store.ingest([make_sweep(10)], b"same", META)
    before = store.table_counts()
    with pytest.raises(Conflict) as err:
        store.ingest([make_sweep(10)], b"same", UploadMeta(hardware="B300"))
    assert err.value.field == "hardware"
    assert store.table_counts() == before


def test_concurrent_identical_uploads_store_one_run(store: Store) -> None:
    results = []
    errors = []

    def upload() -> None:
        try:
            results.append(store.ingest([make_sweep(200)], b"concurrent", META))
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=upload) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len({r.runs[0].run_id for r in results}) == 1
    assert sum(not r.already_existed for r in results) == 1
    assert store.table_counts()["runs"] == 1
    assert store.table_counts()["candidates"] == 200


def test_failed_bulk_load_rolls_back_everything(store: Store) -> None:
    good = make_sweep(10, key="a")
    bad = make_sweep(10, key="b")
    bad.candidates.loc[3, C.CANDIDATE_INDEX] = 2  # duplicate primary key inside the run
    with pytest.raises(StoreError):
        store.ingest([good, bad], b"two-sweeps", META)
    assert store.table_counts() == {"uploads": 0, "runs": 0, "candidates": 0, "api_tokens": 0}


def test_multi_sweep_upload_and_delete(store: Store) -> None:
    res = store.ingest(
        [make_sweep(5, key="ws=4"), make_sweep(7, key="ws=8", world_size=8)], b"multi", META
    )
    assert [r.sweep_key for r in res.runs] == ["ws=4", "ws=8"]
    store.delete_run(res.runs[0].run_id)
    assert store.table_counts()["uploads"] == 1
    assert store.table_counts()["candidates"] == 7
    store.delete_run(res.runs[1].run_id)
    assert store.table_counts() == {"uploads": 0, "runs": 0, "candidates": 0, "api_tokens": 0}
    with pytest.raises(NotFound):
        store.delete_run(res.runs[1].run_id)
    with pytest.raises(NotFound):
        store.get_run(12345)


def test_list_runs_filters_and_pages(store: Store) -> None:
    for i in range(5):
        hw = "GB300" if i % 2 == 0 else "B300"
        store.ingest([make_sweep(3, hardware=hw, world_size=4 * (i + 1))], f"r{i}".encode(), META)
    page = store.list_runs(hardware="GB300", limit=2)
    assert page.total == 3
    assert list(page.items["world_size"]) == [20, 12]  # newest first
    assert "model_json" not in page.items.columns
    assert store.list_runs(hardware="GB300", limit=2, offset=2).items["world_size"].tolist() == [4]


def test_recent_runs_and_slice_versions_are_one_narrow_read_each(store: Store) -> None:
    for i in range(4):
        sweep = make_sweep(3, hardware="GB300" if i < 3 else "B300", world_size=8)
        sweep.run[C.TRTLLM_VERSION] = f"1.2.0rc{27 + i}"
        meta = UploadMeta(filename=f"sweep{i}.json")
        store.ingest([sweep], f"v{i}".encode(), meta)
    recent = store.runs.recent_runs(limit=3)
    assert recent["filename"].tolist() == ["sweep3.json", "sweep2.json", "sweep1.json"]
    assert recent["uploaded_at"].notna().all() and "model_json" not in recent.columns
    one = store.list_runs(limit=1).items.iloc[0]
    assert recent.iloc[0][C.RUN_ID] == one[C.RUN_ID]
    versions = store.runs.slice_versions(
        model=str(one[C.MODEL]), hardware="GB300", quant=one[C.QUANT], world_size=8
    )
    assert versions.columns.tolist() == [C.RUN_ID, C.TRTLLM_VERSION, C.RUN_DATE]
    assert versions[C.TRTLLM_VERSION].tolist() == ["1.2.0rc27", "1.2.0rc28", "1.2.0rc29"]
    assert versions[C.RUN_ID].is_monotonic_increasing


def test_list_candidates_filters_order_and_errors(store: Store) -> None:
    run_id = store.ingest([make_sweep(40)], b"c", META).runs[0].run_id
    page = store.list_candidates(run_id, filters={C.STATUS: "failed"})
    assert page.total == 4 and set(page.items[C.STATUS]) == {"failed"}
    page = store.list_candidates(run_id, order=C.SCORE_MS, limit=5)
    scores = page.items[C.SCORE_MS].tolist()
    assert scores == sorted(scores)
    with pytest.raises(ValueError, match="order"):
        store.list_candidates(run_id, order="nope")
    with pytest.raises(ValueError, match="filters"):
        store.list_candidates(run_id, filters={"nope": 1})
    with pytest.raises(NotFound):
        store.list_candidates(999)


def test_candidate_frame_joins_run_facts(store: Store) -> None:
    store.ingest([make_sweep(10, hardware="B300")], b"f1", META)
    store.ingest([make_sweep(10, hardware="GB300", model="glm_5")], b"f2", META)
    frame = store.candidate_frame(filters={C.HARDWARE: "B300"}, success_only=True)
    assert set(frame[C.HARDWARE]) == {"B300"}
    assert len(frame) == 9 and frame[C.SCORE_MS].notna().all()
    assert set(C.RUN_COLUMNS) <= set(frame.columns)
    both = store.candidate_frame(filters={C.MODEL: ["glm_5", "deepseek_v4_pro"]})
    assert len(both) == 20
    cov = store.coverage()
    assert set(cov["model"]) == {"glm_5", "deepseek_v4_pro"}


def test_tokens_hashed_verified_revoked(store: Store) -> None:
    info, secret = store.tokens.create_token("ci", ["upload"])
    assert secret.startswith("mdt_") and info.scopes == frozenset({"upload"})
    assert store.tokens.verify_token(secret) is not None
    assert store.tokens.verify_token(secret + "x") is None
    with pytest.raises(Conflict):
        store.tokens.create_token("ci", ["upload"])
    with pytest.raises(ValueError, match="scope"):
        store.tokens.create_token("bad", ["root"])
    store.tokens.revoke_token("ci")
    assert store.tokens.verify_token(secret) is None
    assert [t.name for t in store.tokens.list_tokens()] == ["ci"]
    assert not store.tokens.list_tokens()[0].active


def test_same_measurements_in_other_bytes_is_the_same_run(store: Store) -> None:
    first = store.ingest([make_sweep(12, seed=5)], b"as data.js", META)
    again = store.ingest([make_sweep(12, seed=5)], b"as csv", META)
    assert again.already_existed and again.runs[0].run_id == first.runs[0].run_id
    assert not again.runs[0].created
    assert store.table_counts()["uploads"] == 1


def test_partly_known_upload_stores_only_the_new_runs(store: Store) -> None:
    first = store.ingest([make_sweep(12, seed=5, key="a")], b"one", META)
    both = store.ingest(
        [make_sweep(12, seed=5, key="a"), make_sweep(8, seed=6, key="b")], b"two", META
    )
    assert not both.already_existed
    assert [r.created for r in both.runs] == [False, True]
    assert both.runs[0].run_id == first.runs[0].run_id
    assert store.table_counts()["runs"] == 2 and store.table_counts()["candidates"] == 20


def test_candidate_frame_categorical_has_the_same_values(store: Store) -> None:
    store.ingest([make_sweep(40, seed=7)], b"c1", META)
    store.ingest([make_sweep(20, hardware="B300", model="glm_5", seed=8)], b"c2", META)
    for kwargs in (
        {},
        {"filters": {C.HARDWARE: "B300"}, "success_only": True},
        {"columns": [C.BACKEND, C.SCORE_MS, C.FAILURE_CATEGORY]},
        {"filters": {C.HARDWARE: "nope"}},
    ):
        plain = store.candidate_frame(**kwargs)  # type: ignore[arg-type]
        cats = store.candidate_frame(categorical=True, **kwargs)  # type: ignore[arg-type]
        assert list(cats.columns) == list(plain.columns) and len(cats) == len(plain)
        for col in plain.columns:
            if isinstance(cats[col].dtype, pd.CategoricalDtype):
                assert list(cats[col].cat.categories) == sorted(plain[col].dropna().unique())
                pd.testing.assert_series_equal(cats[col], plain[col].astype("category"))
            else:
                pd.testing.assert_series_equal(cats[col], plain[col])


@pytest.fixture
def locked_duckdb(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A DuckDB file held open by another process: (URL, that process's PID)."""
    path = tmp_path / "held.duckdb"
    open_store(f"duckdb:///{path}").close()
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb,sys,time; c=duckdb.connect({str(path)!r}); "
         "print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield f"duckdb:///{path}", holder.pid
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_duckdb_held_by_another_process_is_one_line_naming_it(
    locked_duckdb: tuple[str, int],
) -> None:
    url, pid = locked_duckdb
    with pytest.raises(DatabaseLocked) as caught:
        open_store(url)
    message = str(caught.value)
    assert caught.value.pid == pid and f"PID {pid}" in message
    assert "PostgreSQL" in message and "\n" not in message
    assert not isinstance(caught.value, UniqueViolation)  # not mistaken for a key clash


@pytest.mark.parametrize("command", [["serve", "--no-demo"], ["ingest", "nothing.json"]])
def test_cli_on_a_held_duckdb_prints_one_line(
    locked_duckdb: tuple[str, int], command: list[str], tmp_path: Path
) -> None:
    url, pid = locked_duckdb
    (tmp_path / "nothing.json").write_text("{}")
    done = subprocess.run(
        [sys.executable, "-m", "moedash.cli", command[0], "--db", url, *command[1:]],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = (done.stdout + done.stderr).strip()
    assert done.returncode == 1, out
    assert "Traceback" not in out
    line = next(x for x in out.splitlines() if f"PID {pid}" in x)
    assert "PostgreSQL" in line
