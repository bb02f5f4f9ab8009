"""Measurements and per-configuration statistics: what the answers read, keyed by cell.

``measurements`` (revision 0007) holds one row per run x configuration x workload:
the run's cell (model, hardware, quant), world size and TensorRT-LLM version, and the
candidate's configuration, workload, status, score and iteration spread
(:data:`db.schema.MEASUREMENT_COLUMNS`). An index led by the cell lets one cell be read
without touching the others' rows (PostgreSQL: an index range; the candidates table
has no cell on its rows).

Contract
- ``record_runs`` copies the rows of the given runs from ``candidates`` (idempotent:
  runs already recorded are skipped; concurrent writers of the same run are fine). The
  store calls it right after an upload commits; ``ensure_cell`` catches a cell up
  (runs recorded by nothing yet: an upload interrupted between its commit and this
  copy), so a read never misses a stored run.
- ``cell_frame`` returns the same rows, values and dtypes as
  ``CandidateReader.candidate_frame`` with the cell's filters and these columns.
- ``cell_pieces`` reads the same rows in pieces of whole runs, one after another in one
  transaction, handing each to the caller before the next is read (a piece's dtypes are
  those of its own rows; ``service.cell_frames.join_pieces`` unites them).
- ``config_stats`` aggregates in the database, one SQLAlchemy statement for DuckDB and
  PostgreSQL (the median through :func:`db.dialects.median`).
- Every database failure raises :class:`StoreError` (see :mod:`db.session`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import sqlalchemy as sa

from analysis import columns as C
from db import dialects, schema, summaries
from db.candidates import TEXT_COLUMNS, join_runs
from db.errors import UniqueViolation
from db.session import Database

T = TypeVar("T")
# Stored candidates per piece of a pieced cell read (StatsRepository.cell_pieces): an
# eighth of a 1M-row cell, whose raw buffers are a few tens of MB.
PIECE_ROWS = 131_072

# What a configuration x workload is (analysis.identity's CONFIG and WORKLOAD columns
# within one cell; the phase is the CUDA-graph flag) and the version it was measured on.
STAT_KEYS: tuple[str, ...] = (
    C.WORLD_SIZE,
    C.NUM_TOKENS,
    C.DISPATCH,
    C.ATTN,
    C.CUDA_GRAPH,
    C.BACKEND,
    C.COMM_REQUESTED,
    C.COMM,
    C.PARALLEL_MODE,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.ATTENTION_DP,
    C.LOW_PRECISION_COMBINE,
    C.NUM_CHUNKS,
    C.TRTLLM_VERSION,
)
STAT_COLUMNS: tuple[str, ...] = (
    "n_runs",
    "n_rows",
    "score_median_ms",
    "score_mean_ms",
    "score_stdev_ms",
    "score_min_ms",
    "score_max_ms",
    "run_to_run_spread",
    "iter_stdev_median_ms",
    "newest_run_id",
)


def _cell(model: str, hardware: str, quant: str) -> list[sa.ColumnElement[bool]]:
    m = schema.measurements
    return [m.c.model == model, m.c.hardware == hardware, m.c.quant == quant]


class StatsRepository:
    """The measurements table and the statistics aggregated from it."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def record_runs(self, run_ids: Sequence[int]) -> int:
        """Copy the candidates of ``run_ids`` (those not recorded yet) into
        ``measurements``; returns the number of rows written."""
        ids = sorted({int(x) for x in run_ids})
        if not ids:
            return 0
        for attempt in range(2):
            try:
                with self._db.write("record_runs") as conn:
                    return _copy_runs(conn, ids)
            except UniqueViolation:
                if attempt:  # another writer recorded them meanwhile: nothing left to do
                    return 0
        return 0

    def missing_runs(self, model: str, hardware: str, quant: str) -> list[int]:
        """Runs of the cell with candidates but no measurement row, by run id."""
        r, m = schema.runs, schema.measurements
        # the cell's keys on the measurement side too: the engine looks in one cell's
        # rows (one index range) instead of hashing every stored run id (at 100M DuckDB
        # built a 13 GB hash table for this check)
        recorded = (
            sa.select(m.c.run_id).where(m.c.run_id == r.c.run_id, *_cell(model, hardware, quant))
        ).exists()
        stmt = (
            sa.select(r.c.run_id)
            .where(
                r.c.model == model,
                r.c.hardware == hardware,
                r.c.quant == quant,
                r.c.n_candidates > 0,
                ~recorded,
            )
            .order_by(r.c.run_id)
        )
        with self._db.read("missing_runs", single=True) as conn:
            return [int(row[0]) for row in conn.execute(stmt).all()]

    def ensure_cell(self, model: str, hardware: str, quant: str) -> int:
        """Record the cell's runs that have no measurement row yet; returns the rows
        written (0 when the cell is complete: one small read, no write)."""
        missing = self.missing_runs(model, hardware, quant)
        return self.record_runs(missing) if missing else 0

    def cell_frame(
        self,
        model: str,
        hardware: str,
        quant: str,
        *,
        columns: Sequence[str] = schema.MEASUREMENT_COLUMNS,
        categorical: bool = False,
        after_run_id: int | None = None,
    ) -> pd.DataFrame:
        """The cell's measurements joined with their run's facts
        (``analysis.columns.RUN_COLUMNS``), ordered by run_id, candidate_index; the
        same frame as ``Store.candidate_frame(filters=<the cell>, columns=columns,
        categorical=...)`` (call :meth:`ensure_cell` first). ``after_run_id``: only the
        runs with a larger id (what an upload added to a frame already read)."""
        read = _CellRead(model, hardware, quant, columns, categorical, after_run_id)
        with self._db.read("cell_frame") as conn:
            runs = read.runs(conn)
            return join_runs(runs, read.measurements(conn), read.cols)

    def cell_pieces(
        self,
        model: str,
        hardware: str,
        quant: str,
        each: Callable[[pd.DataFrame], T],
        *,
        columns: Sequence[str] = schema.MEASUREMENT_COLUMNS,
        categorical: bool = False,
        after_run_id: int | None = None,
        piece_rows: int = PIECE_ROWS,
        on_runs: Callable[[pd.DataFrame], None] | None = None,
    ) -> list[T]:
        """``each`` applied to :meth:`cell_frame` (same arguments) read in pieces: runs
        of consecutive ids, about ``piece_rows`` stored candidates a piece (a run is
        never split), read one at a time in one transaction; a piece's raw buffers are
        let go before the next is read, so a caller keeping a compact result of each
        (the prepared frame) never holds the whole cell's raw read at once (a 1M-row
        cell: Arrow table, converted frame and prepared frame together, +470 MB).
        Returns ``each``'s results in run order, one per piece (an empty piece too:
        runs without a row; a cell without a run gives ``[]``).

        Concatenated, the pieces hold the rows and values of :meth:`cell_frame`, in its
        order. Their dtypes are those of a read of each piece's rows, with the run
        facts taken from every run of the cell: a categorical run fact has the whole
        read's categories in every piece, a candidate column's categories are the
        piece's own, and an integer or boolean column is nullable (``Int64`` /
        ``boolean``) only in the pieces where a value is missing (the whole read: when
        any is). :func:`service.cell_frames.join_pieces` unites them into the whole
        read's dtypes. ``on_runs``: called with the cell's runs (``RUN_COLUMNS``, by run
        id) before the first piece is read (what a caller reducing the pieces as they come
        needs to know of the runs still to come)."""
        read = _CellRead(model, hardware, quant, columns, categorical, after_run_id)
        out: list[T] = []
        with self._db.read("cell_frame") as conn:
            runs = read.runs(conn, with_counts=True)
            ids = runs[C.RUN_ID].to_numpy(np.int64)
            counts = runs.pop(_COUNT).fillna(0).to_numpy(np.int64)
            if on_runs is not None:
                on_runs(runs)
            for first, last in _pieces(ids, counts, piece_rows):
                # handed over, not kept: ``each`` holds the piece's only reference (and
                # through it the read's buffers), so it can let them go before it returns
                out.append(each(join_runs(runs, read.measurements(conn, first, last), read.cols)))
        return out

    def cell_coverage(self, model: str, hardware: str, quant: str) -> pd.DataFrame:
        """``CandidateReader.coverage`` restricted to one cell (the same columns, values
        and order), read from the cell's measurements: what a per-cell cache combines
        into the whole table without scanning every candidate after each upload. Read
        from the runs' summaries (``db.summaries``): a few dozen rows per run."""
        with self._db.read("cell_coverage") as conn:
            return summaries.cell_coverage(conn, model, hardware, quant)

    def config_stats(self, model: str, hardware: str, quant: str) -> pd.DataFrame:
        """Per configuration x workload x TensorRT-LLM version of one cell, over its
        successful measurements with a score (:data:`STAT_KEYS`, then
        :data:`STAT_COLUMNS`): ``n_runs`` distinct runs, ``n_rows`` rows, the median
        (mean of the two middle values for an even count), mean, sample standard
        deviation (NULL for one row), min and max of ``score_ms`` (ms);
        ``run_to_run_spread`` = stdev / median (NULL with fewer than two runs);
        ``iter_stdev_median_ms`` the median within-run iteration stdev; the newest run
        id. NULL keys form their own group. Ordered by the keys (NULLs last)."""
        m = schema.measurements
        keys = [m.c[k] for k in STAT_KEYS]
        score = m.c.score_ms
        median = dialects.median(score)
        stdev = sa.func.stddev_samp(score)
        n_runs = sa.func.count(sa.distinct(m.c.run_id))
        spread = sa.case(
            (sa.and_(n_runs > 1, median > 0), stdev / median),
            else_=sa.null(),
        )
        stmt = (
            sa.select(
                *keys,
                n_runs.label("n_runs"),
                sa.func.count().label("n_rows"),
                median.label("score_median_ms"),
                sa.func.avg(score).label("score_mean_ms"),
                stdev.label("score_stdev_ms"),
                sa.func.min(score).label("score_min_ms"),
                sa.func.max(score).label("score_max_ms"),
                spread.label("run_to_run_spread"),
                dialects.median(m.c.iter_stdev_ms).label("iter_stdev_median_ms"),
                sa.func.max(m.c.run_id).label("newest_run_id"),
            )
            .where(*_cell(model, hardware, quant), m.c.status == "success", score.is_not(None))
            .group_by(*keys)
            .order_by(*(k.asc().nulls_last() for k in keys))
        )
        with self._db.read("config_stats", single=True) as conn:
            rows = conn.execute(stmt).all()
        frame = pd.DataFrame([tuple(row) for row in rows], columns=[*STAT_KEYS, *STAT_COLUMNS])
        for col in STAT_COLUMNS:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(
                "int64" if col in ("n_runs", "n_rows", "newest_run_id") else "float64"
            )
        return frame


def _copy_runs(conn: sa.Connection, run_ids: list[int]) -> int:
    """INSERT ... SELECT of the runs' candidates not yet in ``measurements``."""
    r, c, m = schema.runs, schema.candidates, schema.measurements
    runs = conn.execute(
        sa.select(r.c.run_id, r.c.model, r.c.hardware, r.c.quant).where(r.c.run_id.in_(run_ids))
    ).all()
    # each run looked up in its own cell's rows (literal cell keys: one index range, or
    # the row groups of one cell), not an anti-join over every stored run id: at 100M
    # DuckDB's hash of them failed to allocate within its 128MB pool
    todo = [
        int(run_id)
        for run_id, model, hardware, quant in runs
        if conn.execute(
            sa.select(
                sa.select(m.c.run_id)
                .where(m.c.run_id == run_id, *_cell(model, hardware, quant))
                .exists()
            )
        ).scalar()
        is not True
    ]
    if not todo:
        return 0
    run_cols = [r.c[k] for k in schema.MEASUREMENT_RUN_KEYS]
    cand_cols = [c.c[k] for k in schema.MEASUREMENT_COLUMNS]
    source = (
        sa.select(c.c.run_id, *run_cols, *cand_cols)
        .join(r, r.c.run_id == c.c.run_id)
        .where(c.c.run_id.in_(todo))
    )
    names: list[Any] = [C.RUN_ID, *schema.MEASUREMENT_RUN_KEYS, *schema.MEASUREMENT_COLUMNS]
    conn.execute(m.insert().from_select(names, source))
    summaries.summarize(conn, todo)  # in this transaction: summaries exactly when rows
    # (rowcount of INSERT ... SELECT is not reported by every driver: count them)
    written = conn.execute(
        sa.select(sa.func.count()).select_from(m).where(m.c.run_id.in_(todo))
    ).scalar()
    return int(written or 0)


_COUNT = "n_candidates"


class _CellRead:
    """The two statements of one cell read (its runs, its measurements): the one SQL of
    :meth:`StatsRepository.cell_frame` and :meth:`StatsRepository.cell_pieces`."""

    def __init__(
        self,
        model: str,
        hardware: str,
        quant: str,
        columns: Sequence[str],
        categorical: bool,
        after_run_id: int | None,
    ) -> None:
        self.cols = list(columns)
        unknown = [x for x in self.cols if x not in schema.MEASUREMENT_COLUMNS]
        if unknown:
            raise ValueError(f"columns: not measurement column(s) {unknown}")
        self.params: list[Any] = [model, hardware, quant]
        self.after = ""
        if after_run_id is not None:
            self.params.append(int(after_run_id))
            self.after = " AND run_id > ?"
        self.categorical = categorical

    def runs(self, conn: sa.Connection, *, with_counts: bool = False) -> pd.DataFrame:
        """The cell's runs (``RUN_COLUMNS``; ``with_counts``: and ``n_candidates``), by
        run id."""
        names = [*C.RUN_COLUMNS, *((_COUNT,) if with_counts else ())]
        sql = (
            f"SELECT {_names(names)} FROM runs WHERE model = ? AND hardware = ? "
            f"AND quant = ?{self.after} ORDER BY run_id"
        )
        text = [x for x in C.RUN_COLUMNS if x in TEXT_COLUMNS] if self.categorical else ()
        return dialects.read_frame(conn, sql, self.params, categorical=text)

    def measurements(
        self, conn: sa.Connection, first: int | None = None, last: int | None = None
    ) -> pd.DataFrame:
        """The cell's measurement rows (``run_id`` and the columns), by run id and
        candidate index; only runs ``first``..``last`` when given."""
        params, between = list(self.params), ""
        if first is not None and last is not None:
            params += [int(first), int(last)]
            between = " AND run_id BETWEEN ? AND ?"
        sql = (
            f"SELECT run_id, {_names(self.cols)} FROM measurements WHERE model = ? AND "
            f"hardware = ? AND quant = ?{self.after}{between} "
            "ORDER BY model, hardware, quant, run_id, candidate_index"
        )
        text = [x for x in self.cols if x in TEXT_COLUMNS] if self.categorical else ()
        return dialects.read_frame(conn, sql, params, categorical=text)


def _names(columns: Sequence[str]) -> str:
    return ", ".join(f'"{x}"' for x in columns)


def _pieces(ids: np.ndarray, counts: np.ndarray, piece_rows: int) -> list[tuple[int, int]]:
    """(first, last) run ids of consecutive runs holding about ``piece_rows`` candidates
    each (at least one run a piece; the last piece takes the remainder)."""
    out: list[tuple[int, int]] = []
    start, held = 0, 0
    for i, n in enumerate(counts.tolist()):
        held += n
        if held >= piece_rows:
            out.append((int(ids[start]), int(ids[i])))
            start, held = i + 1, 0
    if start < len(ids):
        out.append((int(ids[start]), int(ids[-1])))
    return out
