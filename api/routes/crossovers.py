"""/api/v1/crossovers: the rank-1 option along an axis, as segments and switches.

The handler parses the query (``service.crossover_slice.CrossoverQuery``), asks
``service.crossovers.crossover_answer`` (the function the /crossovers page calls too)
and serialises it: JSON with the series summaries, switches and segments (and the score
curves with ``curves=true``), or one of those tables as CSV (``format=csv&table=...``,
named for the slice). Bad input is a 422 naming the parameter and the allowed values.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pandas as pd
from fastapi import APIRouter, Depends, HTTPException, Query, Response

from analysis.crossovers import AXIS_UNITS
from analysis.tables import to_csv_text, to_json_records
from api.auth import require_read
from api.jsonio import FastJSONResponse
from api.routes.analysis import Data
from service.crossovers import CrossoverAnswer, CrossoverQuery, crossover_answer
from service.errors import NoData, ServiceError

router = APIRouter(tags=["analysis"], dependencies=[Depends(require_read)])

Table = Literal["switches", "segments", "series", "points"]


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
        "series": to_json_records(ans.result.series),
        "switches": to_json_records(ans.result.switches),
        "segments": to_json_records(ans.result.segments),
    }
    if curves:
        body["points"] = to_json_records(ans.result.points)
    return FastJSONResponse(body)
