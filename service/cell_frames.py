"""How a cell's frame is built: read in pieces and prepared piece by piece, and, after an
upload, brought up to date by appending what the upload added instead of reading the
whole cell again (the first visit to a cell right after an upload to it).

A 1M-row cell read whole held its Arrow table, the frame converted from it and the
prepared frame at once (+470 MB over the start of the read). :func:`read_cell` reads
the cell in pieces of whole runs (``Store.stats.cell_pieces``), prepares each piece as
it comes and lets its raw buffers go, then joins the prepared pieces once
(:func:`join_pieces`), column by column, letting each piece's column go as soon as it
is copied: the result is the frame a whole read and :func:`prepare_frame` give (same
rows, order, dtypes and categories).

Run ids only grow, so the runs an upload adds to a cell sort after every run a cached
frame holds: the new frame is the old one followed by the new runs' rows, in the same
(run_id, candidate_index) order a full read gives. :func:`appendable` says when that
holds (nothing was deleted meanwhile); :func:`append_rows` joins the two frames the
same way, and gives up (None) when a column's type differs between the two beyond what
a whole read would unite (e.g. text in one, numbers in the other), so the caller reads
the cell whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import is_dtype_equal

from analysis import columns as C
from analysis.derived import add_derived, rankable_mask
from analysis.frontier import RANKABLE
from db.schema import MEASUREMENT_COLUMNS
from db.stats import PIECE_ROWS
from db.store import Store
from service import allocator

# Candidate columns the dashboard's cell frames need (no JSON blobs, no long texts):
# what the measurements table keeps per row (db.schema), read from it.
CELL_COLUMNS: tuple[str, ...] = MEASUREMENT_COLUMNS
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
# numpy dtype kind -> the nullable dtype a read gives that column when a value is missing
_NULLABLE = {"i": pd.Int64Dtype(), "b": pd.BooleanDtype()}


def prepare_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Cell frame from a store candidate frame: derived columns, categoricals and the
    ``_rankable`` flag. Row order is kept (run_id, candidate_index)."""
    out = add_derived(df)
    for col in _CATEGORICAL:
        if col in out:
            out[col] = out[col].astype("category")
    out[RANKABLE] = rankable_mask(out)
    return out.reset_index(drop=True)


def read_cell(
    store: Store,
    model: str,
    hardware: str,
    quant: str,
    after_run_id: int | None = None,
    *,
    piece_rows: int = PIECE_ROWS,
) -> pd.DataFrame:
    """The prepared frame of one cell (``after_run_id``: of its runs with a larger id),
    equal to ``prepare_frame(store.stats.cell_frame(..., columns=CELL_COLUMNS,
    categorical=True))``, built in pieces of about ``piece_rows`` candidates (see the
    module docstring)."""
    pieces = store.stats.cell_pieces(
        model,
        hardware,
        quant,
        _prepared,
        columns=CELL_COLUMNS,
        categorical=True,
        after_run_id=after_run_id,
        piece_rows=piece_rows,
    )
    joined = join_pieces(pieces) if any(len(p) for p in pieces) else None
    if joined is not None:
        return joined
    # no row (an empty frame's dtypes are a whole read's), or pieces a join refused
    raw = store.stats.cell_frame(
        model, hardware, quant, columns=CELL_COLUMNS, categorical=True, after_run_id=after_run_id
    )
    return prepare_frame(raw)


def _prepared(raw: pd.DataFrame) -> pd.DataFrame:
    """One piece prepared; what its read and preparation freed handed back before the
    next piece is read (the allocators would keep it beside the growing pieces)."""
    out = prepare_frame(raw)
    del raw
    allocator.release()
    return out


def appendable(old_runs: int, old_newest: int, run_ids: pd.Series) -> bool:
    """Whether the cell whose runs are now ``run_ids`` is the cell of a frame holding
    ``old_runs`` runs (newest ``old_newest``) plus runs uploaded since: every run not
    newer than ``old_newest`` is still there (their count did not change)."""
    ids = run_ids.to_numpy()
    return bool((ids <= old_newest).sum() == old_runs and (ids > old_newest).any())


def append_rows(frames: list[pd.DataFrame]) -> pd.DataFrame | None:
    """``[old, new]`` (prepared cell frames, same columns; ``new`` the runs after
    ``old``'s) joined as :func:`join_pieces` does (the list is emptied: pass the only
    references, and the old frame's columns go as the new ones are built); None when a
    column's dtype differs beyond what a whole read unites, or the runs do not follow
    each other."""
    if len(frames) != 2 or list(frames[0].columns) != list(frames[1].columns):
        frames.clear()
        return None
    if frames[1].empty:
        return frames[0]
    joined = join_pieces(frames)
    if joined is None or not joined[C.RUN_ID].is_monotonic_increasing:  # not an append
        return None
    return joined


def join_pieces(pieces: list[pd.DataFrame]) -> pd.DataFrame | None:
    """The prepared frames ``pieces`` one after another (index reset), with the dtypes
    one read of all their rows gives: categoricals' categories united and sorted (as a
    whole read makes them), an integer or boolean column nullable (``Int64`` /
    ``boolean``) when it is in any piece. None when the pieces' columns differ or a
    column's dtypes differ otherwise.

    Built column by column, and ``pieces`` is emptied first: when the caller held the
    only references, each piece's column is let go as soon as the joined column is
    made, so the pieces and the joined frame are not held whole at once."""
    if len(pieces) > 1:  # empty pieces add no row (their dtypes say nothing)
        pieces[:] = [p for p in pieces if len(p)] or pieces[:1]
    if not pieces:
        return None
    names = list(pieces[0].columns)
    if any(list(p.columns) != names for p in pieces):
        pieces.clear()
        return None
    columns: dict[str, list[Any]] = {n: [_values(p[n]) for p in pieces] for n in names}
    pieces.clear()
    out: dict[str, Any] = {}
    for name in names:
        joined = _join_column(columns.pop(name))
        if joined is None:
            return None
        out[name] = joined
        # the pieces' copies of this column are free now: handed back before the next
        # column is allocated (else the allocators keep them beside the joined frame)
        allocator.release()
    return pd.DataFrame(out, copy=False)


def _values(column: pd.Series) -> Any:
    """A column's array: numpy for a numpy dtype (a view, no copy), else the
    extension array."""
    return column.to_numpy() if isinstance(column.dtype, np.dtype) else column.array


def _join_column(parts: list[Any]) -> Any:
    """One column of :func:`join_pieces` from its pieces' arrays (None: dtypes that no
    read would unite)."""
    if len(parts) == 1:
        return parts[0]
    dtypes = [p.dtype for p in parts]
    if all(isinstance(d, pd.CategoricalDtype) for d in dtypes):
        return _join_categoricals(parts)
    if any(isinstance(d, pd.CategoricalDtype) for d in dtypes):
        return None
    if not all(is_dtype_equal(d, dtypes[0]) for d in dtypes):
        # numpy integer / boolean pieces beside nullable ones: all nullable, as one
        # read of every row gives when a value is missing
        nullable = _NULLABLE.get(dtypes[0].kind)
        if nullable is None or not all(
            is_dtype_equal(d, nullable) or is_dtype_equal(d, nullable.numpy_dtype) for d in dtypes
        ):
            return None
        parts = [pd.array(p, dtype=nullable) for p in parts]
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return type(parts[0])._concat_same_type(parts)


def _join_categoricals(parts: list[pd.Categorical]) -> pd.Categorical:
    """Categoricals joined with their categories united and sorted; each piece's codes
    mapped onto them (missing stays missing)."""
    seen = [p.categories for p in parts]
    if all(c.equals(seen[0]) and c.dtype == seen[0].dtype for c in seen):
        dtype = parts[0].dtype
        codes = [np.asarray(p.codes) for p in parts]
    else:
        like = next((c for c in seen if len(c)), seen[0])  # all-missing columns have none
        united = pd.Index(sorted(set().union(*(set(c) for c in seen))), dtype=like.dtype)
        dtype = pd.CategoricalDtype(united)
        codes = []
        for p in parts:
            remap = np.append(united.get_indexer(p.categories), -1)  # code -1 -> -1
            codes.append(remap[np.asarray(p.codes)])
    return pd.Categorical.from_codes(np.concatenate(codes), dtype=dtype)
