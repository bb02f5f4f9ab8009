"""Cached data access for both front ends (the API's analysis routes and the pages).

The store is the truth; this module keeps what the pages read often in memory:

* one candidate frame per (model, hardware, quant) "cell", with the derived columns
  (``analysis.derived.add_derived``) and text columns as categoricals (less memory,
  fast equality filters) -- read from the cell-keyed measurements table in pieces of
  whole runs, each prepared as it comes (``Store.stats.cell_pieces``, one index range
  each; :mod:`service.cell_frames`); after an upload to the cell, the cached frame is
  appended to;
* the frame of a question without a whole cell (:meth:`DashData.bounded_frame`): only
  the runs its run-level filters select, refused (422) above ``max_slice_rows``;
* structures built from one cell frame (``frame_cached``: the Pareto page's index),
  tied to that frame object;
* the coverage table (counted per cell) and recent runs;
* analysis results, cached whole, keyed on the cells they read.

Frames, answers and per-frame structures are bounded by the bytes they hold
(``max_bytes`` for frames, ``max_result_bytes`` for answers and for per-frame
structures; ``DataFrame.memory_usage(deep=True)``), not only by their number: memory
stays flat as the store grows. A per-frame structure is weighed without the frame it
belongs to (the frame cache counts that), and goes when its frame leaves the frame cache.

Every cache entry is keyed on the *version* of the cells it was computed from: a cell's
version is (number of runs in the cell, newest run id in the cell), read from the runs
table (``Store.cells.cell_versions``: one small grouped query, never a candidate). An
upload or a delete changes the version of its own cell only, so new data shows up
without a restart and the other cells' frames and answers stay warm. Answers that read
every cell (the whole-store threshold check) are keyed on all of them. The versions are
re-read at most once per ``version_ttl`` seconds (1 s by default), which bounds both the
staleness and the cost of asking.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
import pandas as pd

from analysis import columns as C
from db.errors import StoreError
from db.store import Store
from service import allocator
from service import shared_answers as shared
from service.cell_frames import CELL_COLUMNS as CELL_COLUMNS
from service.cell_frames import append_rows, appendable, read_cell
from service.cell_frames import prepare_frame as prepare_frame
from service.errors import too_broad
from service.lru import LRU, bytes_held

T = TypeVar("T")
_log = logging.getLogger(__name__)
Version = tuple[int, int]

# Bytes of cell and slice frames one process keeps: one prepared 1M-row cell (~175
# MiB) and some smaller ones.
MAX_CACHED_BYTES = 288 * 2**20
# Bytes of answers, and of per-frame structures (indexes; their frame not counted).
MAX_RESULT_BYTES = 96 * 2**20
# A prepared row's bytes, before a frame was measured (the warm-up's and the
# reservations' estimate from the stored candidate counts).
ROW_BYTES = 184
# Candidates a question without a whole cell may read at once (else 422 with a hint).
MAX_SLICE_ROWS = 500_000
SHARE_WAIT_S = 600.0  # DashData.share_wait_s
# Run columns a bounded read filters in SQL (the rest are candidate-level).
RUN_FILTER_COLUMNS = frozenset(
    {C.MODEL, C.HARDWARE, C.QUANT, C.WORLD_SIZE, C.SYNTHETIC, C.TRTLLM_VERSION}
)


@dataclass(frozen=True)
class CellVersion:
    """What the runs table says of one cell: its number of runs, newest run id, stored
    candidates and whether any run is generated demo data."""

    runs: int
    newest_run_id: int
    candidates: int
    synthetic: bool = False


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


class DashData:
    """The read path over one :class:`Store` (see module docstring): the service object
    the API routes and the dashboard pages both read through. Cell frames carry the
    ``_rankable`` flag (:data:`analysis.frontier.RANKABLE`)."""

    def __init__(
        self,
        store: Store,
        *,
        max_cells: int = 6,
        version_ttl: float = 1.0,
        max_bytes: int = MAX_CACHED_BYTES,
        max_result_bytes: int = MAX_RESULT_BYTES,
        max_slice_rows: int = MAX_SLICE_ROWS,
    ) -> None:
        self.store = store
        self.max_cells = max_cells
        self.version_ttl = version_ttl
        self.max_slice_rows = max_slice_rows
        self.max_bytes = max_bytes
        self.max_result_bytes = max_result_bytes
        self.row_bytes = ROW_BYTES  # measured on each frame cached (the latest)
        # warm-up and post-upload recomputation include the predictions validation
        # (settings.warm_predictions, set by moedash.app)
        self.warm_predictions = True
        # how long a shared answer waits for another replica computing it (the slowest,
        # a slice's leave-one-model-out validation, takes minutes at ~17 models)
        self.share_wait_s = SHARE_WAIT_S
        self._cell_versions: dict[Cell, CellVersion] = {}
        self._version_at = -np.inf
        self._version_lock = threading.Lock()
        # a frame leaving the cache takes its per-frame structures along (they hold it)
        self._cells = LRU(max_cells, max_weight=max_bytes, on_evict=self._frame_evicted)
        # answers and per-frame structures may hold frames of their own (configuration
        # frames, History pages, indexes): bounded by the bytes they hold as well
        self._results = LRU(64, max_weight=max_result_bytes)
        self._per_frame = LRU(max_cells, max_weight=max_result_bytes)
        self._small = LRU(16)
        self._coverage = LRU(4096)  # a few rows per cell

    # ------------------------------------------------------------ version
    def _versions(self) -> dict[Cell, CellVersion]:
        """Every stored cell's version, re-read at most every ``version_ttl`` s."""
        now = time.monotonic()
        with self._version_lock:
            if now - self._version_at < self.version_ttl:
                return self._cell_versions
        table = self.store.cells.cell_versions()
        versions = {
            Cell(str(m), str(h), str(q)): CellVersion(int(n), int(newest), int(rows), bool(syn))
            for m, h, q, n, newest, rows, syn in table.itertuples(index=False)
        }
        with self._version_lock:
            self._cell_versions, self._version_at = versions, time.monotonic()
            return versions

    def version(self) -> Version:
        """(runs, newest run id) of the whole store: what answers over every cell are
        keyed on."""
        versions = self._versions().values()
        return (
            sum(v.runs for v in versions),
            max((v.newest_run_id for v in versions), default=0),
        )

    def cell_version(self, cell: Cell) -> Version:
        """(runs, newest run id) of one cell; (0, 0) for a cell with no run."""
        v = self._versions().get(cell)
        return (0, 0) if v is None else (v.runs, v.newest_run_id)

    def cell_sizes(self) -> dict[Cell, int]:
        """Stored candidates per cell (from the runs table's counts)."""
        return {cell: v.candidates for cell, v in self._versions().items()}

    def cells_matching(self, filters: Mapping[str, Any]) -> list[Cell]:
        """The stored cells whose model, hardware and quant agree with ``filters`` (a
        filter absent or None matches any; a list means any of), in the store's order
        (model, hardware, quant)."""
        out = []
        for cell in self._versions():
            ok = True
            for col in (C.MODEL, C.HARDWARE, C.QUANT):
                want = filters.get(col)
                have = getattr(cell, col)
                if want is None:
                    continue
                if isinstance(want, list | tuple | set | frozenset):
                    ok = ok and have in {str(w) for w in want}
                else:
                    ok = ok and have == str(want)
            if ok:
                out.append(cell)
        return out

    def scope_version(self, where: Cell | Mapping[str, Any] | None) -> Hashable:
        """The version an answer over ``where`` is keyed on: one cell's, the versions of
        the cells a filter mapping selects, or (None) the whole store's."""
        if where is None:
            return ("store", self.version())
        if isinstance(where, Cell):
            return ("cell", self.cell_version(where))
        cells = self.cells_matching(where)
        return ("cells", tuple((c.key, self.cell_version(c)) for c in cells))

    def invalidate(self) -> None:
        """Forget the cached versions (the next read asks the store)."""
        with self._version_lock:
            self._version_at = -np.inf

    # ------------------------------------------------------------ reads
    def coverage(self) -> pd.DataFrame:
        """``Store.coverage()`` (model, hardware, quant, world_size, synthetic, runs,
        candidates, workloads)."""
        # per cell, cached on the cell's version: an upload recounts its own cell only
        parts = [self._cell_coverage(cell) for cell in self.cells()]
        parts = [p for p in parts if len(p)]
        if not parts:
            return self._small.get(("coverage", self.version()), self.store.coverage)
        return self._small.get(
            ("coverage", self.version()),
            lambda: pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0],
        )

    def _cell_coverage(self, cell: Cell) -> pd.DataFrame:
        def load() -> pd.DataFrame:
            self.store.stats.ensure_cell(cell.model, cell.hardware, cell.quant)
            return self.store.stats.cell_coverage(cell.model, cell.hardware, cell.quant)

        return self._coverage.get((cell, self.cell_version(cell)), load)

    def is_synthetic(self, cell: Cell | None) -> bool:
        """True when any stored run of ``cell`` (None: of the whole database) is
        generated demo data, so pages can say so next to the numbers. From the runs
        table (:meth:`_versions`), not the coverage: that counts every cell's
        measurements (at 100M on PostgreSQL the warm-up spent minutes in it)."""
        versions = self._versions()
        if cell is not None:
            v = versions.get(cell)
            return v is not None and v.synthetic
        return any(v.synthetic for v in versions.values())

    def cells(self) -> list[Cell]:
        """Every (model, hardware, quant) with data, ordered by model, hardware, quant
        (from the runs table)."""
        return self.cells_matching({})

    def recent_runs(self, limit: int = 20) -> pd.DataFrame:
        """Newest runs with their upload's filename and upload time."""

        def load() -> pd.DataFrame:
            return self.store.runs.recent_runs(limit)

        return self._small.get(("recent", limit, self.version()), load)

    def cell_frame(self, cell: Cell) -> pd.DataFrame:
        """All candidates of one cell (every status) as a prepared frame."""

        def load() -> pd.DataFrame:
            # the measurements table carries the cell on its rows (one index range)
            self.store.stats.ensure_cell(cell.model, cell.hardware, cell.quant)
            appended = self._appended(cell)
            if appended is not None:
                return appended
            # read and prepared in pieces (service.cell_frames.read_cell); what the
            # pieces' reads left in the allocator is handed back once it is built
            return allocator.released(
                lambda: read_cell(self.store, cell.model, cell.hardware, cell.quant)
            )

        key = (cell, self.cell_version(cell))
        if self._cells.latest(lambda k: k == key) is None:
            # a cell not held yet: first drop what would not fit beside it, in every
            # cache that may hold another cell's frame
            size = self.cell_sizes().get(cell, 0) * self.row_bytes
            self._cells.reserve(size, keep=lambda k: isinstance(k, tuple) and k[0] == cell)
        return self._cells.get(key, load, self._frame_bytes)

    def held_cell_frame(self, cell: Cell) -> pd.DataFrame | None:
        """The cell's frame at its current version when a cache holds it, else None
        (nothing is read)."""
        key = (cell, self.cell_version(cell))
        found = self._cells.latest(lambda k: k == key)
        return None if found is None else found[1]

    def make_room(self, need: int) -> int:
        """Before a computation that is not a frame but needs ``need`` bytes of its own
        (a slice's shape fits and their validation): drop the least recently used cell
        frames until ``need`` more would fit in the frame budget, and hand what they
        held back to the system. The computation then runs within the frames' budget
        instead of on top of it (one process holding visitors' frames, the DuckDB pool
        and a slice validation passed 1 GB at 10^8 candidates). Returns the bytes
        dropped. A request still using a dropped frame keeps it until it is done."""
        before = self._cells.weight
        self._cells.reserve(need)
        dropped = before - self._cells.weight
        if dropped > 0:
            allocator.release()
        return dropped

    def _frame_bytes(self, frame: pd.DataFrame) -> int:
        """A frame's bytes (deep), and its bytes per row for the next estimates."""
        size = bytes_held(frame)
        if len(frame) >= 1000:
            self.row_bytes = max(1, size // len(frame))
        return size

    def _frame_evicted(self, _key: Hashable, frame: Any) -> None:
        self._per_frame.discard(lambda k: isinstance(k, tuple) and k[-1] == id(frame))

    def _appended(self, cell: Cell) -> pd.DataFrame | None:
        """The cell's previous cached frame with the runs uploaded since appended
        (:mod:`service.cell_frames`), or None (no such frame, or a run was deleted).
        The previous frame leaves the caches before the two are joined: joined column
        by column, its columns go as the new frame's are made, so the cell is not held
        twice (unless a request still uses the old frame)."""
        found = self._cells.latest(lambda k: isinstance(k, tuple) and k[0] == cell)
        if found is None:
            return None
        key, old = found
        del found
        old_runs, old_newest = cast(tuple[Cell, Version], key)[1]
        filters = {C.MODEL: cell.model, C.HARDWARE: cell.hardware, C.QUANT: cell.quant}
        runs = self.store.cells.matching_runs(filters)
        runs = runs[runs["n_candidates"] > 0]
        if not appendable(int(old_runs), int(old_newest), runs[C.RUN_ID]):
            return None
        new = read_cell(self.store, cell.model, cell.hardware, cell.quant, int(old_newest))
        self._cells.discard(lambda k: k == key)
        self._frame_evicted(key, old)  # its indexes hold it
        frames = [old, new]
        del old, new
        return append_rows(frames)

    def bounded_frame(
        self, filters: Mapping[str, Any], run_ids: Sequence[int] | None = None
    ) -> pd.DataFrame:
        """The prepared candidates (every status) of the runs that the run-level entries
        of ``filters`` (model, hardware, quant, world size, synthetic ...; the others are
        the caller's to apply) and ``run_ids`` select, read with those filters in SQL:
        the frame a question without a whole cell is asked on. Ordered by (run_id,
        candidate_index); cached per set of runs. When those runs hold more than
        ``max_slice_rows`` candidates, :class:`InvalidQuery` names the cell key to add
        (the API answers 422): no answer reads the whole store into memory. Filters
        that name one whole cell get that cell's frame, whatever its size (the caller
        applies the other filters and ``run_ids``)."""
        run_filters = {k: v for k, v in filters.items() if k in RUN_FILTER_COLUMNS}
        keys = [run_filters.get(k) for k in (C.MODEL, C.HARDWARE, C.QUANT)]
        if all(isinstance(k, str) for k in keys):
            # one whole cell: its cached frame (a cell is the unit every cache holds)
            cell = Cell(*(str(k) for k in keys))
            if cell in self._versions():
                return self.cell_frame(cell)
            return pd.DataFrame(columns=list(dict.fromkeys((*C.RUN_COLUMNS, *CELL_COLUMNS))))
        runs = self.store.cells.matching_runs(run_filters)
        if run_ids is not None:
            runs = runs[runs[C.RUN_ID].isin(list(run_ids))]
        total = int(runs["n_candidates"].sum())
        if total > self.max_slice_rows:
            raise too_broad(run_filters, total, runs, self.max_slice_rows)
        ids = tuple(int(x) for x in runs[C.RUN_ID])
        if not ids:
            return pd.DataFrame(columns=list(dict.fromkeys((*C.RUN_COLUMNS, *CELL_COLUMNS))))

        def load() -> pd.DataFrame:
            return allocator.released(
                lambda: prepare_frame(
                    self.store.candidate_frame(run_ids=ids, columns=CELL_COLUMNS, categorical=True)
                )
            )

        return self._cells.get(("slice", ids), load, self._frame_bytes)

    def cached(
        self,
        key: Hashable,
        compute: Callable[[], T],
        where: Cell | Mapping[str, Any] | None = None,
        *,
        share: bool = False,
    ) -> T:
        """A derived result cached under ``key`` for the current version of what it was
        computed from (:meth:`scope_version` of ``where``: one cell, the cells a filter
        mapping selects, or by default the whole store). ``share``: the result is also
        read from (and, inside :func:`service.shared_answers.writing`, written to) the
        database's shared answers for that version, so one replica computes it once per
        cell version for all (``where`` must name cells: never a whole-store answer)."""
        held: Callable[[T], int] = bytes_held
        version = self.scope_version(where)
        if share and where is not None:
            compute = self._shared(key, version, where, compute)
        return self._results.get((key, version), allocator.trimmed(compute), held)

    def _shared(
        self,
        key: Hashable,
        version: Hashable,
        where: Cell | Mapping[str, Any],
        compute: Callable[[], T],
    ) -> Callable[[], T]:
        """``compute`` behind the shared answers of :mod:`db.answers` (see
        :meth:`cached`). A failure to read or write them is logged and the answer
        computed here: sharing saves work, it never fails a request."""
        kind = str(key[0]) if isinstance(key, tuple) and key else type(key).__name__
        params, ver = shared.digest(key), repr(version)

        def read() -> tuple[bool, Any]:
            try:
                payload = self.store.answers.get(kind, params, ver)
                if payload is not None:
                    return True, shared.decode(payload)
            except (StoreError, ValueError, KeyError, TypeError):
                _log.warning("shared answer %s unreadable; computing it", kind, exc_info=True)
            return False, None

        def load() -> T:
            hit, found = read()
            if hit:
                return cast(T, found)
            with ExitStack() as flight:  # one replica computes it, the others wait and read
                try:
                    waited = flight.enter_context(
                        self.store.answers.computing(
                            kind, params, ver, self.share_wait_s, hold=shared.may_write()
                        )
                    )
                except StoreError:
                    _log.warning("shared answer %s: no single flight", kind, exc_info=True)
                    waited = False
                hit, found = read() if waited else (False, None)
                if hit:
                    return cast(T, found)
                return compute_and_store()

        def compute_and_store() -> T:
            value = compute()

            def put(payload: bytes) -> None:
                if not shared.may_write():
                    return
                self.invalidate()  # store it only if no upload changed its cells meanwhile
                if self.scope_version(where) != version:
                    return
                cells = (
                    [where.key]
                    if isinstance(where, Cell)
                    else [c.key for c in self.cells_matching(where)]
                )
                try:
                    self.store.answers.put(kind, params, ver, cells, payload)
                except StoreError:
                    _log.warning("shared answer %s not stored", kind, exc_info=True)

            return shared.round_trip(value, put)

        return load

    def frame_cached(self, key: Hashable, frame: pd.DataFrame, compute: Callable[[], T]) -> T:
        """A structure built from one cell frame (that may keep the frame alive, e.g. the
        Pareto index), cached per frame object: never paired with another frame's rows,
        and at most ``max_cells`` of them are kept. Weighed without ``frame`` (the frame
        cache counts it); dropped when the frame leaves the frame cache."""

        # the value holds the frame, so id(frame) is not reused while the entry lives
        def held(value: T) -> int:
            return bytes_held(value, shared={id(frame)})

        return self._per_frame.get((key, id(frame)), allocator.trimmed(compute), held)

    def frame_reweigh(self, key: Hashable, frame: pd.DataFrame) -> None:
        """Weigh the structure :meth:`frame_cached` holds for ``key`` and ``frame`` again
        (filled since it was stored, e.g. by background work: the Pareto index, 8 MB when
        stored, ~54 MB filled), so the per-frame bound counts what it holds now."""
        self._per_frame.reweigh((key, id(frame)), lambda v: bytes_held(v, shared={id(frame)}))
