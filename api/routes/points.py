"""/api/v1/runs/{run_id}/candidates/{candidate_index}/export: one measured candidate as a
trtllm-serve YAML, its env file, or JSON -- the bytes the Pareto page's downloads hold
(both come from ``service.point_export``)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Response

from api.auth import require_read
from api.jsonio import FastJSONResponse
from api.routes.analysis import Data
from api.schemas.common import TEXT_DOWNLOADS, merged
from api.schemas.errors import errors
from api.schemas.recommend import CandidateExport
from service.errors import NoData, ServiceError
from service.point_export import PointExport, point_export

router = APIRouter(tags=["analysis"], dependencies=[Depends(require_read)])


def _export(data: Data, run_id: int, candidate_index: int) -> PointExport:
    try:
        return point_export(data, run_id, candidate_index)
    except ServiceError as err:
        raise HTTPException(
            404 if isinstance(err, NoData) else 422,
            [{"loc": ["path", err.field], "msg": err.msg, "type": err.type}],
        ) from err


@router.get(
    "/runs/{run_id}/candidates/{candidate_index}/export",
    summary="One measured candidate as trtllm-serve YAML, env file or JSON",
    response_model=CandidateExport,
    responses=merged(
        TEXT_DOWNLOADS,
        errors(
            401,
            404,
            422,
            429,
            503,
            e404="No such run or candidate, or the candidate has no score",
            e422="A bad parameter, or a candidate TensorRT-LLM cannot run (says why)",
        ),
    ),
)
def candidate_export(
    data: Data,
    run_id: int = Path(ge=1, le=2**62),
    candidate_index: int = Path(ge=0, le=2**62),
    format: Literal["yaml", "env", "json"] = "yaml",
) -> Response:
    """``format=yaml``: the ``--extra_llm_api_options`` file; ``env``: the
    TRTLLM_FORCE_COMM_METHOD line (a comment when comm stays AUTO); ``json``: both
    texts, the file names and the capability warnings. Downloads are named
    ``moe_config_<model>_<gpu>_<quant>_ws<N>_<tokens>tok_run<R>_cand<I>``. A candidate
    TensorRT-LLM cannot run (a backend it does not have ...) is a 422 saying why; one
    outside the guide's coverage exports with ``# warning:`` lines."""
    ans = _export(data, run_id, candidate_index)
    if format == "json":
        return FastJSONResponse(
            {
                "run_id": ans.run_id,
                "candidate_index": ans.candidate_index,
                "yaml": ans.yaml,
                "yaml_filename": ans.yaml_filename,
                "env": ans.env,
                "env_filename": ans.env_filename,
                "warnings": list(ans.warnings),
            }
        )
    if format == "env":
        return Response(
            ans.env,
            media_type="text/plain",
            headers={"Content-Disposition": f'attachment; filename="{ans.env_filename}"'},
        )
    return Response(
        ans.yaml,
        media_type="application/yaml",
        headers={"Content-Disposition": f'attachment; filename="{ans.yaml_filename}"'},
    )
