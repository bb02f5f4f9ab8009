"""JSON output for API responses: DataFrames as records, NaN/NA as null, fast."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import numpy as np
import orjson
import pandas as pd
from fastapi.responses import JSONResponse


def _default(value: Any) -> Any:
    if isinstance(value, pd.Timestamp | dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, frozenset | set):
        return sorted(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts with JSON-ready values (missing -> None, non-finite floats -> None)."""
    if frame.empty:
        return []
    obj = frame.astype(object).where(frame.notna(), None)
    return [{k: _clean(v) for k, v in row.items()} for row in obj.to_dict("records")]


class FastJSONResponse(JSONResponse):
    """orjson rendering; non-finite floats become null (JSON has no Infinity)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(
            content, default=_default, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
        )
