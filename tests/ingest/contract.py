"""The shape every parser's Sweep must have (shared by the ingest and real-data tests)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import columns as C
from ingest.records import RUN_EXTRA_KEYS


def check_sweep_contract(run: dict[str, Any], frame: pd.DataFrame) -> None:
    """Every run key present; exactly the candidate columns, in order, with sane dtypes."""
    expected_run = (set(C.RUN_COLUMNS) - {C.RUN_ID}) | set(RUN_EXTRA_KEYS)
    assert set(run) == expected_run
    assert tuple(frame.columns) == C.CANDIDATE_COLUMNS
    for name in frame.columns:
        dtype = frame[name].dtype
        if name in C.INT_COLUMNS:
            assert str(dtype) == "Int64", name
        elif name in C.FLOAT_COLUMNS:
            assert dtype == "float64", name
        elif name in C.BOOL_COLUMNS:
            assert str(dtype) == "boolean", name
        else:
            assert pd.api.types.is_string_dtype(dtype), name
