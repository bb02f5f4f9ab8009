"""/api/v1/routing-skew: one workload under balanced vs skewed routing (``service.routing``,
the answer the ``/routing`` page shows)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Response

from api.auth import require_read
from api.jsonio import FastJSONResponse
from api.routes.analysis import Data
from api.schemas import explore as X
from api.schemas.common import CSV, merged
from api.schemas.errors import read_errors
from service.errors import NoData, ServiceError
from service.routing import RoutingSkew, SkewQuery, routing_skew, skew_json

router = APIRouter(tags=["analysis"], dependencies=[Depends(require_read)])


def _answer(data: Data, q: SkewQuery) -> RoutingSkew:
    try:
        return routing_skew(data, q)
    except ServiceError as err:
        raise HTTPException(
            404 if isinstance(err, NoData) else 422,
            [{"loc": ["query", err.field], "msg": err.msg, "type": err.type}],
        ) from err


@router.get(
    "/routing-skew",
    summary="One workload under balanced vs skewed routing: ranks, slowdowns, EPLB/DWDP advice",
    response_model=X.RoutingSkew,
    responses=merged(CSV, read_errors()),
)
def routing_skew_view(
    q: Annotated[SkewQuery, Query()], data: Data, format: Literal["json", "csv"] = "json"
) -> Response:
    """Per configuration: score and rank under each pattern, rank change and slowdown
    (skewed / balanced score - 1, %) with its noise band; the summary (winners, the cost
    of deploying the balanced pick under skew) and the guide's EPLB, DWDP and
    low-precision-combine advice with the checks behind each verdict. An unknown value
    is a 422 naming the parameter and listing the stored values. With one pattern stored
    the answer is 200 with ``items: []`` and a ``message``. ``format=csv``: the table."""
    ans = _answer(data, q)
    if format == "csv":
        return Response(
            ans.csv(),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{ans.filename}"'},
        )
    return FastJSONResponse(skew_json(ans))
