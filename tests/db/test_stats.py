"""Measurements keyed by cell and per-configuration statistics, on DuckDB and
PostgreSQL: written right after an upload, caught up when missing, equal to the
candidates they come from, aggregated in SQL with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from analysis import columns as C
from db import migrations, schema
from db.session import Database, make_engine
from db.store import Store, open_store
from ingest.records import Sweep, UploadMeta
from tests import factories
from tests.db.test_migrations import snapshot
from tests.factories import sweeps

CELL = ("deepseek_v4_pro", "GB300", "NVFP4")
CELL_FILTERS = {C.MODEL: CELL[0], C.HARDWARE: CELL[1], C.QUANT: CELL[2]}


def _sweep(scores: list[float | None], version: str = "1.3.0rc26", **run: object) -> Sweep:
    """One configuration at 256 tokens per score (None: a failed candidate), plus one
    other configuration at 512 tokens scored 3.0."""
    rows: list[dict[str, object]] = [
        {C.SCORE_MS: s, C.STATUS: "success" if s is not None else "failed"} for s in scores
    ]
    rows.append({C.NUM_TOKENS: 512, C.BACKEND: "CUTLASS", C.SCORE_MS: 3.0})
    frame = factories.make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)])
    meta = sweeps.make_run(
        model=CELL[0], hardware=CELL[1], quant=CELL[2], world_size=8, trtllm_version=version
    )
    meta.update(run)
    return Sweep(key="", run=meta, candidates=frame[list(C.CANDIDATE_COLUMNS)])


def _ingest(store: Store, sweep: Sweep, tag: str) -> int:
    result = store.ingest([sweep], tag.encode(), UploadMeta(hardware=CELL[1]))
    return result.runs[0].run_id


def _measured_runs(store: Store) -> list[int]:
    m = schema.measurements
    with store.engine.connect() as conn:
        return [int(r[0]) for r in conn.execute(sa.select(m.c.run_id).distinct()).all()]


def test_an_upload_is_recorded_with_its_cell_and_reads_as_the_candidates(store: Store) -> None:
    first = _ingest(store, _sweep([1.0]), "a")
    _ingest(store, sweeps.make_sweep(30, seed=4, model="kimi_k2", hardware="B300"), "b")
    assert store.stats.missing_runs(*CELL) == []
    for categorical in (False, True):
        got = store.stats.cell_frame(*CELL, categorical=categorical)
        want = store.candidate_frame(
            filters=CELL_FILTERS, columns=schema.MEASUREMENT_COLUMNS, categorical=categorical
        )
        pd.testing.assert_frame_equal(got, want)
    assert set(store.stats.cell_frame(*CELL)[C.RUN_ID]) == {first}
    other = store.stats.cell_frame("kimi_k2", "B300", "NVFP4")
    assert len(other) == 30 and first not in set(other[C.RUN_ID])


def test_a_cell_missing_its_measurements_is_caught_up(store: Store) -> None:
    run = _ingest(store, _sweep([1.0, 2.0]), "a")
    covered = store.stats.cell_coverage(*CELL)
    with store.engine.begin() as conn:  # as if the process died right after the commit
        for table in (schema.measurements, schema.run_workloads, schema.run_capabilities):
            conn.execute(table.delete())
    assert store.stats.missing_runs(*CELL) == [run]
    assert store.stats.cell_coverage(*CELL).empty
    assert store.stats.ensure_cell(*CELL) == 3
    # the catch-up summarised the run in the same transaction
    pd.testing.assert_frame_equal(store.stats.cell_coverage(*CELL), covered)
    assert store.stats.ensure_cell(*CELL) == 0 and store.stats.record_runs([run]) == 0
    assert _measured_runs(store) == [run]
    store.delete_run(run)
    assert _measured_runs(store) == []
    assert store.stats.cell_coverage(*CELL).empty and store.capabilities.measured().empty


def test_recording_runs_of_several_cells_writes_only_those_not_recorded(store: Store) -> None:
    # each run is looked up in its own cell's rows: a recorded run of one cell and a
    # missing run of another, asked together, write the missing one's rows only
    kept = _ingest(store, _sweep([1.0, 2.0]), "a")
    lost = _ingest(store, _sweep([3.0], model="kimi_k2", hardware="B300"), "b")
    with store.engine.begin() as conn:
        for table in (schema.measurements, schema.run_workloads, schema.run_capabilities):
            conn.execute(table.delete().where(table.c.run_id == lost))
    assert _measured_runs(store) == [kept]
    assert store.stats.record_runs([kept, lost]) == 2  # the lost run's two rows
    assert sorted(_measured_runs(store)) == sorted([kept, lost])
    assert store.stats.record_runs([kept, lost]) == 0


def test_config_stats_aggregate_runs_in_the_database(store: Store) -> None:
    # three runs of one version measure the 256-token configuration 1, 2 and 4 ms (a
    # failure alongside in the last); a newer version measures it once
    ids = [
        _ingest(store, _sweep([1.0]), "r1"),
        _ingest(store, _sweep([2.0]), "r2"),
        _ingest(store, _sweep([4.0, None]), "r3"),
        _ingest(store, _sweep([5.0], version="1.3.0rc27"), "r4"),
    ]
    stats = store.stats.config_stats(*CELL)
    assert list(stats[C.NUM_TOKENS]) == [256, 256, 512, 512]  # ordered by the keys
    assert list(stats[C.TRTLLM_VERSION]) == ["1.3.0rc26", "1.3.0rc27"] * 2
    repeats = stats[(stats[C.NUM_TOKENS] == 256) & (stats[C.TRTLLM_VERSION] == "1.3.0rc26")]
    assert len(repeats) == 1
    row = repeats.iloc[0]
    stdev = float(np.std([1.0, 2.0, 4.0], ddof=1))
    assert (row["n_runs"], row["n_rows"], row["newest_run_id"]) == (3, 3, ids[2])
    assert row["score_median_ms"] == pytest.approx(2.0)
    assert row["score_mean_ms"] == pytest.approx(7.0 / 3)
    assert row["score_stdev_ms"] == pytest.approx(stdev)
    assert row["run_to_run_spread"] == pytest.approx(stdev / 2.0)
    assert (row["score_min_ms"], row["score_max_ms"]) == (1.0, 4.0)
    assert row[C.BACKEND] == "TRTLLM" and bool(row[C.CUDA_GRAPH])
    once = stats[(stats[C.NUM_TOKENS] == 256) & (stats[C.TRTLLM_VERSION] == "1.3.0rc27")]
    assert once.iloc[0]["n_runs"] == 1 and np.isnan(once.iloc[0]["run_to_run_spread"])
    assert np.isnan(once.iloc[0]["score_stdev_ms"])
    # an even count: the mean of the two middle values
    _ingest(store, _sweep([6.0], version="1.3.0rc27"), "r5")
    again = store.stats.config_stats(*CELL)
    newer = again[(again[C.NUM_TOKENS] == 256) & (again[C.TRTLLM_VERSION] == "1.3.0rc27")]
    assert newer.iloc[0]["score_median_ms"] == pytest.approx(5.5)
    assert store.stats.config_stats("nope", "GB300", "NVFP4").empty


def test_revision_0007_backfills_a_duckdb_file(tmp_path: Path) -> None:
    """An r0006 DuckDB file (fresh: the db_url fixture copies a file already at head)
    upgrades to the fresh head schema with its runs' measurements copied in."""
    url = f"duckdb:///{tmp_path / 'old.duckdb'}"
    db = Database(make_engine(url))
    try:
        assert migrations.upgrade(db, "0006") == 6
    finally:
        db.close()
    old = open_store(url, upgrade=False)
    try:  # what r0006 code stored (the measurements copy fails: no such table yet)
        run = _ingest(old, _sweep([1.0, 2.0]), "old")
    finally:
        old.close()
    store = open_store(url)
    try:
        assert store.schema_version() == 9
        assert store.stats.missing_runs(*CELL) == []
        pd.testing.assert_frame_equal(
            store.stats.cell_frame(*CELL),
            store.candidate_frame(filters=CELL_FILTERS, columns=schema.MEASUREMENT_COLUMNS),
        )
        assert set(store.stats.cell_frame(*CELL)[C.RUN_ID]) == {run}
    finally:
        store.close()
    head = f"duckdb:///{tmp_path / 'head.duckdb'}"
    open_store(head).close()
    assert snapshot(url) == snapshot(head)


def test_cell_coverage_is_the_coverage_of_that_cell(store: Store) -> None:
    _ingest(store, _sweep([1.0, None]), "a")
    _ingest(store, sweeps.make_sweep(30, seed=4, model="kimi_k2", hardware="B300"), "b")
    whole = store.coverage()
    parts = [
        store.stats.cell_coverage(*CELL),
        store.stats.cell_coverage("kimi_k2", "B300", "NVFP4"),
    ]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)
