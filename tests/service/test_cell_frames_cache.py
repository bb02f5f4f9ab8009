"""A per-frame structure that grows after it is stored (the Pareto index, filled by
background work) is weighed again, so the byte bound counts what it holds now."""

from __future__ import annotations

import threading

import numpy as np

from db.store import Store
from service.frames import Cell, DashData
from service.lru import LRU, bytes_held
from service.pareto import pareto_index
from tests.service.stores import upload_generated

CELL = Cell("deepseek_v4_pro", "GB300", "NVFP4")


def test_reweigh_counts_the_grown_value_and_evicts_what_no_longer_fits() -> None:
    gone: list[str] = []
    lru = LRU(4, max_weight=100, on_evict=lambda k, _v: gone.append(str(k)))
    values = {k: [0] * 10 for k in "abc"}
    for key, value in values.items():
        lru.get(key, lambda v=value: v, len)
    assert lru.weight == 30
    values["b"].extend([0] * 65)
    assert lru.reweigh("b", len)
    assert lru.weight == 95 and gone == []
    values["b"].extend([0] * 10)  # 105: the oldest goes until it fits
    assert lru.reweigh("b", len)
    assert gone == ["a"] and lru.weight == 95
    assert not lru.reweigh("a", len)  # not held any more


def test_frame_reweigh_weighs_a_structure_without_its_frame(store: Store) -> None:
    upload_generated(store, CELL, 1)
    data = DashData(store)
    frame = data.cell_frame(CELL)
    box: dict[str, object] = {"frame": frame, "arrays": []}
    assert data.frame_cached("grows", frame, lambda: box) is box
    assert data._per_frame.weight == 0  # the frame is the frame cache's to count
    box["arrays"] = [np.zeros(100_000)]
    data.frame_reweigh("grows", frame)
    assert data._per_frame.weight == 800_000
    data.frame_reweigh("other", frame)  # nothing held under it: nothing happens
    assert data._per_frame.weight == 800_000


def test_the_pareto_index_is_weighed_once_filled(store: Store) -> None:
    upload_generated(store, CELL, 1)
    data = DashData(store)
    frame = data.cell_frame(CELL)
    index = pareto_index(data, CELL, frame)
    for thread in threading.enumerate():
        if thread.name == "moedash-pareto-index":
            thread.join(timeout=60)
    filled = bytes_held(index, shared={id(frame)})
    assert filled > 0 and data._per_frame.weight == filled
