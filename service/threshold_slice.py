"""Which stored candidates a threshold question is asked on: model, hardware, quant and
dispatch filters, checked against what is stored.

A filter value the store does not hold is refused with :class:`InvalidQuery` naming the
parameter and the allowed values (the API answers 422). Hardware is compared
upper-cased, like :class:`service.scope.Scope`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from service.errors import InvalidQuery
from service.frames import DashData

FILTERS: tuple[str, ...] = (C.MODEL, C.HARDWARE, C.QUANT, C.DISPATCH)


@dataclass(frozen=True)
class ThresholdSlice:
    """Equality filters (None = any value)."""

    model: str | None = None
    hardware: str | None = None
    quant: str | None = None
    dispatch: str | None = None

    def filters(self) -> dict[str, str]:
        """The given filters as ``{column: value}``."""
        return {c: v for c in FILTERS if (v := getattr(self, c)) is not None}

    @property
    def label(self) -> str:
        """In words: "all stored data" or "model=glm_5, hardware=B300"."""
        f = self.filters()
        return ", ".join(f"{k}={v}" for k, v in f.items()) if f else "all stored data"

    @property
    def stem(self) -> str:
        """File-name part naming the slice: "all" or "glm_5_B300" (safe characters)."""
        f = self.filters()
        raw = "_".join(f.values()) if f else "all"
        return re.sub(r"[^A-Za-z0-9._-]+", "-", raw)

    def key(self) -> tuple[Any, ...]:
        return tuple(sorted(self.filters().items()))

    def as_dict(self) -> dict[str, str | None]:
        return {c: getattr(self, c) for c in FILTERS}


def allowed_values(data: DashData, column: str) -> list[str]:
    """Sorted distinct stored values of a filter column (empty store: []): run columns
    from the runs table, candidate columns (dispatch) aggregated in the database."""

    def load() -> list[str]:
        if column in (C.MODEL, C.HARDWARE, C.QUANT):
            values = data.store.cells.distinct_values(column)
        else:
            values = data.store.cells.distinct_candidate_values(column)
        return sorted({str(v) for v in values})

    return data.cached(("allowed-values", column), load)


def threshold_slice(
    data: DashData,
    model: str | None = None,
    hardware: str | None = None,
    quant: str | None = None,
    dispatch: str | None = None,
) -> ThresholdSlice:
    """A checked slice: empty strings mean "any"; an unstored value raises
    ``InvalidQuery`` naming the parameter and listing the allowed values."""
    given = {C.MODEL: model, C.HARDWARE: hardware, C.QUANT: quant, C.DISPATCH: dispatch}
    clean: dict[str, str | None] = {}
    for col, value in given.items():
        text = None if value is None or str(value).strip() == "" else str(value).strip()
        if text is not None and col == C.HARDWARE:
            text = text.upper()
        if text is not None:
            allowed = allowed_values(data, col)
            if text not in allowed:
                listed = ", ".join(allowed) if allowed else "none (nothing is stored yet)"
                raise InvalidQuery(col, f"unknown {col} {text!r}; allowed: {listed}", "value_error")
        clean[col] = text
    return ThresholdSlice(**clean)


def slice_frame(data: DashData, s: ThresholdSlice) -> pd.DataFrame:
    """Every stored candidate of the slice (all statuses; the analysis keeps the
    rankable ones), index reset: the bounded frame of the slice's runs
    (``DashData.bounded_frame``; too broad a slice is an :class:`InvalidQuery`)."""
    frame = data.bounded_frame(s.filters())
    if frame.empty:
        return frame
    mask = np.ones(len(frame), dtype=bool)
    for col, value in s.filters().items():
        mask &= (frame[col].astype("string") == value).to_numpy(dtype=bool, na_value=False)
    if mask.all() and frame.index.equals(pd.RangeIndex(len(frame))):
        return frame  # one whole cell: the cached frame itself, not a copy of it
    return frame.loc[mask].reset_index(drop=True)
