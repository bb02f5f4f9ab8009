"""Cached data access for both front ends (the API's analysis routes and the pages).

The store is the truth; this module keeps what the pages read often in memory:

* one candidate frame per (model, hardware, quant) "cell", with the derived columns
  (``analysis.derived.add_derived``) and text columns as categoricals (less memory,
  fast equality filters) -- read with ``Store.candidate_frame(categorical=True)``, which
  dictionary-encodes text on the database's columnar path instead of building a Python
  string per row;
* structures built from one cell frame (``frame_cached``: the Pareto page's index),
  tied to that frame object;
* the coverage table and recent runs;
* analysis results that are expensive and depend only on a cell (best-by-workload
  tables) or on everything (threshold check).

Every cache entry is keyed on the store's *version*: (number of runs, newest run id).
An upload or a delete changes it, so new data shows up without a restart. The version
itself is re-read at most once per ``version_ttl`` seconds (1 s by default), which
bounds both the staleness and the cost of asking.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import add_derived, rankable_mask
from analysis.frontier import RANKABLE
from db.store import Store

T = TypeVar("T")
Version = tuple[int, int]

# Candidate columns the dashboard's cell frames need (no JSON blobs, no long texts).
CELL_COLUMNS: tuple[str, ...] = (
    C.CANDIDATE_INDEX,
    C.NUM_TOKENS,
    C.PARALLEL_MODE,
    C.ATTENTION_DP,
    C.ATTN,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.BACKEND,
    C.COMM,
    C.COMM_REQUESTED,
    C.CUDA_GRAPH,
    C.LOW_PRECISION_COMBINE,
    C.NUM_CHUNKS,  # part of a configuration's identity (analysis.identity)
    C.DISPATCH,
    C.STATUS,
    C.FAILURE_CATEGORY,
    C.SCORE_MS,
    C.ITER_MEDIAN_MS,
    C.ITER_STDEV_MS,
    C.ITER_P90_MS,
    C.OUTLIER_COUNT,
    C.AUTOTUNE_STATUS,
)
_CATEGORICAL = (
    C.SOURCE_FORMAT,
    C.MODEL,
    C.QUANT,
    C.HARDWARE,
    C.TRTLLM_VERSION,
    C.TRTLLM_COMMIT,
    C.RUN_DATE,
    C.PARALLEL_MODE,
    C.ATTN,
    C.BACKEND,
    C.COMM,
    C.COMM_REQUESTED,
    C.DISPATCH,
    C.STATUS,
    C.FAILURE_CATEGORY,
    C.AUTOTUNE_STATUS,
    C.PHASE,
)


@dataclass(frozen=True)
class Cell:
    model: str
    hardware: str
    quant: str

    @property
    def label(self) -> str:
        return f"{self.model} · {self.hardware} · {self.quant}"

    @property
    def key(self) -> str:
        return f"{self.model}|{self.hardware}|{self.quant}"

    @classmethod
    def from_key(cls, key: str | None) -> Cell | None:
        parts = (key or "").split("|")
        return cls(*parts) if len(parts) == 3 and all(parts) else None


def prepare_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Cell frame from a store candidate frame: derived columns, categoricals and the
    ``_rankable`` flag. Row order is kept (run_id, candidate_index)."""
    out = add_derived(df)
    for col in _CATEGORICAL:
        if col in out:
            out[col] = out[col].astype("category")
    out[RANKABLE] = rankable_mask(out)
    return out.reset_index(drop=True)


class _LRU:
    """A small thread-safe LRU of computed values; ``get`` computes once per key even
    when several threads ask at the same time."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
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
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
                self._key_locks.pop(key, None)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class DashData:
    """The read path over one :class:`Store` (see module docstring): the service object
    the API routes and the dashboard pages both read through. Cell frames carry the
    ``_rankable`` flag (:data:`analysis.frontier.RANKABLE`)."""

    def __init__(self, store: Store, *, max_cells: int = 6, version_ttl: float = 1.0) -> None:
        self.store = store
        self.max_cells = max_cells
        self.version_ttl = version_ttl
        self._version: Version = (-1, -1)
        self._version_at = -np.inf
        self._version_lock = threading.Lock()
        self._cells = _LRU(max_cells)
        self._results = _LRU(64)
        self._per_frame = _LRU(max_cells)
        self._small = _LRU(16)

    # ------------------------------------------------------------ version
    def version(self) -> Version:
        """(runs, newest run id) of the store, re-read at most every ``version_ttl`` s."""
        now = time.monotonic()
        with self._version_lock:
            if now - self._version_at < self.version_ttl:
                return self._version
        page = self.store.list_runs(limit=1)
        newest = int(page.items[C.RUN_ID].iloc[0]) if len(page.items) else 0
        with self._version_lock:
            self._version, self._version_at = (page.total, newest), time.monotonic()
            return self._version

    def invalidate(self) -> None:
        """Forget the cached version (the next read asks the store)."""
        with self._version_lock:
            self._version_at = -np.inf

    # ------------------------------------------------------------ reads
    def coverage(self) -> pd.DataFrame:
        """``Store.coverage()`` (model, hardware, quant, world_size, synthetic, runs,
        candidates, workloads)."""
        return self._small.get(("coverage", self.version()), self.store.coverage)

    def is_synthetic(self, cell: Cell | None) -> bool:
        """True when any stored run of ``cell`` (None: of the whole database) is
        generated demo data, so pages can say so next to the numbers."""
        cov = self.coverage()
        if cov.empty:
            return False
        if cell is not None:
            cov = cov[
                (cov[C.MODEL] == cell.model)
                & (cov[C.HARDWARE] == cell.hardware)
                & (cov[C.QUANT] == cell.quant)
            ]
        return bool(cov[C.SYNTHETIC].fillna(False).astype(bool).any())

    def cells(self) -> list[Cell]:
        """Every (model, hardware, quant) with data, sorted."""
        cov = self.coverage()
        keys = cov[[C.MODEL, C.HARDWARE, C.QUANT]].drop_duplicates()
        return [Cell(str(m), str(h), str(q)) for m, h, q in keys.itertuples(index=False)]

    def recent_runs(self, limit: int = 20) -> pd.DataFrame:
        """Newest runs with their upload's filename and upload time."""

        def load() -> pd.DataFrame:
            return self.store.runs.recent_runs(limit)

        return self._small.get(("recent", limit, self.version()), load)

    def cell_frame(self, cell: Cell) -> pd.DataFrame:
        """All candidates of one cell (every status) as a prepared frame."""

        def load() -> pd.DataFrame:
            raw = self.store.candidate_frame(
                filters={C.MODEL: cell.model, C.HARDWARE: cell.hardware, C.QUANT: cell.quant},
                columns=CELL_COLUMNS,
                categorical=True,
            )
            return prepare_frame(raw)

        return self._cells.get((cell, self.version()), load)

    def cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A derived result cached under ``key`` for the current store version."""
        return self._results.get((key, self.version()), compute)

    def frame_cached(self, key: Hashable, frame: pd.DataFrame, compute: Callable[[], T]) -> T:
        """A structure built from one cell frame (that may keep the frame alive, e.g. the
        Pareto index), cached per frame object: never paired with another frame's rows,
        and at most ``max_cells`` of them are kept."""
        # the value holds the frame, so id(frame) is not reused while the entry lives
        return self._per_frame.get((key, id(frame)), compute)

    def all_frame(self) -> pd.DataFrame:
        """Every candidate (cell columns only), prepared; used by the threshold check."""

        def load() -> pd.DataFrame:
            return prepare_frame(self.store.candidate_frame(columns=CELL_COLUMNS, categorical=True))

        return self._cells.get(("all", self.version()), load)
