"""``ingest(known_new=True)``: the upload route has just seen ``ingest_known`` answer
None, so the store skips its own look for the bytes. Bytes stored in between (another
upload of the same file) are still found inside the write: the answer is the sighting
of the stored upload, exactly as without ``known_new``, never a second copy."""

from __future__ import annotations

import threading

import pytest

from db.errors import Conflict
from db.store import IngestResult, Store
from ingest.records import UploadMeta
from tests.factories.sweeps import make_sweep

META = UploadMeta(hardware="GB300", trtllm_version="1.2.0rc27")


def test_bytes_stored_meanwhile_are_a_sighting_not_a_copy(store: Store) -> None:
    sweeps = [make_sweep(6)]
    assert store.runs.ingest_known(b"report", META) is None  # what the route saw
    first = store.ingest(sweeps, b"report", META)  # another upload of the same file wins
    counts = store.table_counts()
    again = store.ingest(sweeps, b"report", META, known_new=True)
    assert again.already_existed and not again.same_measurements_other_bytes
    assert again.upload_id == first.upload_id and again.runs[0].run_id == first.runs[0].run_id
    assert again.runs[0].created  # the stored run, as ingest_known would answer it
    assert again.sighting is not None and again.sighting.n_seen == 1
    assert store.table_counts() == counts
    sightings = store.get_run(first.runs[0].run_id)["sightings"]
    assert [(s["same_bytes"], s["bytes_kept"]) for s in sightings] == [(True, False)]


def test_known_new_keeps_the_conflict_rules(store: Store) -> None:
    sweeps = [make_sweep(6)]
    store.ingest(sweeps, b"report", META)
    other = UploadMeta(hardware="GB300", trtllm_version="1.2.0rc28")
    with pytest.raises(Conflict) as err:
        store.ingest(sweeps, b"report", other, known_new=True)
    assert err.value.field == "trtllm_version"


def test_concurrent_same_bytes_with_known_new_store_one_upload(store: Store) -> None:
    sweeps = [make_sweep(6)]
    results: list[IngestResult] = []
    start = threading.Barrier(6)

    def send() -> None:
        start.wait()
        results.append(store.ingest(sweeps, b"same", META, known_new=True))

    threads = [threading.Thread(target=send) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6
    assert store.table_counts()["uploads"] == 1 and store.table_counts()["runs"] == 1
    assert sum(not r.already_existed for r in results) == 1
    assert not any(r.same_measurements_other_bytes for r in results)
