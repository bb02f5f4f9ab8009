"""A cell's configuration frame built while its pieces are read (keeping only the rows
that can be a configuration's latest version) is the whole read's answer, row for row,
on the awkward histories a year of sweeps has: versions re-measured after newer ones,
runs uploaded out of date order, undated runs, repeats, failures, several routing
patterns or none; on DuckDB and PostgreSQL, whatever the piece size."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis.identity import N_VERSIONS, configuration_frame
from analysis.predict_shape import answer_rows
from db.store import Store
from ingest.records import Sweep, UploadMeta
from service.cell_configurations import read_configurations
from service.cell_frames import read_cell
from service.frames import Cell, DashData
from service.predictions_shape import slice_frame
from tests.db.test_stats_pieces import CELL, seed_mixed_cell
from tests.factories import sweeps

# (version, run date, score factor, rows kept, dispatch) of each run, in upload order
HISTORY: list[tuple[str, str | None, float, int, str | None]] = [
    ("v1.0", "2026-03-01", 1.00, 40, "mixed"),
    ("v2.0", "2026-05-01", 1.10, 40, "mixed"),
    ("v1.0", "2026-06-01", 0.90, 6, "mixed"),  # v1 again, after v2: latest for these 6
    ("v2.0", "2026-04-01", 1.05, 40, "mixed"),  # uploaded later, dated earlier
    ("v3.0", None, 0.80, 40, "mixed"),  # undated: older than every dated run
    ("v2.0", "2026-05-01", 1.20, 30, "random"),  # a repeat of v2 on one date
    ("v0.9", "2026-01-01", 1.30, 40, None),  # an old version, no pattern recorded
]


def _run(
    i: int,
    version: str,
    date: str | None,
    factor: float,
    n: int,
    pattern: str | None,
    cell: tuple[str, str, str] = CELL,
) -> Sweep:
    sweep = sweeps.make_sweep(
        40,
        seed=7,
        model=cell[0],
        hardware=cell[1],
        quant=cell[2],
        trtllm_version=version,
        run_date=date,
    )
    c = sweep.candidates
    c[C.SCORE_MS] = c[C.SCORE_MS] * factor * (1 + 0.01 * i)
    if pattern == "mixed":
        c[C.DISPATCH] = np.where(np.arange(len(c)) % 3 == 0, "random", "balanced")
    elif pattern is not None:
        c[C.DISPATCH] = pattern
    if i == 3:  # two rows of one run share every key: the fastest counts
        c.loc[5] = c.loc[4].copy()
        c.loc[5, C.CANDIDATE_INDEX], c.loc[5, C.SCORE_MS] = 5, float(c.loc[4, C.SCORE_MS]) / 2
    return Sweep(key="", run=sweep.run, candidates=c.iloc[:n].reset_index(drop=True))


def seed_history(
    store: Store, history: list[Any] = HISTORY, cell: tuple[str, str, str] = CELL
) -> None:
    for i, spec in enumerate(history):
        store.ingest(
            [_run(i, *spec, cell=cell)], f"{cell}-{i}".encode(), UploadMeta(hardware=cell[1])
        )


def _whole(store: Store, cell: tuple[str, str, str] = CELL) -> pd.DataFrame:
    frame = read_cell(store, *cell)
    return configuration_frame(frame, rows=answer_rows(frame))


def assert_same_answer(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Equal rows, order and values; categoricals compared by value (the streamed
    frame's categories are only those of the rows it kept)."""

    def plain(f: pd.DataFrame) -> pd.DataFrame:
        f = f.reset_index(drop=True)
        return f.astype(
            {c: object for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)}
        )

    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(plain(got), plain(want), check_exact=True, check_dtype=False)


@pytest.mark.parametrize("piece_rows", [1, 45, 1_000_000])
def test_a_long_history_read_in_pieces_gives_the_whole_reads_configurations(
    store: Store, piece_rows: int
) -> None:
    seed_history(store)
    want = _whole(store)
    got = read_configurations(store, *CELL, piece_rows=piece_rows)
    assert_same_answer(got, want)
    # the history is what it says: versions superseded and re-measured, repeats pooled
    assert set(want[C.DISPATCH].astype(str)) == {"balanced"}
    assert want[N_VERSIONS].max() == 3 and (want["n_repeats"] > 1).any()
    assert set(want[C.TRTLLM_VERSION].astype(str)) == {"v1.0", "v2.0"}


def test_a_cell_without_balanced_routing_answers_for_its_most_measured_pattern(
    store: Store,
) -> None:
    history = [(v, d, f, n, "random" if p == "mixed" else p) for v, d, f, n, p in HISTORY]
    history += [("v4.0", "2026-07-01", 1.0, 10, "skewed")]
    seed_history(store, history)
    got = read_configurations(store, *CELL, piece_rows=45)
    assert_same_answer(got, _whole(store))
    assert set(got[C.DISPATCH].astype(str)) == {"random"}


def test_a_cell_without_any_pattern_and_the_mixed_cell_give_the_whole_reads(
    store: Store,
) -> None:
    seed_history(store, [(v, d, f, n, None) for v, d, f, n, _ in HISTORY])
    assert_same_answer(read_configurations(store, *CELL, piece_rows=45), _whole(store))
    other = ("kimi_k2", "GB300", "NVFP4")
    assert read_configurations(store, *other).empty  # nothing stored: the empty answer
    seed_mixed_cell(store)  # nullable columns in one piece only, a run without rows
    assert_same_answer(read_configurations(store, *CELL, piece_rows=15), _whole(store))


def test_the_slice_frame_is_the_same_read_in_pieces_or_from_a_visitors_frame(
    store: Store,
) -> None:
    seed_history(store)
    seed_history(store, cell=("kimi_k2", "GB300", "NVFP4"))
    streamed = slice_frame(DashData(store), "GB300", "NVFP4")
    data = DashData(store)
    for cell in data.cells_matching({"hardware": "GB300", "quant": "NVFP4"}):
        data.cell_frame(cell)  # visited: the cached frames are used, nothing is read
        assert data.held_cell_frame(cell) is not None
    assert_same_answer(streamed, slice_frame(data, "GB300", "NVFP4"))
    assert set(streamed[C.MODEL].astype(str)) == {CELL[0], "kimi_k2"}
    assert DashData(store).held_cell_frame(Cell(*CELL)) is None
