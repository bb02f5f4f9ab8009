"""The cache every read-path structure lives in: bounded by count and by the bytes of
the frames its values hold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from service.lru import LRU, bytes_held


def _frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"x": range(n)})


@dataclass(frozen=True)
class _Answer:
    table: pd.DataFrame
    parts: tuple[pd.DataFrame, str]


def _bytes(frame: pd.DataFrame) -> int:
    return int(frame.memory_usage(deep=True, index=True).sum())


def test_bytes_held_counts_frames_arrays_and_text_in_values() -> None:
    a, b, c = _frame(5), _frame(2), _frame(3)
    assert bytes_held(a) == _bytes(a)
    assert bytes_held((b, "x", [c])) == _bytes(b) + _bytes(c)
    assert bytes_held(_Answer(a, (b, "y"))) == _bytes(a) + _bytes(b)
    assert bytes_held({"k": np.zeros(4)}) == np.zeros(4).nbytes
    assert bytes_held((a, a)) == _bytes(a)  # one object counted once
    assert bytes_held("text") == 0 and bytes_held(None) == 0
    # deep: the text of an object column counts, not only its pointers
    words = pd.DataFrame({"x": ["w" * 1000] * 5})
    assert bytes_held(words) >= 5 * 1000 > 10 * bytes_held(a)
    # a frame another cache counts is left out, wherever it sits
    assert bytes_held((a, _Answer(a, (b, "y"))), shared={id(a)}) == _bytes(b)


class _Index:
    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.codes = np.arange(10)


def test_bytes_held_looks_into_plain_objects() -> None:
    a = _frame(5)
    assert bytes_held(_Index(a)) == _bytes(a) + np.arange(10).nbytes
    assert bytes_held(_Index(a), shared={id(a)}) == np.arange(10).nbytes


def test_byte_bound_evicts_by_bytes_not_by_count() -> None:
    small, big = _frame(10), pd.DataFrame({"x": ["w" * 100] * 10})  # same rows
    lru = LRU(10, max_weight=_bytes(small) * 3, on_evict=lambda k, v: gone.append(k))
    gone: list[str] = []
    for key in ("s1", "s2", "s3"):
        lru.get(key, lambda: small.copy(), bytes_held)
    assert gone == [] and lru.weight == 3 * _bytes(small)
    lru.get("big", lambda: big, bytes_held)  # as many rows, many more bytes
    assert gone == ["s1", "s2", "s3"]  # every older value went, the newest stays
    assert lru.latest(lambda k: True) == ("big", big)
    assert lru.discard(lambda k: k == "big") == 1 and gone == ["s1", "s2", "s3"]
    assert lru.weight == 0


def test_weight_bound_evicts_the_oldest_but_keeps_the_newest() -> None:
    lru = LRU(10, max_weight=10)
    a = lru.get("a", lambda: _frame(6), len)
    lru.get("b", lambda: _frame(3), len)
    assert lru.weight == 9
    lru.get("a", lambda: _frame(99), len)  # a hit: "a" is now the newest
    lru.get("c", lambda: _frame(4), len)  # 13 > 10: "b" (oldest) goes
    assert lru.latest(lambda k: k == "b") is None
    assert lru.latest(lambda k: k == "a") == ("a", a)
    huge = lru.get("d", lambda: _frame(50), len)  # alone over the bound, still kept
    assert lru.latest(lambda k: True) == ("d", huge) and lru.weight == 50


def test_reserve_makes_room_except_for_kept_keys() -> None:
    lru = LRU(10, max_weight=10)
    for key, n in (("old-a", 4), ("b", 3), ("c", 2)):
        lru.get(key, lambda n=n: _frame(n), len)
    lru.reserve(5, keep=lambda k: str(k).endswith("a"))
    # 9 + 5 > 10: "b" goes (oldest not kept), then 6 + 5 > 10: "c" goes too
    assert [k for k in ("old-a", "b", "c") if lru.latest(lambda x, k=k: x == k)] == ["old-a"]
    lru.reserve(100)
    assert lru.weight == 0
