"""A cell frame brought up to date by appending what an upload added, instead of reading
the whole cell again (the first visit to a cell right after an upload to it).

Run ids only grow, so the runs an upload adds to a cell sort after every run a cached
frame holds: the new frame is the old one followed by the new runs' rows, in the same
(run_id, candidate_index) order a full read gives. :func:`appendable` says when that
holds (nothing was deleted meanwhile); :func:`append_rows` joins the two frames with
the categoricals' categories united and sorted (as a full read makes them), and gives
up (None) when a column's type differs between the two (e.g. a first NULL in an
integer column), so the caller reads the cell whole.
"""

from __future__ import annotations

import pandas as pd

from analysis import columns as C


def appendable(old_runs: int, old_newest: int, run_ids: pd.Series) -> bool:
    """Whether the cell whose runs are now ``run_ids`` is the cell of a frame holding
    ``old_runs`` runs (newest ``old_newest``) plus runs uploaded since: every run not
    newer than ``old_newest`` is still there (their count did not change)."""
    ids = run_ids.to_numpy()
    return bool((ids <= old_newest).sum() == old_runs and (ids > old_newest).any())


def append_rows(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame | None:
    """``old`` followed by ``new`` (both prepared cell frames, same columns), index
    reset; None when a column's dtype differs beyond a categorical's categories."""
    if list(old.columns) != list(new.columns) or new.empty:
        return None if list(old.columns) != list(new.columns) else old
    parts_old, parts_new = {}, {}
    for col in old.columns:
        a, b = old[col], new[col]
        if isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype):
            cats = sorted(set(a.cat.categories) | set(b.cat.categories))
            like = a if len(a.cat.categories) else b  # an all-missing column has none
            index = pd.Index(cats, dtype=like.cat.categories.dtype)
            dtype = pd.CategoricalDtype(index)
            parts_old[col] = a if a.dtype == dtype else a.astype(dtype)
            parts_new[col] = b.astype(dtype)
        elif a.dtype == b.dtype:
            parts_old[col], parts_new[col] = a, b
        else:
            return None
    joined = pd.concat(
        [pd.DataFrame(parts_old, copy=False), pd.DataFrame(parts_new, copy=False)],
        ignore_index=True,
    )
    if not joined[C.RUN_ID].is_monotonic_increasing:  # not an append after all
        return None
    return joined
