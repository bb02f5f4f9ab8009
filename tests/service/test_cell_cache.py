"""Caches are per cell: an upload to one cell leaves every other cell's frame and
answers where they were, and refreshes its own."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import columns as C
from db.store import Store
from ingest.records import UploadMeta
from service.best import cell_best_table
from service.config_stats import cell_config_stats
from service.frames import Cell, DashData
from service.scope import Scope
from tests.factories import sweeps
from tests.service.stores import upload_generated

CELL_A = Cell("deepseek_v4_pro", "GB300", "NVFP4")
CELL_B = Cell("kimi_k2", "B300", "NVFP4")


@pytest.fixture
def data(store: Store) -> DashData:
    upload_generated(store, CELL_A, 1)
    upload_generated(store, CELL_B, 2)
    return DashData(store, version_ttl=0.0)


def test_upload_to_one_cell_keeps_the_other_cells_frame(data: DashData) -> None:
    frame_a, frame_b = data.cell_frame(CELL_A), data.cell_frame(CELL_B)
    best_b = cell_best_table(data, CELL_B, "dashboard")
    version_b = data.cell_version(CELL_B)

    new_run = upload_generated(data.store, CELL_A, 3)

    assert data.cell_version(CELL_B) == version_b
    assert data.cell_frame(CELL_B) is frame_b
    assert cell_best_table(data, CELL_B, "dashboard") is best_b
    # the uploaded cell is read again and holds the new run
    again_a = data.cell_frame(CELL_A)
    assert again_a is not frame_a
    assert new_run in set(again_a[C.RUN_ID]) and new_run not in set(frame_a[C.RUN_ID])
    assert data.cell_version(CELL_A) == (2, new_run)
    # the coverage table, counted per cell, is the store's own
    pd.testing.assert_frame_equal(data.coverage(), data.store.coverage())


def test_scope_answers_follow_the_cells_they_read(data: DashData) -> None:
    calls: list[str] = []

    def compute(name: str) -> object:
        calls.append(name)
        return object()

    only_b = {C.MODEL: CELL_B.model}
    first_b = data.cached("answer-b", lambda: compute("b"), where=only_b)
    first_all = data.cached("answer-all", lambda: compute("all"))
    upload_generated(data.store, CELL_A, 4)
    assert data.cached("answer-b", lambda: compute("b"), where=only_b) is first_b
    assert data.cached("answer-all", lambda: compute("all")) is not first_all
    assert calls == ["b", "all", "all"]


def test_delete_changes_the_cells_version(data: DashData) -> None:
    extra = upload_generated(data.store, CELL_B, 5)
    before = data.cell_version(CELL_B)
    data.store.delete_run(extra)
    assert data.cell_version(CELL_B) != before
    assert extra not in set(data.cell_frame(CELL_B)[C.RUN_ID])
    assert data.cell_version(Cell("nope", "GB300", "NVFP4")) == (0, 0)
    assert data.cells() == [CELL_A, CELL_B]
    assert data.cells_matching({C.MODEL: CELL_B.model}) == [CELL_B]
    assert data.scope_version(Scope(model="kimi_k2").filters()) != data.scope_version(None)


def test_an_upload_is_appended_to_its_cells_frame_as_a_full_read_gives(data: DashData) -> None:
    before = data.cell_frame(CELL_A)
    run = upload_generated(data.store, CELL_A, 6)
    # a new backend and comm: categories the cached frame does not know yet
    extra = sweeps.make_sweep(
        12, seed=7, model=CELL_A.model, hardware=CELL_A.hardware, quant=CELL_A.quant
    )
    extra.candidates[C.BACKEND] = "NEW_BACKEND"
    newest = data.store.ingest([extra], b"new-backend", UploadMeta(hardware=CELL_A.hardware))
    # the frame is brought up to date by appending (not read whole)
    assert data._appended(CELL_A) is not None
    appended = data.cell_frame(CELL_A)
    assert appended is not before and {run, newest.runs[0].run_id} <= set(appended[C.RUN_ID])
    fresh = DashData(data.store, version_ttl=0.0).cell_frame(CELL_A)  # a whole read
    pd.testing.assert_frame_equal(appended, fresh)
    # after a delete the frame is read whole again, without the deleted run
    data.store.delete_run(run)
    again = data.cell_frame(CELL_A)
    assert run not in set(again[C.RUN_ID])
    pd.testing.assert_frame_equal(again, DashData(data.store).cell_frame(CELL_A))


def test_config_stats_are_cached_per_cell_version(data: DashData) -> None:
    stats_b = cell_config_stats(data, CELL_B)
    assert len(stats_b) and (stats_b["n_runs"] == 1).all()
    assert cell_config_stats(data, CELL_B) is stats_b
    upload_generated(data.store, CELL_A, 8)
    assert cell_config_stats(data, CELL_B) is stats_b
    upload_generated(data.store, CELL_B, 9)
    again = cell_config_stats(data, CELL_B)
    assert again is not stats_b and again["n_runs"].max() == 2
