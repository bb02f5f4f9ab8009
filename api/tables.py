"""One table response for every read route: a DataFrame as CSV download or JSON records."""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
from fastapi import Response

from analysis.tables import to_csv_text, to_json_records
from api.jsonio import FastJSONResponse

Format = Literal["json", "csv"]


def table_response(df: pd.DataFrame, fmt: Format, name: str, extra: dict[str, Any]) -> Response:
    """``df`` as ``text/csv`` saved as ``{name}.csv`` when ``fmt`` is ``"csv"``; otherwise JSON
    ``{**extra, "items": [...]}`` with one record per row (missing values as null). Row order is
    kept; ``extra`` (slice, method, provenance) is dropped from the CSV, which holds rows only."""
    if fmt == "csv":
        return Response(
            to_csv_text(df),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
        )
    return FastJSONResponse({**extra, "items": to_json_records(df)})
