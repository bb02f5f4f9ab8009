"""One cell's configuration frame under its default routing pattern, built while the
cell is read in pieces, without holding the cell's rows.

``configuration_frame(frame, rows=answer_rows(frame))`` (``analysis.identity``,
``analysis.predict_shape``) is what the shape model reads of every cell of a slice. A
1M-row cell's prepared frame is ~300 MB; the rows that answer needs are those of each
workload x configuration's latest TensorRT-LLM version under the default pattern, a few
percent of them when a year of versions is stored. :func:`read_configurations` reads the
cell in pieces of whole runs (``StatsRepository.cell_pieces``) and keeps of each piece
only the rankable rows that can still belong to their configuration's latest version:

* the cell's runs are known before the first piece (their run order and version), so
  each version's latest run is known: a row of version V for key k (workload x
  configuration) is dropped as soon as a rankable row of k was seen in a run later than
  V's latest run -- V can no longer be k's latest version. The rows of k's true latest
  version are never dropped (their version's latest run is at least k's latest run), so
  ``configuration_frame`` over the kept rows makes the same choice as over the cell;
* rows are kept per routing pattern until the end, where the cell's default pattern
  (``identity.default_dispatch`` over every row's label, as ``answer_rows`` chooses it)
  picks one pattern's rows;
* ``n_versions`` counts every version that measured a configuration, the dropped ones
  too: the (key, version) pairs seen are kept as 64-bit hashes and the count is written
  over the one ``configuration_frame`` computed from the kept rows.

The result equals the whole read's answer row for row, in the same order and values
(categorical columns' categories may be fewer: only those of the kept rows). Keys are
compared by a 64-bit hash of their text (``pandas.util.hash_pandas_object``) while
reading; a collision could only drop rows of a version it should keep, at odds of about
n^2 / 2^64 for n keys (~10^-8 at a million).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.frontier import RANKABLE
from analysis.identity import (
    CONFIG_COLUMNS,
    N_VERSIONS,
    WORKLOAD_COLUMNS,
    configuration_frame,
    default_dispatch,
    present,
    run_order,
)
from analysis.predict_shape import answer_rows
from db.store import Store
from service import allocator
from service.cell_frames import CELL_COLUMNS, join_pieces, prepare_frame, read_cell

# Candidates per piece: half the cell read's (``db.stats.PIECE_ROWS``). A 1M-row cell
# on PostgreSQL: +141 MiB over the process at 65,536 (7.7 s), +217 MiB at 131,072
# (6.0 s), +133 MiB at 32,768 (10.7 s) -- bench/slice_memory.py's store, stop 35.
CONFIG_PIECE_ROWS = 65_536
_NO_LABEL = "\x00no pattern"  # the bucket of rows without a routing pattern


def _column_hash(col: pd.Series) -> np.ndarray:
    """64-bit hash per value of one key column, the same for a value whatever the
    piece's dtype of the column: text (categorical) by its text, numbers and flags by
    their float value (a piece's ``int64`` and another's ``Int64`` agree), missing as
    missing."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = pd.util.hash_array(col.cat.categories.astype(str).to_numpy(object))
        missing = pd.util.hash_array(np.array([np.nan]))
        out: np.ndarray = np.append(cats, missing)[col.cat.codes.to_numpy()]  # -1: missing
        return out
    if col.dtype == object or isinstance(col.dtype, pd.StringDtype):
        values = col.astype(str).to_numpy(object)
    else:
        values = col.astype("Float64").to_numpy(np.float64, na_value=np.nan)
    hashed: np.ndarray = np.asarray(pd.util.hash_array(values), np.uint64)
    return hashed


def key_hashes(frame: pd.DataFrame) -> np.ndarray:
    """64-bit hash per row of its workload x configuration (the columns present, each
    by :func:`_column_hash`, combined in order)."""
    out = np.zeros(len(frame), np.uint64)
    with np.errstate(over="ignore"):
        for c in present(frame, (*WORKLOAD_COLUMNS, *CONFIG_COLUMNS)):
            out = (out * np.uint64(1_000_003)) ^ _column_hash(frame[c])
    return out


@dataclass
class _Bucket:
    """The kept rows of one routing pattern and what the pruning knows of its keys."""

    frames: list[pd.DataFrame] = field(default_factory=list)
    keys: list[np.ndarray] = field(default_factory=list)  # per frame: its rows' key hashes
    reach: list[np.ndarray] = field(default_factory=list)  # per frame: version's last run
    latest: pd.Series = field(default_factory=lambda: pd.Series(dtype=np.int64))
    pairs: list[pd.DataFrame] = field(default_factory=list)  # (key, version) seen

    def add(
        self,
        rows: pd.DataFrame,
        keys: np.ndarray,
        rank: np.ndarray,
        reach: np.ndarray,
        version: np.ndarray,
    ) -> None:
        seen = pd.Series(rank, index=keys).groupby(level=0).max()
        self.latest = pd.concat([self.latest, seen]).groupby(level=0).max()
        self.pairs.append(pd.DataFrame({"k": keys, "v": version}).drop_duplicates())
        self.frames.append(rows)
        self.keys.append(keys)
        self.reach.append(reach)
        for i, (frame, k, r) in enumerate(zip(self.frames, self.keys, self.reach, strict=True)):
            keep = r >= self.latest.reindex(k).to_numpy(np.int64)
            if not keep.all():
                self.frames[i] = frame[keep].reset_index(drop=True)
                self.keys[i], self.reach[i] = k[keep], r[keep]

    def n_versions(self, keys: np.ndarray) -> np.ndarray:
        """Versions seen per key hash in ``keys``."""
        pairs = pd.concat(self.pairs, ignore_index=True).drop_duplicates()
        per_key = pairs["k"].value_counts()
        out: np.ndarray = per_key.reindex(keys).fillna(0).to_numpy(np.int64)
        return out


class _Reducer:
    """Consumes a cell's prepared pieces (see the module docstring)."""

    def __init__(self) -> None:
        self.rank: dict[int, int] = {}  # run id -> run order in the cell
        self.reach: dict[int, int] = {}  # run id -> order of its version's latest run
        self.version: dict[int, int] = {}  # run id -> code of its version
        self.labels: Counter[str] = Counter()
        self.buckets: dict[str, _Bucket] = {}
        self.template: pd.DataFrame | None = None

    def runs(self, runs: pd.DataFrame) -> None:
        ids = runs[C.RUN_ID].to_numpy(np.int64)
        order = run_order(runs)
        version = (
            pd.factorize(runs[C.TRTLLM_VERSION].astype(object), use_na_sentinel=False)[0]
            if C.TRTLLM_VERSION in runs
            else np.zeros(len(runs), np.int64)
        )
        last = pd.Series(order).groupby(version).transform("max").to_numpy(np.int64)
        self.rank = dict(zip(ids.tolist(), order.tolist(), strict=True))
        self.reach = dict(zip(ids.tolist(), last.tolist(), strict=True))
        self.version = dict(zip(ids.tolist(), np.asarray(version).tolist(), strict=True))

    def piece(self, raw: pd.DataFrame) -> None:
        piece = prepare_frame(raw)
        del raw
        if self.template is None:
            self.template = piece.iloc[:0]
        if C.DISPATCH in piece:
            self.labels.update(piece[C.DISPATCH].dropna().astype(str).value_counts().to_dict())
        rows = piece[piece[RANKABLE].to_numpy(bool)].reset_index(drop=True)
        del piece
        allocator.release()
        if rows.empty:
            return
        label = (
            rows[C.DISPATCH].astype(object).where(rows[C.DISPATCH].notna(), _NO_LABEL)
            if C.DISPATCH in rows
            else pd.Series(_NO_LABEL, index=rows.index)
        ).astype(str)
        run = rows[C.RUN_ID].to_numpy(np.int64)
        rank = np.array([self.rank[r] for r in run.tolist()], np.int64)
        reach = np.array([self.reach[r] for r in run.tolist()], np.int64)
        version = np.array([self.version[r] for r in run.tolist()], np.int64)
        keys = key_hashes(rows)
        for name in pd.unique(label.to_numpy()):
            mine = (label == name).to_numpy()
            self.buckets.setdefault(str(name), _Bucket()).add(
                rows[mine].reset_index(drop=True),
                keys[mine],
                rank[mine],
                reach[mine],
                version[mine],
            )

    def result(self) -> pd.DataFrame | None:
        """The configuration frame, or None when the kept pieces do not join (their
        columns' types differ beyond what one read unites)."""
        chosen = default_dispatch(pd.Series(list(self.labels.elements()), dtype=object))
        bucket = self.buckets.get(chosen if chosen is not None else _NO_LABEL)
        if bucket is None or not any(len(f) for f in bucket.frames):
            assert self.template is not None
            return configuration_frame(self.template)
        frames: list[pd.DataFrame] = list(bucket.frames)
        joined = join_pieces(frames)
        if joined is None:
            return None
        out = configuration_frame(joined)
        out[N_VERSIONS] = bucket.n_versions(key_hashes(out))
        return out


def read_configurations(
    store: Store,
    model: str,
    hardware: str,
    quant: str,
    columns: Sequence[str] = CELL_COLUMNS,
    piece_rows: int = CONFIG_PIECE_ROWS,
) -> pd.DataFrame:
    """``configuration_frame(frame, rows=answer_rows(frame))`` of the cell's prepared
    frame (``service.cell_frames.read_cell``), read in pieces (module docstring)."""
    reducer = _Reducer()
    store.stats.cell_pieces(
        model,
        hardware,
        quant,
        reducer.piece,
        columns=columns,
        categorical=True,
        piece_rows=piece_rows,
        on_runs=reducer.runs,
    )
    out = reducer.result() if reducer.template is not None else None
    if out is not None:
        return out
    # a cell without runs, or kept pieces that do not join: the whole read
    frame = read_cell(store, model, hardware, quant)
    return configuration_frame(frame, rows=answer_rows(frame))
