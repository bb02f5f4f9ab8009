"""A small thread-safe LRU of computed values, optionally bounded by a weight (rows)."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import pandas as pd

T = TypeVar("T")


def rows_held(value: Any, _depth: int = 0) -> int:
    """Rows of the DataFrames a cached value holds (itself, in a tuple or list, or as a
    dataclass field, two levels deep): what it costs in memory, roughly."""
    if isinstance(value, pd.DataFrame):
        return len(value)
    if _depth > 2:
        return 0
    if isinstance(value, tuple | list):
        return sum(rows_held(v, _depth + 1) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(rows_held(getattr(value, f.name), _depth + 1) for f in dataclasses.fields(value))
    return 0


class LRU:
    """At most ``size`` values and (when ``max_weight`` is given) at most that much total
    weight -- the newest value always stays, however heavy. ``get`` computes once per
    key even when several threads ask at the same time."""

    def __init__(self, size: int, max_weight: int | None = None) -> None:
        self.size = size
        self.max_weight = max_weight
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._weights: dict[Hashable, int] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}

    def get(
        self, key: Hashable, compute: Callable[[], T], weight: Callable[[T], int] | None = None
    ) -> T:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]  # type: ignore[no-any-return]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]  # type: ignore[no-any-return]
            value = compute()
            with self._lock:
                self._items[key] = value
                self._weights[key] = weight(value) if weight is not None else 0
                self._evict()
                self._key_locks.pop(key, None)
        return value

    def _evict(self) -> None:
        def too_heavy() -> bool:
            return self.max_weight is not None and sum(self._weights.values()) > self.max_weight

        while len(self._items) > 1 and (len(self._items) > self.size or too_heavy()):
            old, _ = self._items.popitem(last=False)
            self._weights.pop(old, None)

    def reserve(self, weight: int, keep: Callable[[Hashable], bool] = lambda _k: False) -> None:
        """Make room for a value of ``weight`` before computing it: evict the least
        recently used values (except those whose key ``keep`` accepts) until it would
        fit, so an old, heavy value and the new one are not held at once."""
        if self.max_weight is None:
            return
        with self._lock:
            for old in [k for k in self._items if not keep(k)]:
                if sum(self._weights.values()) + weight <= self.max_weight:
                    break
                del self._items[old]
                self._weights.pop(old, None)

    def latest(self, match: Callable[[Hashable], bool]) -> tuple[Hashable, Any] | None:
        """The most recently used (key, value) whose key ``match`` accepts, or None."""
        with self._lock:
            for key in reversed(self._items):
                if match(key):
                    return key, self._items[key]
        return None

    @property
    def weight(self) -> int:
        """Total weight of the values held."""
        with self._lock:
            return sum(self._weights.values())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weights.clear()
