"""Serialise any result frame to CSV text or JSON records.

Column order is the frame's own unless ``columns`` is given (then exactly those, in that
order; unknown names raise KeyError). Missing values (None, NaN, NA, NaT) and +-inf
become empty CSV fields / JSON null. numpy scalars become Python scalars, timestamps
ISO-8601 strings.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd


def _select(df: pd.DataFrame, columns: Sequence[str] | None) -> pd.DataFrame:
    if columns is None:
        return df
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError(f"columns not in frame: {missing}")
    return df[list(columns)]


def plain_value(v: Any) -> Any:
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, pd.Timestamp | np.datetime64):
        return pd.Timestamp(v).isoformat()
    return v


def to_json_records(df: pd.DataFrame, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """List of {column: value} dicts, one per row, keys in column order."""
    sub = _select(df, columns)
    cols = [str(c) for c in sub.columns]
    return [
        dict(zip(cols, (plain_value(v) for v in row), strict=True))
        for row in sub.itertuples(index=False, name=None)
    ]


def to_json_text(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """``to_json_records`` as a JSON array (strict JSON: no NaN literals)."""
    return json.dumps(to_json_records(df, columns), allow_nan=False)


def to_csv_text(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """CSV with a header row, no index, "\\n" line endings; missing and +-inf -> empty."""
    sub = _select(df, columns)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([str(c) for c in sub.columns])
    for row in sub.itertuples(index=False, name=None):
        writer.writerow(["" if (v := plain_value(x)) is None else v for x in row])
    return buf.getvalue()
