"""The cache every read-path structure lives in: bounded by count and by the rows of the
frames its values hold."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from service.lru import LRU, rows_held


def _frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"x": range(n)})


@dataclass(frozen=True)
class _Answer:
    table: pd.DataFrame
    parts: tuple[pd.DataFrame, str]


def test_rows_held_counts_frames_in_values() -> None:
    assert rows_held(_frame(5)) == 5
    assert rows_held((_frame(2), "x", [_frame(3)])) == 5
    assert rows_held(_Answer(_frame(4), (_frame(1), "y"))) == 5
    assert rows_held("text") == 0 and rows_held(None) == 0


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
