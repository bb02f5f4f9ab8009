"""Warm the caches the first page visits read, so the first visitor does not wait."""

from __future__ import annotations

import logging
import threading
import time

from analysis.best import GROUPINGS
from analysis.frontier import FrontierAxes, FrontierFilter
from service import foreground
from service import shared_answers as shared
from service.best import cell_best_table
from service.errors import ServiceError
from service.frames import Cell, DashData
from service.pareto import cell_pareto
from service.predictions import warm_validations
from service.thresholds import threshold_report

_log = logging.getLogger(__name__)


def warm_cache(data: DashData, limit: int | None = None) -> list[tuple[str, float]]:
    """Load what the first visits need, cell by cell in ``data.cells()`` order (the
    overview's order; the first is every page's default): the cell frame, its Pareto
    index and the default Pareto view, then the best-by-workload tables of every
    grouping (read from the database's shared answers when another replica stored
    them, else computed and stored). At most ``limit`` cells (default
    ``data.max_cells``) and no more stored candidates than the cell cache keeps
    (``data.max_bytes``, at ``data.row_bytes`` a stored candidate; the first cell
    always): more would evict each other. Returns
    [(cell key, seconds)]. Errors are logged, never raised (pages load on demand)."""
    done: list[tuple[str, float]] = []
    try:
        cells = data.cells()
    except Exception:  # noqa: BLE001 - warming is best effort
        _log.exception("cache warm-up: listing cells failed")
        return done
    # no more than the cell cache holds (bytes and count): more would evict each other
    sizes = data.cell_sizes()
    budget, picked = data.max_bytes, list[Cell]()
    for cell in cells[: limit if limit is not None else data.max_cells]:
        budget -= sizes.get(cell, 0) * data.row_bytes
        if picked and budget < 0:
            break
        picked.append(cell)
    for cell in picked:
        foreground.step_aside()  # between cells, never inside one (a visitor may wait on it)
        t0 = time.perf_counter()
        try:
            cell_pareto(data, cell, FrontierFilter(), FrontierAxes())
            # read from the database's shared answers when a replica stored them, else
            # computed here and stored for the others
            with shared.writing():
                for grouping in GROUPINGS:
                    cell_best_table(data, cell, grouping)
        except Exception:  # noqa: BLE001
            _log.exception("cache warm-up of %s failed", cell.key)
            continue
        done.append((cell.key, time.perf_counter() - t0))
    return done


def warm_all(data: DashData) -> None:
    """The cells (:func:`warm_cache`), then the whole-store threshold report (bootstraps:
    seconds), as background work: each unit waits while a visitor is being answered
    (``service.foreground``)."""
    with foreground.background():
        t0 = time.perf_counter()
        done = warm_cache(data)
        _log.info("cache warm-up: %d cells in %.1f s", len(done), time.perf_counter() - t0)
        try:
            foreground.step_aside()
            threshold_report(data)
        except ServiceError as err:  # a store too big for one whole-store answer
            _log.info("cache warm-up: no whole-store threshold report (%s)", err.msg)
        except Exception:  # noqa: BLE001 - warming is best effort
            _log.exception("cache warm-up of the threshold report failed")
        try:  # last: the Predictions page's validation of the default cell, shared
            # (10-30 s of refits per cell: only the cell every page opens on; the others
            # are computed after their uploads, service.precompute, or on a first visit)
            first = [c for c in data.cells() if done and c.key == done[0][0]]
            if data.warm_predictions:
                warm_validations(data, first)
        except Exception:  # noqa: BLE001 - warming is best effort
            _log.exception("cache warm-up of the predictions validation failed")


def start_warm_cache(data: DashData) -> threading.Thread:
    """:func:`warm_all` in a daemon thread: serving starts at once, and a request for
    a cell being warmed waits for that load instead of repeating it."""
    thread = threading.Thread(target=warm_all, args=(data,), name="moedash-warm-cache", daemon=True)
    thread.start()
    return thread
