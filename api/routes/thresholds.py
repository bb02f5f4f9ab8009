"""/api/v1/thresholds*: the guide's thresholds re-derived from the data, per slice.

* ``GET /thresholds``: one row per threshold (published, derived, bracket, 95 % interval,
  status, verdict, leave-one-model-out fields); ``by=model|hardware|quant`` one row per
  threshold and group; ``evidence=true`` the votes behind them.
* ``GET /thresholds/validation``: the leave-one-out rows (one per threshold x held-out
  model).
* ``GET /thresholds/agreement``: the tree with published, derived and validated
  thresholds side by side, per model x hardware x phase.
* ``GET /thresholds/tree``: the guide's tree with a threshold set's numbers in place, as
  text or JSON (a download named for the slice).

Every route takes the slice filters ``model``, ``hardware``, ``quant``, ``dispatch``; a
value the store does not hold is a 422 naming the parameter and the allowed values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Depends, Query, Response

from analysis.tables import to_json_records
from api.auth import require_read
from api.errors import http_error
from api.routes.analysis import Data
from api.schemas import thresholds as X
from api.schemas.common import CSV, alternatives, merged
from api.schemas.errors import read_errors
from api.tables import table_response
from service.errors import NoData, ServiceError
from service.frames import DashData
from service.threshold_slice import ThresholdSlice, threshold_slice
from service.thresholds import (
    METHOD,
    RULE_TEXT,
    ThresholdSource,
    TreeFormat,
    threshold_report,
    threshold_table,
    tree_download,
)

router = APIRouter(tags=["thresholds"], dependencies=[Depends(require_read)])
T = TypeVar("T")
Format = Literal["json", "csv"]
By = Literal["none", "model", "hardware", "quant"]
Text = Annotated[str | None, Query(max_length=100)]


def _answer(call: Callable[[], T]) -> T:
    """``call()``; a service error is a 422 (404 for no data) naming the parameter."""
    try:
        return call()
    except ServiceError as err:
        status = 404 if isinstance(err, NoData) else 422
        raise http_error(status, ["query", err.field], err.msg, err.type) from err


def _slice(
    data: DashData, model: str | None, hardware: str | None, quant: str | None, dispatch: str | None
) -> ThresholdSlice:
    return _answer(lambda: threshold_slice(data, model, hardware, quant, dispatch))


@router.get(
    "/thresholds",
    summary="The guide's thresholds: published vs re-derived, per slice",
    response_model=X.Thresholds,
    responses=merged(CSV, read_errors()),
)
def thresholds(
    data: Data,
    model: Text = None,
    hardware: Text = None,
    quant: Text = None,
    dispatch: Text = None,
    by: By = "none",
    format: Format = "json",
    evidence: bool = False,
) -> Response:
    s = _slice(data, model, hardware, quant, dispatch)
    table = _answer(lambda: threshold_table(data, evidence, s, None if by == "none" else by))
    report = _answer(lambda: threshold_report(data, s))
    kind = "evidence" if evidence else ("thresholds" if by == "none" else f"thresholds_by_{by}")
    extra = {
        "slice": s.as_dict(),
        "by": by,
        "method": METHOD,
        "verdict_rule": RULE_TEXT,
        "provenance": report.provenance,
    }
    return table_response(table, format, f"{kind}_{s.stem}", extra)


@router.get(
    "/thresholds/validation",
    summary="Leave-one-model-out rows of each threshold",
    response_model=X.Validation,
    responses=merged(CSV, read_errors()),
)
def validation(
    data: Data,
    model: Text = None,
    hardware: Text = None,
    quant: Text = None,
    dispatch: Text = None,
    format: Format = "json",
) -> Response:
    s = _slice(data, model, hardware, quant, dispatch)
    report = _answer(lambda: threshold_report(data, s))
    extra = {"slice": s.as_dict(), "method": METHOD, "provenance": report.provenance}
    return table_response(report.check.loo, format, f"thresholds_loo_{s.stem}", extra)


@router.get(
    "/thresholds/agreement",
    summary="The tree with published, derived and validated thresholds, side by side",
    response_model=X.ThresholdAgreement,
    responses=merged(CSV, read_errors()),
)
def agreement(
    data: Data,
    model: Text = None,
    hardware: Text = None,
    quant: Text = None,
    dispatch: Text = None,
    format: Format = "json",
) -> Response:
    s = _slice(data, model, hardware, quant, dispatch)
    report = _answer(lambda: threshold_report(data, s))
    trees = report.trees
    extra = {
        "slice": s.as_dict(),
        "overall": to_json_records(trees.overall),
        "decisions": to_json_records(trees.decisions),
        "provenance": report.provenance,
    }
    return table_response(trees.summary, format, f"thresholds_agreement_{s.stem}", extra)


@router.get(
    "/thresholds/tree",
    summary="The guide's tree with re-derived numbers in place",
    response_model=X.ThresholdTree,
    responses=merged(alternatives({"text/plain": X.TREE_TEXT}), read_errors()),
)
def tree(
    data: Data,
    model: Text = None,
    hardware: Text = None,
    quant: Text = None,
    dispatch: Text = None,
    thresholds: ThresholdSource = "derived",
    format: TreeFormat = "text",
) -> Response:
    s = _slice(data, model, hardware, quant, dispatch)
    out = _answer(lambda: tree_download(data, s, thresholds, format))
    return Response(
        out.content,
        media_type=out.media_type,
        headers={"Content-Disposition": f'attachment; filename="{out.filename}"'},
    )
