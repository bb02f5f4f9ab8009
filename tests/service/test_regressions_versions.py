"""The upload-time regression check reads a run's slice as (version, run date, run ids)
rows (``Store.runs.version_slice``), not as a run table: the same earlier versions, in
the same order, as ``earlier_versions`` over the slice's run table, for every kind of
version text (PEP 440 with and without ``v``, unparseable, missing) and run date."""

from __future__ import annotations

import itertools

from analysis import columns as C
from db.store import Store
from ingest.records import UploadMeta
from service.regressions import earlier_versions, slice_earlier_versions
from tests.factories.sweeps import make_sweep

MODEL, HW = "kimi_k2", "GB300"

# (version, run_date) of each run stored on the slice, oldest upload first
RUNS = [
    ("1.2.0rc27", "2026-01-05"),
    ("v1.2.0rc27", "2026-01-02"),  # the same version by another name, dated earlier
    ("1.2.0rc28", None),
    ("1.2.0rc28", "2026-02-01"),
    ("1.2.0rc9", "2026-03-01"),
    ("main", "2026-01-10"),  # unparseable: after every version, by first run date
    ("feature-x", None),
    (None, "2026-01-01"),  # no version: not a version
    ("1.3.0.dev20260101", "2026-01-20"),
    ("1.2.0rc27", None),
]


def _store_runs(store: Store, quant: str | None, world_size: int | None) -> list[int]:
    ids = []
    for i, (version, date) in enumerate(RUNS):
        sweep = make_sweep(4, seed=i, model=MODEL, hardware=HW, quant=quant, world_size=world_size)
        sweep.run[C.TRTLLM_VERSION] = version
        sweep.run[C.RUN_DATE] = date
        raw = f"{quant}-{world_size}-{i}".encode()
        ids.append(store.ingest([sweep], raw, UploadMeta(filename=f"{i}.json")).runs[0].run_id)
    return ids


def test_version_slice_gives_the_run_table_answer(store: Store) -> None:
    shapes = list(itertools.product(("NVFP4", None), (8, None)))
    stored = {shape: _store_runs(store, *shape) for shape in shapes}
    # the other slices share model and hardware: only quant and world size tell them
    # apart (NULL matches NULL only)
    for (quant, world_size), ids in stored.items():
        table = store.runs.slice_versions(
            model=MODEL, hardware=HW, quant=quant, world_size=world_size
        )
        assert sorted(table[C.RUN_ID]) == ids
        for run_id, (version, _date) in zip(ids, RUNS, strict=True):
            found = store.runs.version_slice(run_id)
            assert found is not None
            assert (found.model, found.hardware) == (MODEL, HW)
            assert (found.quant, found.world_size) == (quant, world_size)
            assert found.trtllm_version == version and found.n_candidates == 4
            if version is None:
                assert slice_earlier_versions(found) == []
                continue
            assert slice_earlier_versions(found) == earlier_versions(table, version)


def test_version_slice_orders_as_documented(store: Store) -> None:
    ids = _store_runs(store, "NVFP4", 8)
    by_version = {v: i for i, (v, _d) in zip(ids, RUNS, strict=True)}
    found = store.runs.version_slice(by_version["main"])
    assert found is not None
    # latest first; "v1.2.0rc27" and "1.2.0rc27" are two texts of one version, in
    # order of their first run date
    assert [v for v, _ids in slice_earlier_versions(found)] == [
        "1.3.0.dev20260101",
        "1.2.0rc28",
        "1.2.0rc27",
        "v1.2.0rc27",
        "1.2.0rc9",
    ]
    rc28 = store.runs.version_slice(by_version["1.2.0rc28"])
    assert rc28 is not None
    earlier = slice_earlier_versions(rc28)
    assert earlier[0] == ("1.2.0rc27", [ids[0], ids[9]])  # not its own other text
    assert store.runs.version_slice(10**9) is None
