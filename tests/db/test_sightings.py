"""Upload sightings: the same bytes again (a CI retry) and the same measurements in other
bytes are recorded, never refused or silently dropped; real contradictions conflict.
DuckDB and (marker postgres) PostgreSQL, and an r0005 database upgraded to head."""

from __future__ import annotations

import dataclasses
import json
import threading

import pytest
import sqlalchemy as sa
import zstandard

from db import Conflict, migrations, schema
from db.session import Database, make_engine
from db.store import Store, open_store
from ingest.records import UploadMeta
from tests.factories.sweeps import make_sweep

META = UploadMeta(hardware="GB300", trtllm_version="v1.3.0rc26", filename="a.json")


def retry(**changes: str | None) -> UploadMeta:
    return dataclasses.replace(META, **changes)  # type: ignore[arg-type]


def test_same_bytes_with_a_new_ci_url_is_a_sighting(store: Store) -> None:
    first = store.ingest([make_sweep(10)], b"same", META, uploaded_by="ci")
    assert first.sighting is None
    again = store.ingest(
        [make_sweep(10)], b"same", retry(ci_url="https://ci/job/2", notes="retry"), uploaded_by="ci"
    )
    assert again.already_existed and again.runs == first.runs
    assert again.sighting is not None and again.sighting.created
    run = store.get_run(first.runs[0].run_id)
    assert run["ci_url"] is None  # the run keeps what the first upload said
    (seen,) = run["sightings"]
    assert (seen["ci_url"], seen["notes"], seen["filename"], seen["uploaded_by"]) == (
        "https://ci/job/2",
        "retry",
        "a.json",
        "ci",
    )
    assert seen["same_bytes"] is True and seen["n_seen"] == 1 and not seen["bytes_kept"]
    assert store.table_counts()["uploads"] == 1 and store.table_counts()["candidates"] == 10


def test_identical_sightings_are_counted_not_repeated(store: Store) -> None:
    store.ingest([make_sweep(4)], b"b", META)
    for _ in range(3):
        store.ingest([make_sweep(4)], b"b", retry(ci_url="https://ci/job/9"))
    store.ingest([make_sweep(4)], b"b", retry(ci_url="https://ci/job/10"))
    sightings = store.get_run(1)["sightings"]
    assert [(s["ci_url"], s["n_seen"]) for s in sightings] == [
        ("https://ci/job/9", 3),
        ("https://ci/job/10", 1),
    ]
    assert sightings[0]["last_seen_at"] >= sightings[0]["first_seen_at"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("hardware", "B300"),
        ("trtllm_version", "v1.3.0rc27"),
        ("trtllm_commit", "abcdef12"),
        ("run_date", "2026-01-02"),
        ("dispatch", "balanced"),
    ],
)
def test_same_bytes_contradicting_a_fact_conflicts_and_writes_nothing(
    store: Store, field: str, value: str
) -> None:
    store.ingest([make_sweep(5)], b"fact", META)
    before = store.table_counts()
    with pytest.raises(Conflict) as err:
        store.ingest([make_sweep(5)], b"fact", retry(**{field: value}))
    assert err.value.field == field
    assert store.table_counts() == before and store.get_run(1)["sightings"] == []


def test_same_measurements_in_other_bytes_keeps_the_bytes(store: Store) -> None:
    first = store.ingest([make_sweep(12, seed=5)], b"as data.js", META)
    again = store.ingest(
        [make_sweep(12, seed=5)], b"as csv", retry(filename="x.csv"), uploaded_by="ci"
    )
    assert again.already_existed and again.same_measurements_other_bytes
    assert again.upload_id == first.upload_id and again.stored_sha256 == first.sha256
    assert again.sha256 != first.sha256 and again.differing_fields == ()
    assert [r.run_id for r in again.runs] == [r.run_id for r in first.runs]
    assert store.table_counts()["uploads"] == 1 and store.table_counts()["runs"] == 1
    (seen,) = store.get_run(first.runs[0].run_id)["sightings"]
    assert seen["sha256"] == again.sha256 and seen["same_bytes"] is False
    assert seen["bytes_kept"] and seen["size_bytes"] == len(b"as csv")
    assert seen["filename"] == "x.csv"
    with store.engine.connect() as conn:
        packed = conn.execute(sa.select(schema.upload_sightings.c.content)).scalar_one()
    assert zstandard.ZstdDecompressor().decompress(packed) == b"as csv"  # lossless
    # the same other bytes once more: counted, the bytes not stored twice
    store.ingest([make_sweep(12, seed=5)], b"as csv", retry(filename="x.csv"), uploaded_by="ci")
    (seen,) = store.get_run(first.runs[0].run_id)["sightings"]
    assert seen["n_seen"] == 2


def test_other_bytes_with_an_extra_top_level_key_are_reported(store: Store) -> None:
    store.ingest([make_sweep(6)], b"plain", META)
    extra = make_sweep(6, extra_json=json.dumps({"new_key": 1}))
    again = store.ingest([extra], b"plain + key", META)
    assert again.same_measurements_other_bytes and again.differing_fields == ("extra_json",)
    assert store.table_counts()["runs"] == 1


def test_reserialised_blocks_are_the_same_measurements(store: Store) -> None:
    store.ingest([make_sweep(6, rankings_json='{"a": 1, "b": [1, 2]}')], b"one", META)
    again = store.ingest([make_sweep(6, rankings_json='{"b":[1,2],"a":1}')], b"two", META)
    assert again.same_measurements_other_bytes and again.differing_fields == ()


@pytest.mark.parametrize(
    ("column", "field"),
    [("rankings_json", "rankings"), ("search_json", "search"), ("base_config_json", "base_config")],
)
def test_same_candidates_with_another_ranking_conflicts(
    store: Store, column: str, field: str
) -> None:
    store.ingest([make_sweep(6, **{column: '{"best": [0, 1]}'})], b"one", META)
    before = store.table_counts()
    with pytest.raises(Conflict) as err:
        store.ingest([make_sweep(6, **{column: '{"best": [1, 0]}'})], b"two", META)
    assert err.value.field == field and "run 1" in err.value.problem
    assert store.table_counts() == before and store.get_run(1)["sightings"] == []


def test_same_measurements_with_another_run_date_conflicts(store: Store) -> None:
    store.ingest([make_sweep(6, run_date="2026-09-13")], b"one", retry(run_date="2026-09-13"))
    with pytest.raises(Conflict) as err:
        store.ingest([make_sweep(6, run_date="2026-09-14")], b"two", retry(run_date="2026-09-14"))
    assert err.value.field == "run_date"


def test_changed_candidates_are_a_new_run(store: Store) -> None:
    store.ingest([make_sweep(6, seed=1)], b"one", META)
    again = store.ingest([make_sweep(6, seed=2)], b"two", META)
    assert not again.already_existed and not again.same_measurements_other_bytes
    assert store.table_counts()["runs"] == 2


def test_deleting_the_last_run_deletes_the_sightings(store: Store) -> None:
    res = store.ingest([make_sweep(4)], b"d", META)
    store.ingest([make_sweep(4)], b"d", retry(ci_url="https://ci/job/3"))
    store.ingest([make_sweep(4)], b"d2", META)  # other bytes, same measurements
    store.delete_run(res.runs[0].run_id)
    with store.engine.connect() as conn:
        left = conn.execute(sa.select(sa.func.count()).select_from(schema.upload_sightings))
        assert left.scalar() == 0


def test_concurrent_retries_are_one_counted_sighting(store: Store) -> None:
    store.ingest([make_sweep(50)], b"concurrent", META)
    errors: list[BaseException] = []

    def send() -> None:
        try:
            store.ingest([make_sweep(50)], b"concurrent", retry(ci_url="https://ci/job/7"))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=send) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    (seen,) = store.get_run(1)["sightings"]
    assert seen["n_seen"] == 6


def test_r0005_database_upgrades_and_records_sightings(db_url: str) -> None:
    db = Database(make_engine(db_url))
    try:
        assert migrations.upgrade(db, "0005") == 5
    finally:
        db.close()
    old = open_store(db_url, upgrade=False)
    try:
        stored = old.ingest([make_sweep(8)], b"before 0006", META)  # what r0005 code stored
    finally:
        old.close()
    store = open_store(db_url)
    try:
        assert store.schema_version() == migrations.head_revision() == 9
        again = store.ingest([make_sweep(8)], b"before 0006", retry(ci_url="https://ci/job/4"))
        assert again.already_existed and again.runs == stored.runs
        (seen,) = store.get_run(stored.runs[0].run_id)["sightings"]
        assert seen["ci_url"] == "https://ci/job/4"
    finally:
        store.close()


def test_known_bytes_are_answered_without_the_sweeps(store: Store) -> None:
    assert store.runs.ingest_known(b"unknown", META) is None
    assert store.table_counts()["uploads"] == 0
    first = store.ingest([make_sweep(5)], b"known", META)
    again = store.runs.ingest_known(b"known", retry(ci_url="https://ci/job/5"), uploaded_by="ci")
    assert again is not None and again.already_existed and again.runs == first.runs
    assert again.sighting is not None and again.sighting.n_seen == 1
    with pytest.raises(Conflict):
        store.runs.ingest_known(b"known", retry(hardware="B300"))
