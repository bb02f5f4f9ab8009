"""The candidate half of a sweep's content identity (``db.uploads.sweep_fingerprint``),
computed without building a pandas Series per column.

The identity is defined as: for every column of ``CANDIDATE_COLUMNS``, its name, then
``pd.util.hash_pandas_object(col, index=False)`` of the column in a canonical dtype
(numbers as ``Float64``, so 4 and 4.0 hash alike across parsers; flags as ``boolean``;
text as ``string``). Stored ``run_key`` values were computed that way, so the definition
cannot change. Converting and hashing through pandas costs ~1 ms per column whatever the
length (~40 ms for a 48-row report, a third of an upload's CPU), so the same uint64 hashes
are produced here from numpy arrays with ``pd.util.hash_array``:

- a masked number or flag hashes its data, then every missing value is ``hash(pd.NA)``;
- a ``string`` value hashes as ``hash_array`` of its text; a missing one is 2**64 - 1.

Columns in a dtype this module does not know (object columns holding numbers, mixed
values, categoricals...) take the pandas path itself, so the answer is the same for every
input; ``tests/db/test_fingerprint.py`` checks both against each other.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C

_NA_HASH = np.uint64(hash(pd.NA))  # what a masked array writes for a missing value
_NULL_TEXT_HASH = np.uint64(np.iinfo(np.uint64).max)  # what an Arrow string array writes
_NUMERIC = frozenset(C.INT_COLUMNS | C.FLOAT_COLUMNS)

# Text columns of frames up to this many rows are hashed from Python strings; bigger
# ones by pandas (its per-column overhead no longer matters, its memory does).
_FAST_TEXT_MAX_ROWS = 10_000

Hashes = np.ndarray[Any, np.dtype[np.uint64]]


def _hash(values: np.ndarray[Any, Any], *, categorize: bool = True) -> Hashes:
    """``pd.util.hash_array``: elementwise, so one call may cover several columns."""
    return np.asarray(pd.util.hash_array(values, categorize=categorize), dtype=np.uint64)


def candidate_hashes(frame: pd.DataFrame) -> list[tuple[str, bytes]]:
    """``[(column name, uint64 row hashes as bytes)]`` for every candidate column, in
    ``CANDIDATE_COLUMNS`` order (see the module docstring)."""
    n = len(frame)
    numbers: dict[str, np.ndarray[Any, Any]] = {}
    texts: dict[str, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = {}
    out: dict[str, Hashes] = {}
    for name in C.CANDIDATE_COLUMNS:
        col = frame[name]
        if name in _NUMERIC:
            values = _numbers(col)
            if values is not None:
                numbers[name] = values
                continue
        elif name in C.BOOL_COLUMNS:
            flags = _flag(col)
            if flags is not None:
                out[name] = flags
                continue
        else:
            # big frames: pandas hashes Arrow text through its dictionary, without one
            # Python str per row (for a 50k-row upload that is tens of MB at its peak)
            strings = _strings(col) if n <= _FAST_TEXT_MAX_ROWS else None
            if strings is not None:
                texts[name] = strings
                continue
        out[name] = reference_hash(name, col)
    # one hash_array call per kind instead of one per column: the hash is elementwise
    if numbers:
        stacked = np.concatenate(list(numbers.values()))
        hashed = _hash(stacked)
        # Float64 holds NaN as missing: the canonical column has NA wherever this is NaN
        hashed[np.isnan(stacked)] = _NA_HASH
        for i, name in enumerate(numbers):
            out[name] = hashed[i * n : (i + 1) * n]
    if texts:
        present = np.concatenate([values[~missing] for values, missing in texts.values()])
        hashed = _hash(present, categorize=False) if len(present) else present
        at = 0
        for name, (_values, missing) in texts.items():
            column = np.full(n, _NULL_TEXT_HASH, dtype=np.uint64)
            k = n - int(missing.sum())
            column[~missing] = hashed[at : at + k]
            at += k
            out[name] = column
    return [(name, out[name].tobytes()) for name in C.CANDIDATE_COLUMNS]


def reference_hash(name: str, col: pd.Series[Any]) -> Hashes:
    """The defining computation for one column (slow: pandas conversions per column)."""
    if name in _NUMERIC:
        col = pd.to_numeric(col, errors="coerce").astype("Float64")
    elif name in C.BOOL_COLUMNS:
        col = col.astype("boolean")
    else:
        col = col.astype("string")
    return np.asarray(pd.util.hash_pandas_object(col, index=False), dtype=np.uint64)


def _numbers(col: pd.Series[Any]) -> np.ndarray[Any, np.dtype[np.float64]] | None:
    dtype = col.dtype
    numpy_kind = isinstance(dtype, np.dtype) and dtype.kind in "iuf"
    if not (numpy_kind or isinstance(dtype, pd.Int64Dtype | pd.Float64Dtype)):
        return None
    return np.asarray(col.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)


def _flag(col: pd.Series[Any]) -> Hashes | None:
    dtype = col.dtype
    if isinstance(dtype, np.dtype) and dtype.kind == "b":
        return _hash(col.to_numpy())
    if not isinstance(dtype, pd.BooleanDtype):
        return None
    missing = col.isna().to_numpy()
    hashed = _hash(col.to_numpy(dtype=bool, na_value=False))
    hashed[missing] = _NA_HASH
    return hashed


def _strings(col: pd.Series[Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """(values as an object array, missing mask) of a text column, or None when
    ``astype("string")`` would convert its values (pandas must hash it)."""
    dtype = col.dtype
    is_object = isinstance(dtype, np.dtype) and dtype.kind == "O"
    if not (isinstance(dtype, pd.StringDtype) or is_object):
        return None
    values = col.to_numpy(dtype=object, na_value=None)
    missing = pd.isna(values)
    if is_object and not all(type(v) is str for v in values[~missing]):
        return None
    return values, missing
