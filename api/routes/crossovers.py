"""/api/v1/crossovers: the rank-1 option along an axis, as segments and switches.

The handler parses the query (``service.crossover_slice.CrossoverQuery``), asks
``service.crossovers.crossover_answer`` (the function the /crossovers page calls too)
and serialises it: JSON with the series summaries (each with its model, hardware, quant,
world size, CUDA graph, attention and dispatch), the switches and segments (naming their
series by id and label) and, with ``curves=true``, the score curves; or one of those
tables as CSV (``format=csv&table=...``, named for the slice; switch rows there carry the
series columns too). Bad input is a 422 naming the parameter and the allowed values.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from fastapi import APIRouter, Depends, HTTPException, Query, Response

from analysis.crossovers import AXIS_UNITS, SERIES_COLS
from analysis.tables import to_csv_text
from api.auth import require_read
from api.jsonio import FastJSONResponse
from api.routes.analysis import Data
from api.schemas.common import CSV, merged
from api.schemas.errors import read_errors
from api.schemas.explore import Crossovers
from service.crossovers import CrossoverAnswer, CrossoverQuery, crossover_answer
from service.errors import NoData, ServiceError

router = APIRouter(tags=["analysis"], dependencies=[Depends(require_read)])

Table = Literal["switches", "segments", "series", "points"]


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts, column by column (non-finite floats and missing values
    -> None, numpy scalars -> Python): the same values ``analysis.tables.to_json_records``
    gives, without a Python call per cell (switch tables of all data run to thousands of
    rows)."""
    cols: list[list[Any]] = []
    for name in df.columns:
        s = df[name]
        if s.dtype.kind == "f":
            v = s.to_numpy(dtype=float)
            obj = v.astype(object)
            obj[~np.isfinite(v)] = None
            cols.append(obj.tolist())
        elif s.dtype.kind in "iub" and not s.hasnans:
            cols.append(s.to_numpy().tolist())
        else:
            cols.append(s.astype(object).where(s.notna(), None).tolist())
    keys = [str(c) for c in df.columns]
    return [dict(zip(keys, row, strict=True)) for row in zip(*cols, strict=True)]


def _series_columns(ans: CrossoverAnswer) -> list[str]:
    return [c for c in SERIES_COLS if c in ans.result.switches.columns]


def _tables(ans: CrossoverAnswer) -> dict[str, pd.DataFrame]:
    res = ans.result
    return {
        "switches": res.switches,
        "segments": res.segments,
        "series": res.series,
        "points": res.points,
    }


@router.get(
    "/crossovers",
    summary="Crossover explorer: where the rank-1 option switches along an axis",
    response_model=Crossovers,
    responses=merged(CSV, read_errors()),
)
def crossovers(
    q: Annotated[CrossoverQuery, Query()],
    data: Data,
    format: Literal["json", "csv"] = "json",
    table: Table = "switches",
    curves: bool = False,
) -> Response:
    """Per series (model x hardware x quant x world size x phase x attention x
    dispatch) the rank-1 option (``option``: backend, comm, backend+comm or
    parallel_mode) along ``axis`` (num_tokens in tokens, activated_tokens_per_rank in
    tokens per rank, dispatch_kb in KiB): segments, and every switch with its bracket,
    margins on each side (%), noise bands (%), supporting axis points and verdict
    (robust / tie within noise / not compared). Scores are ms (best configuration of
    the option; median over repeat runs)."""
    try:
        ans = crossover_answer(data, q)
    except ServiceError as err:
        raise HTTPException(
            404 if isinstance(err, NoData) else 422,
            [{"loc": ["query", err.field], "msg": err.msg, "type": err.type}],
        ) from err
    tables = _tables(ans)
    if format == "csv":
        name = ans.name if table == "switches" else f"{ans.name}_{table}"
        return Response(
            to_csv_text(tables[table]),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
        )
    body: dict[str, object] = {
        "option": ans.option,
        "axis": ans.axis,
        "filters": ans.filters,
        "units": {"axis": AXIS_UNITS[ans.axis], "score": "ms", "margin": "%", "noise": "%"},
        "name": ans.name,
        "provenance": ans.provenance,
        "series": records(ans.result.series),
        # a switch names its series by id and label; the series rows carry the columns
        # (the CSV repeats them, so a downloaded table stands alone)
        "switches": records(ans.result.switches.drop(columns=_series_columns(ans))),
        "segments": records(ans.result.segments),
    }
    if curves:
        body["points"] = records(ans.result.points)
    return FastJSONResponse(body)
