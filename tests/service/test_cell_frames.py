"""A cell frame read in pieces, and an upload appended to a cached frame, give exactly the
frame of one whole read (rows, order, dtypes, categories), on DuckDB and PostgreSQL;
the pieces and the frame appended to are not held twice."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis.frontier import RANKABLE
from db.store import Store
from service.cell_frames import (
    CELL_COLUMNS,
    append_rows,
    join_pieces,
    prepare_frame,
    read_cell,
)
from service.frames import Cell, DashData
from tests.db.test_stats_pieces import CELL, seed_mixed_cell
from tests.factories import sweeps
from tests.service.stores import upload_generated


def _whole(store: Store, after_run_id: int | None = None) -> pd.DataFrame:
    """Today's reference: the cell read whole, then prepared."""
    raw = store.stats.cell_frame(
        *CELL, columns=CELL_COLUMNS, categorical=True, after_run_id=after_run_id
    )
    return prepare_frame(raw)


def assert_same_frame(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Equal values, dtypes, categories (and their order and type) and codes' width."""
    pd.testing.assert_frame_equal(got, want, check_exact=True, check_categorical=True)
    for col in want.columns:
        a, b = got[col], want[col]
        if isinstance(b.dtype, pd.CategoricalDtype):
            assert a.cat.categories.dtype == b.cat.categories.dtype, col
            assert a.cat.codes.dtype == b.cat.codes.dtype, col


@pytest.mark.parametrize("piece_rows", [1, 15, 10_000])
def test_a_cell_read_in_pieces_is_the_whole_read(store: Store, piece_rows: int) -> None:
    runs = seed_mixed_cell(store)
    assert_same_frame(read_cell(store, *CELL, piece_rows=piece_rows), _whole(store))
    after = read_cell(store, *CELL, after_run_id=runs[0], piece_rows=piece_rows)
    assert_same_frame(after, _whole(store, runs[0]))


def test_an_empty_cell_reads_as_the_whole_read(store: Store) -> None:
    seed_mixed_cell(store)
    got = read_cell(store, "nope", *CELL[1:])
    want = prepare_frame(
        store.stats.cell_frame("nope", *CELL[1:], columns=CELL_COLUMNS, categorical=True)
    )
    assert got.empty
    assert_same_frame(got, want)


def test_the_read_path_appends_an_upload_as_a_whole_read_gives(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    cell = Cell(*CELL)
    seed_mixed_cell(store)
    before = data.cell_frame(cell)
    # a stored row changed behind the cache: only a whole read would see it, so the
    # frame below is the cached one appended to, not a new read
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE measurements SET score_ms = 99.0 WHERE candidate_index = 0")
    new_run = upload_generated(store, cell, 11)
    appended = data.cell_frame(cell)
    assert new_run in set(appended[C.RUN_ID]) and new_run not in set(before[C.RUN_ID])
    expected = _whole(store)
    assert (appended[C.SCORE_MS] == 99.0).sum() == 0 < (expected[C.SCORE_MS] == 99.0).sum()
    # the previous frame left the cache before the two were joined
    assert data._cells.latest(lambda k: k[1] != data.cell_version(cell)) is None
    # otherwise the whole read's frame: what the change behind the cache touched aside
    old_rows = (expected[C.RUN_ID] != new_run).to_numpy()
    for col in (C.SCORE_MS, C.TOKENS_PER_S_PER_GPU, RANKABLE):
        expected.loc[old_rows, col] = before[col].to_numpy()
    assert_same_frame(appended, expected)


def _frame(n: int, seed: int, **columns: object) -> pd.DataFrame:
    frame = sweeps.make_candidates(n, seed).assign(**{C.RUN_ID: seed})
    for col, value in columns.items():
        frame[col] = value
    frame = frame[[C.RUN_ID, *CELL_COLUMNS]]
    for col in (C.CANDIDATE_INDEX, C.NUM_TOKENS, C.MOE_EP_SIZE, C.MOE_TP_SIZE):
        if frame[col].notna().all():
            frame[col] = frame[col].astype(np.int64)
    return frame.assign(**{C.TOP_K: 8, C.WORLD_SIZE: 4, C.QUANT: "NVFP4", C.HIDDEN_SIZE: 7168})


def test_join_pieces_unites_dtypes_as_one_read_would() -> None:
    a = _frame(6, 1)
    b = _frame(4, 2, **{C.MOE_EP_SIZE: pd.array([4, None, 4, 4], dtype="Int64")})
    b[C.BACKEND] = "NEW_BACKEND"
    b[C.CUDA_GRAPH] = pd.array([True, None, True, False], dtype="boolean")
    pieces = [prepare_frame(a), prepare_frame(b)]
    want = prepare_frame(pd.concat([a, b], ignore_index=True))
    got = join_pieces(pieces)
    assert pieces == []  # handed over: the caller keeps no reference
    assert got is not None
    assert got[C.MOE_EP_SIZE].dtype == "Int64" and got[C.CUDA_GRAPH].dtype == "boolean"
    assert list(got[C.BACKEND].cat.categories) == ["CUTEDSL", "CUTLASS", "NEW_BACKEND", "TRTLLM"]
    assert_same_frame(got, want)


def test_join_pieces_refuses_what_no_read_unites() -> None:
    a = prepare_frame(_frame(3, 1))
    b = prepare_frame(_frame(3, 2))
    b[C.SCORE_MS] = b[C.SCORE_MS].astype("category")
    assert join_pieces([a, b]) is None
    c = prepare_frame(_frame(3, 3))
    c[C.NUM_TOKENS] = c[C.NUM_TOKENS].astype(float)
    assert join_pieces([prepare_frame(_frame(3, 1)), c]) is None
    assert join_pieces([a, a.drop(columns=[C.SCORE_MS])]) is None
    assert append_rows([prepare_frame(_frame(3, 2)), prepare_frame(_frame(3, 1))]) is None


def test_appending_does_not_hold_the_cell_twice() -> None:
    tracemalloc.start()  # before the frames: their release counts
    try:
        old = prepare_frame(_frame(200_000, 1))
        new = prepare_frame(_frame(1_000, 2))
        size = int(old.memory_usage(deep=True).sum())
        frames = [old, new]
        del old, new
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        joined = append_rows(frames)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert joined is not None and len(joined) == 201_000
    # the old frame's columns go as the joined ones are made: a column or two beyond
    # what was held, not a second frame (~0.8 x size more when the old one is kept)
    assert peak - held < 0.4 * size
