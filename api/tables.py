"""One table response for every read route: a DataFrame as CSV download or JSON records."""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
from fastapi import Response

from analysis.tables import to_csv_text
from api.jsonio import FastJSONResponse
from service.compare import records

Format = Literal["json", "csv"]


# No table response carries more rows than this (the largest page a route offers): a
# bigger answer is cut, and says so, instead of growing without bound with the store.
MAX_ROWS = 100_000


def table_response(df: pd.DataFrame, fmt: Format, name: str, extra: dict[str, Any]) -> Response:
    """``df`` as ``text/csv`` saved as ``{name}.csv`` when ``fmt`` is ``"csv"``; otherwise JSON
    ``{**extra, "items": [...]}`` with one record per row (missing values as null). Row order is
    kept; ``extra`` (slice, method, provenance) is dropped from the CSV, which holds rows only.
    At most :data:`MAX_ROWS` rows: a longer table is cut, the JSON then says
    ``"truncated": {"rows": <all>, "returned": MAX_ROWS}`` and the CSV response carries
    ``X-Moedash-Truncated: <all>``."""
    headers: dict[str, str] = {}
    if len(df) > MAX_ROWS:
        extra = {**extra, "truncated": {"rows": len(df), "returned": MAX_ROWS}}
        headers["X-Moedash-Truncated"] = str(len(df))
        df = df.iloc[:MAX_ROWS]
    if fmt == "csv":
        return Response(
            to_csv_text(df),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{name}.csv"', **headers},
        )
    # records: to_json_records' values, converted per column (10k rows: ~5x faster)
    return FastJSONResponse({**extra, "items": records(df)}, headers=headers or None)
