"""The read path's caches are bounded by bytes (issue 23): a frame cache that holds one
cell's frame evicts the other cell's, and takes that frame's per-frame structures along;
a per-frame structure is weighed without the frame the frame cache already counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from db.store import Store
from service import predictions_shape as PS
from service.frames import Cell, DashData
from service.lru import bytes_held
from service.warm import warm_cache
from tests.service.stores import upload_generated

CELL_A = Cell("deepseek_v4_pro", "GB300", "NVFP4")
CELL_B = Cell("kimi_k2", "B300", "NVFP4")


@pytest.fixture
def sizes(store: Store) -> tuple[int, int]:
    upload_generated(store, CELL_A, 1)
    upload_generated(store, CELL_B, 2)
    probe = DashData(store, version_ttl=0.0)
    return bytes_held(probe.cell_frame(CELL_A)), bytes_held(probe.cell_frame(CELL_B))


def test_frames_are_bounded_by_bytes_and_take_their_structures_along(
    store: Store, sizes: tuple[int, int]
) -> None:
    a_bytes, b_bytes = sizes
    data = DashData(store, version_ttl=0.0, max_bytes=max(a_bytes, b_bytes) + 1)
    frame_a = data.cell_frame(CELL_A)
    calls: list[str] = []

    def build(name: str, frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
        calls.append(name)
        return frame, np.arange(8)

    data.frame_cached("index", frame_a, lambda: build("a", frame_a))
    data.frame_cached("index", frame_a, lambda: build("a", frame_a))
    assert calls == ["a"]
    assert data.cell_frame(CELL_A) is frame_a
    frame_b = data.cell_frame(CELL_B)  # both do not fit: A's frame goes
    assert data.cell_frame(CELL_B) is frame_b
    # ... and its index with it (it would keep the evicted frame alive)
    data.frame_cached("index", frame_a, lambda: build("a", frame_a))
    assert calls == ["a", "a"]
    again = data.cell_frame(CELL_A)  # read again, equal
    assert again is not frame_a
    pd.testing.assert_frame_equal(again, frame_a)

    roomy = DashData(store, version_ttl=0.0, max_bytes=a_bytes + b_bytes)
    first = roomy.cell_frame(CELL_A)
    roomy.cell_frame(CELL_B)
    assert roomy.cell_frame(CELL_A) is first  # both fit: nothing evicted


def test_per_frame_structures_are_weighed_without_their_frame(
    store: Store, sizes: tuple[int, int]
) -> None:
    a_bytes, _ = sizes
    # room for small structures only: far less than one frame
    data = DashData(store, version_ttl=0.0, max_result_bytes=a_bytes // 4)
    frame = data.cell_frame(CELL_A)
    calls: list[str] = []
    for name in ("one", "two", "one", "two"):
        data.frame_cached(name, frame, lambda n=name: calls.append(n) or (frame, np.arange(8)))
    assert calls == ["one", "two"]  # each holds the frame: neither pushed the other out


def test_warm_up_loads_only_the_cells_the_byte_budget_holds(
    store: Store, sizes: tuple[int, int]
) -> None:
    a_bytes, b_bytes = sizes
    one = DashData(store, version_ttl=0.0, max_bytes=min(a_bytes, b_bytes) // 2)
    assert len(warm_cache(one)) == 1  # the first cell always, no second
    both = DashData(store, version_ttl=0.0, max_bytes=4 * (a_bytes + b_bytes))
    assert len(warm_cache(both)) == 2


def test_a_slice_fit_makes_room_in_the_frame_budget_first(
    store: Store, sizes: tuple[int, int]
) -> None:
    a_bytes, b_bytes = sizes
    data = DashData(store, version_ttl=0.0, max_bytes=a_bytes + b_bytes)
    frame_a = data.cell_frame(CELL_A)
    data.cell_frame(CELL_B)
    assert data.make_room(0) == 0  # room for nothing more: nothing dropped
    # room for one cell's bytes: the least recently used frame (A's) goes, B's stays
    assert data.make_room(a_bytes) == a_bytes
    assert data.held_cell_frame(CELL_A) is None
    assert data.held_cell_frame(CELL_B) is not None
    assert data.cell_frame(CELL_A) is not frame_a  # read again

    # the shape fit of a slice needs far more than this budget: every frame goes first
    assert a_bytes + b_bytes < PS.SLICE_FIT_BYTES
    PS.shape_fit(data, CELL_A.hardware, CELL_A.quant, 0.9)
    assert data.held_cell_frame(CELL_A) is None
    assert data.held_cell_frame(CELL_B) is None
    data.cell_frame(CELL_B)  # a visitor's again
    PS.model_validation(data, CELL_B.hardware, CELL_B.quant)
    assert data.held_cell_frame(CELL_B) is None
