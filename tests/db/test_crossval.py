"""CrossvalRepository (store.crossval): serving imports, workloads and E2E outcomes,
on DuckDB and PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path

import pandas as pd
import pytest

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.serving_map import map_workloads
from db.crossval_records import OutcomeConflict, OutcomeRecord
from db.errors import NotFound, StoreError
from db.store import Store
from ingest.serving_configs import import_directory, points_frame, recipe_configs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "serving"


@pytest.fixture(scope="module")
def fixture_frames() -> tuple[pd.DataFrame, pd.DataFrame, str]:
    r = import_directory(FIXTURE)
    points = points_frame(r)
    return points, map_workloads(points, recipe_configs(r)), r.content_hash


@pytest.fixture
def imported(store: Store, fixture_frames: tuple[pd.DataFrame, pd.DataFrame, str]) -> pd.DataFrame:
    points, workloads, digest = fixture_frames
    store.crossval.import_serving(points, workloads, digest, "fixture")
    return workloads


def _decode_id(workloads: pd.DataFrame, entry: str, conc: int) -> str:
    sel = workloads[
        (workloads[cc.ENTRY] == entry)
        & (workloads[cc.CONC] == conc)
        & (workloads[cc.PHASE] == "decode")
    ]
    assert len(sel) == 1
    return str(sel[cc.WORKLOAD_ID].iloc[0])


def test_schema_version_includes_crossval_tables(store: Store) -> None:
    assert store.schema_version() >= 3
    assert store.crossval.crossval_counts() == {
        "serving_imports": 0,
        "serving_workloads": 0,
        "crossval_outcomes": 0,
        "crossval_ledgers": 0,
    }


def test_import_twice_stores_once_and_round_trips(
    store: Store, fixture_frames: tuple[pd.DataFrame, pd.DataFrame, str]
) -> None:
    points, workloads, digest = fixture_frames
    first = store.crossval.import_serving(points, workloads, digest, "fixture")
    assert not first.already_existed
    # 6 entries (5 current + 1 deprecated), 16 points, 32 workloads, 20 mappable
    assert (first.n_entries, first.n_points, first.n_workloads) == (6, 16, 32)
    assert (first.n_mappable, first.n_unmappable) == (20, 12)
    assert (first.n_new_workloads, first.n_existing_workloads) == (32, 0)
    before = store.crossval.crossval_counts()

    second = store.crossval.import_serving(points, workloads, digest, "fixture again")
    assert second.already_existed and second.import_id == first.import_id
    assert (second.n_new_workloads, second.n_existing_workloads) == (0, 32)
    assert (
        store.crossval.crossval_counts()
        == before
        == {
            "serving_imports": 1,
            "serving_workloads": 32,
            "crossval_outcomes": 0,
            "crossval_ledgers": 0,  # the repository stores workloads only
        }
    )
    # Same columns, dtypes, values and order as map_workloads.
    pd.testing.assert_frame_equal(store.crossval.serving_workloads(), workloads)


def test_other_hash_adds_only_new_and_rewrites_changed_workloads(
    store: Store, imported: pd.DataFrame, fixture_frames: tuple[pd.DataFrame, pd.DataFrame, str]
) -> None:
    points = fixture_frames[0]
    same = store.crossval.import_serving(
        points, imported, "other-hash", "same workloads, other hash"
    )
    assert not same.already_existed
    assert (same.n_new_workloads, same.n_updated_workloads, same.n_existing_workloads) == (0, 0, 32)

    changed = imported.copy()
    wid = _decode_id(imported, "dsr1-fp8-h200-dynamo-trt", 8)
    changed.loc[changed[cc.WORKLOAD_ID] == wid, c.BACKEND] = "TRTLLM"
    extra = changed.iloc[[0]].copy()
    extra[cc.WORKLOAD_ID] = "feedfacefeedface:prefill"
    changed = pd.concat([changed, extra], ignore_index=True)
    res = store.crossval.import_serving(points, changed, "third-hash", "edited recipe")
    assert (res.n_new_workloads, res.n_updated_workloads, res.n_workloads) == (1, 1, 33)
    assert store.crossval.crossval_counts()["serving_workloads"] == 33
    got = store.crossval.serving_workloads({cc.WORKLOAD_ID: wid})
    assert got[c.BACKEND].tolist() == ["TRTLLM"]
    # The rewritten row keeps its place; the new one comes last.
    ids = store.crossval.serving_workloads()[cc.WORKLOAD_ID].tolist()
    assert ids[:32] == imported[cc.WORKLOAD_ID].tolist() and ids[32] == "feedfacefeedface:prefill"
    assert store.crossval.serving_imports()["content_hash"].tolist() == [
        "third-hash",
        "other-hash",
        fixture_frames[2],
    ]


def test_filters_and_paging(store: Store, imported: pd.DataFrame) -> None:
    dec = store.crossval.serving_workloads({cc.PHASE: "decode", cc.MAPPABLE: True})
    assert (
        len(dec) == 10
        and store.crossval.serving_workload_count({cc.PHASE: "decode", cc.MAPPABLE: True}) == 10
    )
    assert set(dec[cc.PHASE]) == {"decode"} and dec[cc.MAPPABLE].all()
    # H200: dynamo-trt (2 points, mappable) and single-node trt (2 points, not mappable)
    h200 = store.crossval.serving_workloads({c.MODEL: ["deepseek_r1"], c.HARDWARE: "H200"})
    assert len(h200) == 8 and set(h200[c.HARDWARE]) == {"H200"}
    assert store.crossval.serving_workload_count({c.HARDWARE: "H200", cc.MAPPABLE: True}) == 4
    page = store.crossval.serving_workloads(limit=5, offset=10)
    assert page[cc.WORKLOAD_ID].tolist() == imported[cc.WORKLOAD_ID].tolist()[10:15]
    assert store.crossval.serving_workload_count({c.MODEL: None}) == 32  # None = no filter
    with pytest.raises(ValueError, match="row_json"):
        store.crossval.serving_workloads({"row_json": "x"})


def test_failed_import_writes_nothing(
    store: Store, imported: pd.DataFrame, fixture_frames: tuple[pd.DataFrame, pd.DataFrame, str]
) -> None:
    before = store.crossval.crossval_counts()
    bad = imported.copy()
    bad[cc.WORKLOAD_ID] = bad[cc.WORKLOAD_ID] + "-v2"  # all new rows ...
    bad.loc[5, cc.POINT_ID] = None  # ... one violating NOT NULL after the import row is written
    with pytest.raises(StoreError):
        store.crossval.import_serving(fixture_frames[0], bad, "broken-hash", "broken")
    assert store.crossval.crossval_counts() == before
    assert "broken-hash" not in store.crossval.serving_imports()["content_hash"].tolist()

    dup = pd.concat([imported, imported.iloc[[3]]], ignore_index=True)
    with pytest.raises(ValueError, match="duplicate"):
        store.crossval.import_serving(fixture_frames[0], dup, "dup-hash", "dup")
    assert store.crossval.crossval_counts() == before


def test_concurrent_identical_imports_store_one(
    store: Store, fixture_frames: tuple[pd.DataFrame, pd.DataFrame, str]
) -> None:
    points, workloads, digest = fixture_frames
    results, errors = [], []

    def run() -> None:
        try:
            results.append(store.crossval.import_serving(points, workloads, digest, "race"))
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(not r.already_existed for r in results) == 1
    assert store.crossval.crossval_counts()["serving_workloads"] == 32


def test_outcomes_created_repeated_conflict_replace(store: Store, imported: pd.DataFrame) -> None:
    a = _decode_id(imported, "dsr1-fp8-h200-dynamo-trt", 8)
    b = _decode_id(imported, "dsr1-fp8-h200-dynamo-trt", 64)
    rec = {"workload_id": a, "tps_per_user_deployed": 100, "tps_per_user_candidate": 110.5}
    first = store.crossval.add_outcomes([rec, OutcomeRecord(b, 50.0, 40.0, 45.0, source="run 7")])
    assert [w.state for w in first.items] == ["created", "created"]
    again = store.crossval.add_outcomes([rec])
    assert again.count("already existed") == 1 and again.count("created") == 0

    with pytest.raises(OutcomeConflict) as err:
        store.crossval.add_outcomes([{**rec, "tps_per_user_candidate": 111.0}])
    assert err.value.field == cc.TPS_CANDIDATE and err.value.workload_id == a
    with pytest.raises(OutcomeConflict) as err:
        store.crossval.add_outcomes([OutcomeRecord(b, 50.0, 40.0, 45.0, source="run 8")])
    assert err.value.field == "source"
    # No source given: identical tps values are a repeat, whatever the stored source.
    assert (
        store.crossval.add_outcomes([OutcomeRecord(b, 50.0, 40.0, 45.0)]).items[0].state
        == "already existed"
    )

    replaced = store.crossval.add_outcomes([{**rec, "tps_per_user_candidate": 111.0}], replace=True)
    assert replaced.items[0].state == "replaced"
    out = store.crossval.outcomes()
    assert list(out.columns)[:4] == [
        cc.WORKLOAD_ID,
        cc.TPS_DEPLOYED,
        cc.TPS_CANDIDATE,
        cc.TPS_CANDIDATE_PR,
    ]
    assert out[cc.WORKLOAD_ID].tolist() == sorted([a, b])
    row = out.set_index(cc.WORKLOAD_ID).loc[a]
    assert row[cc.TPS_CANDIDATE] == 111.0 and pd.isna(row[cc.TPS_CANDIDATE_PR])
    assert row["updated_at"] is not None
    assert out.set_index(cc.WORKLOAD_ID).loc[b, "source"] == "run 7"


def test_outcome_batch_is_all_or_nothing(store: Store, imported: pd.DataFrame) -> None:
    a = _decode_id(imported, "dsr1-fp8-h200-dynamo-trt", 8)
    b = _decode_id(imported, "dsr1-fp8-h200-dynamo-trt", 64)
    store.crossval.add_outcomes(
        [{"workload_id": b, "tps_per_user_deployed": 10, "tps_per_user_candidate": 9}]
    )
    before = store.crossval.crossval_counts()
    new_a = {"workload_id": a, "tps_per_user_deployed": 1, "tps_per_user_candidate": 2}
    with pytest.raises(OutcomeConflict):
        store.crossval.add_outcomes(
            [new_a, {"workload_id": b, "tps_per_user_deployed": 10, "tps_per_user_candidate": 8}]
        )
    with pytest.raises(NotFound):
        store.crossval.add_outcomes([new_a, {**new_a, "workload_id": "nope:decode"}])
    with pytest.raises(ValueError, match=r"records\[1\]\.workload_id: duplicate"):
        store.crossval.add_outcomes([new_a, new_a])
    with pytest.raises(ValueError, match=r"records\[1\]\.tps_per_user_deployed"):
        store.crossval.add_outcomes(
            [new_a, {**new_a, "workload_id": b, "tps_per_user_deployed": 0}]
        )
    with pytest.raises(ValueError, match=r"records\[0\]\.tps_per_user_candidate"):
        store.crossval.add_outcomes([{**new_a, "tps_per_user_candidate": True}])
    assert store.crossval.crossval_counts() == before
    assert store.crossval.outcomes()[cc.WORKLOAD_ID].tolist() == [b]


def test_stored_ledger_keeps_only_the_newest_key(store: Store) -> None:
    assert store.crossval.stored_ledger("k1") is None
    store.crossval.store_ledger("k1", [{"a": 1}], 12.5)
    assert store.crossval.stored_ledger("k1") == [{"a": 1}]
    store.crossval.store_ledger("k2", [{"a": 2}, {"a": None}], 3.0)
    assert store.crossval.stored_ledger("k1") is None
    assert store.crossval.stored_ledger("k2") == [{"a": 2}, {"a": None}]
    keys = store.crossval.stored_ledger_keys()
    assert keys["ledger_key"].tolist() == ["k2"] and keys["n_rows"].tolist() == [2]


def test_stored_ledger_supersedes_its_own_tolerance_and_keeps_a_few(store: Store) -> None:
    cv = store.crossval
    cv.store_ledger("runs=1|tol=2.0", [{"a": 1}], 1.0, supersedes="|tol=2.0")
    cv.store_ledger("runs=1|tol=8.0", [{"a": 8}], 1.0, supersedes="|tol=8.0")
    # a new version of tolerance 2.0 replaces the old one only; 8.0 stays
    cv.store_ledger("runs=2|tol=2.0", [{"a": 2}], 1.0, supersedes="|tol=2.0")
    keys = cv.stored_ledger_keys()["ledger_key"].tolist()
    assert keys == ["runs=2|tol=2.0", "runs=1|tol=8.0"]  # newest first
    assert cv.stored_ledger("runs=1|tol=2.0") is None
    assert cv.stored_ledger("runs=1|tol=8.0") == [{"a": 8}]
    # the suffix is matched literally (no LIKE wildcards), and at most `keep` stay
    cv.store_ledger("runs=1|tol=4_0", [{"a": 4}], 1.0, supersedes="|tol=4_0")
    cv.store_ledger("runs=1|tol=16.0", [{"a": 16}], 1.0, supersedes="|tol=16.0", keep=3)
    keys = cv.stored_ledger_keys()["ledger_key"].tolist()
    assert keys == ["runs=1|tol=16.0", "runs=1|tol=4_0", "runs=2|tol=2.0"]
    # the same key again: rewritten in place
    cv.store_ledger("runs=1|tol=16.0", [{"a": 17}], 1.0, supersedes="|tol=16.0")
    assert cv.stored_ledger("runs=1|tol=16.0") == [{"a": 17}]
    assert len(cv.stored_ledger_keys()) == 3


def test_serving_choices_are_distinct_and_sorted(store: Store, imported: pd.DataFrame) -> None:
    models, hardware = store.crossval.serving_choices()
    w = store.crossval.serving_workloads()
    assert models == sorted({str(m) for m in w[c.MODEL].dropna()})
    assert hardware == sorted({str(h) for h in w[c.HARDWARE].dropna()})
    assert hardware == ["B300", "GB200", "GB300", "H200"]
