"""The answers every visitor of a cell asks first, computed once per cell version and
stored for every replica (:mod:`service.shared_answers`): at start for the cells the
warm-up loads, and right after an upload for the cells it changed.

:func:`precompute_cell` is that list of answers: the API's and the Best page's Best
tables (both groupings, with the cell's noise model they read) and the Pareto table of
the cell and of each world size x phase, and the predictions' validation of the cell
(``service.predictions``). :class:`Precomputer` runs it on a single
background thread per read path, a cell queued once however many uploads arrive while
it waits, stepping aside while a visitor is being answered (``service.foreground``).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from functools import partial
from typing import TypeVar

from analysis import columns as C
from service import foreground
from service import shared_answers as shared
from service.best import Grouping, best_table, cell_best
from service.errors import ServiceError
from service.frames import Cell, DashData
from service.pareto import pareto_table
from service.predictions import warm_validations
from service.scope import Scope

_log = logging.getLogger(__name__)
T = TypeVar("T")
PHASES = ("decode", "prefill")
BEST_GROUPINGS: tuple[Grouping, ...] = ("dashboard", "bench_moe")


def cell_scope(cell: Cell, **extra: object) -> Scope:
    """The API scope of one whole cell (plus ``extra`` filters)."""
    return Scope(model=cell.model, hardware=cell.hardware, quant=cell.quant, **extra)


def precompute_cell(data: DashData, cell: Cell) -> float:
    """Compute (or read) and share the cell's first answers; returns the seconds spent.
    Errors of one answer are logged; the others go on."""
    t0 = time.perf_counter()
    with shared.writing():
        scope = cell_scope(cell)
        for grouping in BEST_GROUPINGS:
            _safe(partial(best_table, data, scope, grouping))
            _safe(partial(cell_best, data, cell, grouping))
        _safe(partial(pareto_table, data, scope))
        for ws in _safe(partial(_world_sizes, data, cell)) or []:
            for phase in PHASES:
                _safe(partial(pareto_table, data, cell_scope(cell, world_size=ws, phase=phase)))
        if data.warm_predictions:  # the Predictions page's, last
            _safe(partial(warm_validations, data, [cell]))
    return time.perf_counter() - t0


def _world_sizes(data: DashData, cell: Cell) -> list[int]:
    """The cell's world sizes, from the runs table (not the cell's rows: a replica
    that finds every answer shared never reads them)."""
    runs = data.store.cells.matching_runs(
        {C.MODEL: cell.model, C.HARDWARE: cell.hardware, C.QUANT: cell.quant}
    )
    return sorted(int(w) for w in runs[C.WORLD_SIZE].dropna().unique())


def _safe(call: Callable[[], T]) -> T | None:
    try:
        return call()
    except ServiceError:
        return None  # an answer this cell has no data for (e.g. no prefill rows)
    except Exception:  # noqa: BLE001 - precomputing is best effort
        _log.exception("precomputing a shared answer failed")
        return None


class Precomputer:
    """One background thread computing :func:`precompute_cell` for queued cells."""

    def __init__(self, data: DashData) -> None:
        self.data = data
        self._pending: list[Cell] = []
        self._runs: set[int] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.done: list[tuple[str, float]] = []  # (cell key, seconds), newest last

    def submit(self, cells: Iterable[Cell]) -> None:
        """Queue ``cells`` (each once) and make sure the worker runs."""
        with self._cond:
            for cell in cells:
                if cell not in self._pending:
                    self._pending.append(cell)
            if not self._running:
                self._running = True
                self._thread = threading.Thread(
                    target=self._run, name="moedash-precompute", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def submit_runs(self, run_ids: Iterable[int]) -> None:
        """Queue the cells the runs ``run_ids`` belong to (looked up by the worker)."""
        with self._cond:
            self._runs.update(int(r) for r in run_ids)
        self.submit(())

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the queue is empty and the worker idle (tests, benchmarks)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._running:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    _busy = False
    _running = False

    def _run(self) -> None:
        try:
            self._work()
        finally:  # also when it died: the next submit starts a new worker
            with self._cond:
                self._busy = self._running = False
                self._cond.notify_all()

    def _work(self) -> None:
        with foreground.background():
            while True:
                self._resolve_runs()
                with self._cond:
                    if not self._pending and not self._runs:
                        return
                    if not self._pending:
                        continue  # runs queued meanwhile: resolve them first
                    cell = self._pending.pop(0)
                    self._busy = True
                foreground.step_aside()
                self.data.invalidate()  # the upload that queued it is committed: see it
                seconds = precompute_cell(self.data, cell)
                with self._cond:
                    self.done.append((cell.key, seconds))
                    del self.done[:-64]

    def _resolve_runs(self) -> None:
        with self._cond:
            runs, self._runs = self._runs, set()
        for run_id in sorted(runs):
            try:
                run = self.data.store.get_run(run_id)
            except Exception:  # noqa: BLE001 - deleted meanwhile, or the store is down
                continue
            cell = Cell(str(run[C.MODEL]), str(run[C.HARDWARE]), str(run[C.QUANT]))
            with self._cond:
                if cell not in self._pending:
                    self._pending.append(cell)


_LOCK = threading.Lock()
_BY_DATA: weakref.WeakKeyDictionary[DashData, Precomputer] = weakref.WeakKeyDictionary()


def precomputer(data: DashData) -> Precomputer:
    """The read path's one :class:`Precomputer`."""
    with _LOCK:
        found = _BY_DATA.get(data)
        if found is None:
            found = _BY_DATA[data] = Precomputer(data)
        return found


def precompute_runs(data: DashData, run_ids: Iterable[int]) -> None:
    """Queue the cells of ``run_ids`` (just stored) for :func:`precompute_cell` on the
    read path's background thread; returns at once."""
    precomputer(data).submit_runs(run_ids)
