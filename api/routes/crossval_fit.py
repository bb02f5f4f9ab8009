"""/api/v1/crossval/guide-fit: which match rule reproduces each row of the guide's
cross-validation table, and the rule that fits it best (``service.crossval.guide_fit_answer``,
the answer the /crossval page's headline and guide section show)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from analysis.crossval import DEFAULT_TOKEN_TOLERANCE
from analysis.crossval_rules import DEFAULT_NOISE_PCT
from api.auth import get_store, require_read
from api.jsonio import FastJSONResponse, frame_records
from api.routes.crossval import NoisePct, TokenTolerance
from api.schemas import crossval as X
from api.schemas.errors import READ, errors
from db.store import Store
from service.crossval import guide_fit_answer

router = APIRouter(prefix="/crossval", tags=["crossval"])


@router.get(
    "/guide-fit",
    summary="Which rule reproduces each row of the guide's table, and the best-fitting rule",
    dependencies=[Depends(require_read)],
    response_model=X.GuideFit,
    responses=errors(*READ),
)
def get_guide_fit(
    store: Store = Depends(get_store),
    token_tolerance: TokenTolerance = DEFAULT_TOKEN_TOLERANCE,
    noise_pct: NoisePct = DEFAULT_NOISE_PCT,
    fixed_only: bool = True,
) -> Response:
    fit = guide_fit_answer(store, token_tolerance, noise_pct, fixed_only)
    return FastJSONResponse(
        {
            "fixed_only": fixed_only,
            "headline": fit.headline,
            "default_rule": fit.default,
            "fit": frame_records(fit.fit),
            "items": frame_records(fit.rows),
        }
    )
