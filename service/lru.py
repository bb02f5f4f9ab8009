"""A small thread-safe LRU of computed values, optionally bounded by a weight (bytes)."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from typing import Any, TypeVar

import numpy as np
import pandas as pd

T = TypeVar("T")


def bytes_held(value: Any, shared: Collection[int] = (), _depth: int = 0) -> int:
    """Bytes of the DataFrames, Series and numpy arrays a cached value holds (itself, in
    a tuple, list or dict, or as an attribute of a dataclass or plain object, three
    levels deep), deep (the text of object columns and categories counted): what it
    costs in memory. Objects whose ``id`` is in ``shared`` (a frame another cache
    counts) and repeats of one object are counted once at most (never for
    ``shared``)."""
    seen: set[int] = set(shared)

    def size(v: Any, depth: int) -> int:
        if id(v) in seen or v is None or isinstance(v, str | bytes | int | float | bool):
            return 0
        seen.add(id(v))
        if isinstance(v, pd.DataFrame):
            return int(v.memory_usage(deep=True, index=True).sum())
        if isinstance(v, pd.Series | pd.Index):
            return int(v.memory_usage(deep=True))
        if isinstance(v, np.ndarray):
            return int(v.nbytes)
        if depth > 3:
            return 0
        # containers copied first (atomic under the GIL): a structure another thread
        # fills (the Pareto index's background work) may grow while it is weighed
        if isinstance(v, tuple | list):
            return sum(size(x, depth + 1) for x in tuple(v))
        if isinstance(v, dict):
            return sum(size(x, depth + 1) for x in tuple(v.values()))
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return sum(size(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v))
        attrs = getattr(v, "__dict__", None)
        if not isinstance(attrs, dict):
            return 0
        return sum(size(x, depth + 1) for x in tuple(attrs.values()))

    return size(value, _depth)


class LRU:
    """At most ``size`` values and (when ``max_weight`` is given) at most that much total
    weight -- the newest value always stays, however heavy. ``get`` computes once per
    key even when several threads ask at the same time. ``on_evict(key, value)`` is
    called (outside the lock) for every value the bounds push out."""

    def __init__(
        self,
        size: int,
        max_weight: int | None = None,
        on_evict: Callable[[Hashable, Any], None] | None = None,
    ) -> None:
        self.size = size
        self.max_weight = max_weight
        self.on_evict = on_evict
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
            w = weight(value) if weight is not None else 0  # (deep sizes: not under the lock)
            with self._lock:
                self._items[key] = value
                self._weights[key] = w
                gone = self._evict()
                self._key_locks.pop(key, None)
        self._evicted(gone)
        return value

    def _evict(self) -> list[tuple[Hashable, Any]]:
        def too_heavy() -> bool:
            return self.max_weight is not None and sum(self._weights.values()) > self.max_weight

        gone = []
        while len(self._items) > 1 and (len(self._items) > self.size or too_heavy()):
            gone.append(self._items.popitem(last=False))
            self._weights.pop(gone[-1][0], None)
        return gone

    def _evicted(self, gone: list[tuple[Hashable, Any]]) -> None:
        if self.on_evict is not None:
            for key, value in gone:
                self.on_evict(key, value)

    def reserve(self, weight: int, keep: Callable[[Hashable], bool] = lambda _k: False) -> None:
        """Make room for a value of ``weight`` before computing it: evict the least
        recently used values (except those whose key ``keep`` accepts) until it would
        fit, so an old, heavy value and the new one are not held at once."""
        if self.max_weight is None:
            return
        gone = []
        with self._lock:
            for old in [k for k in self._items if not keep(k)]:
                if sum(self._weights.values()) + weight <= self.max_weight:
                    break
                gone.append((old, self._items.pop(old)))
                self._weights.pop(old, None)
        self._evicted(gone)

    def reweigh(self, key: Hashable, weight: Callable[[Any], int]) -> bool:
        """Weigh the value held under ``key`` again (it grew since it was stored: an
        index filled in the background) and evict what no longer fits; False when
        ``key`` is not held (any more)."""
        with self._lock:
            if key not in self._items:
                return False
            value = self._items[key]
        w = weight(value)  # (deep sizes: not under the lock)
        with self._lock:
            if key not in self._items or self._items[key] is not value:
                return False
            self._weights[key] = w
            gone = self._evict()
        self._evicted(gone)
        return True

    def discard(self, match: Callable[[Hashable], bool]) -> int:
        """Forget the values whose key ``match`` accepts (not an eviction: no
        ``on_evict``); how many."""
        with self._lock:
            keys = [k for k in self._items if match(k)]
            for k in keys:
                del self._items[k]
                self._weights.pop(k, None)
        return len(keys)

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
