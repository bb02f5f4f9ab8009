"""/api/v1 analysis endpoints: pareto, best, recommendation, agreement, export.

Each handler parses its parameters, asks ``service/`` (the read path the dashboard uses
too) and serialises the answer; every answer carries provenance (the runs and
TensorRT-LLM versions it was computed from), the routing pattern it covers
(``dispatch``: requested, used, whether it is the default, the known patterns, the
rule) and how repeat runs were combined (``repeats``). Tables come as JSON (default) or
CSV (``format=csv``). A question the service cannot answer (:mod:`service.errors`) is a
422 (bad input: an unknown routing pattern lists the known ones; a config TensorRT-LLM
cannot run names the backend and why) or 404 (no data) naming the query parameter at
fault.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response

from analysis import columns as C
from analysis.concurrency import TokenCount
from analysis.export import coverage_text, env_line
from analysis.export_options import DEFAULT_RELEASE
from analysis.identity import Repeats
from analysis.tables import plain_value
from analysis.tree import Recommendation
from api.auth import get_store, require_read
from api.jsonio import FastJSONResponse
from api.schemas import recommend as R
from api.schemas.analysis import Agreement, Best, Pareto
from api.schemas.common import CSV, TEXT_DOWNLOADS, merged
from api.schemas.errors import read_errors
from api.tables import table_response
from db.store import Store
from service.agreement import agreement_table
from service.best import best_table
from service.capabilities import conflict_lines, conflicts, measured
from service.errors import NoData, ServiceError
from service.export import ExportAnswer, LaunchAnswer, export_config, launch_export
from service.frames import DashData
from service.pareto import pareto_table
from service.recommend import DeploymentRequest
from service.recommend import recommendation as recommend_for
from service.scope import Routing, Scope

router = APIRouter(tags=["analysis"], dependencies=[Depends(require_read)])

Format = Literal["json", "csv"]
T = TypeVar("T")
_data_lock = threading.Lock()


def get_data(request: Request, store: Store = Depends(get_store)) -> DashData:
    """The app's read path (``app.state.data``, shared with the dashboard when the
    composition root mounts one; created on first use otherwise). Its store version is
    re-read on every request, so an answer always reflects the latest upload."""
    state = request.app.state
    with _data_lock:
        data: DashData | None = getattr(state, "data", None)
        if data is None or data.store is not store:
            data = state.data = DashData(store)
    data.invalidate()
    return data


Data = Annotated[DashData, Depends(get_data)]
ScopeQ = Annotated[Scope, Query()]
DeploymentQ = Annotated[DeploymentRequest, Query()]
RepeatsQ = Annotated[
    Repeats,
    Query(description="repeat runs of a configuration: their median, or the latest run only"),
]


def _routing(routing: Routing | None) -> dict[str, Any] | None:
    return None if routing is None else routing.as_dict()


def _answer(call: Callable[[], T]) -> T:
    """``call()``, with a service error as 404 (no data) or 422 (bad input) naming the
    query parameter, in the API's error envelope."""
    try:
        return call()
    except ServiceError as err:
        raise HTTPException(
            404 if isinstance(err, NoData) else 422,
            [{"loc": ["query", err.field], "msg": err.msg, "type": err.type}],
        ) from err


@router.get(
    "/pareto",
    summary="Pareto frontier: tokens/s/GPU against latency or tokens per rank",
    response_model=Pareto,
    responses=merged(CSV, read_errors()),
)
def pareto(
    scope: ScopeQ,
    data: Data,
    x: Literal["score_ms", "activated_tokens_per_rank"] = "score_ms",
    repeats: RepeatsQ = "median",
    format: Format = "json",
) -> Response:
    ans = _answer(lambda: pareto_table(data, scope, x, repeats))
    extra = {
        "x": ans.x,
        "y": ans.y,
        "provenance": ans.provenance,
        "dispatch": _routing(ans.routing),
        "repeats": ans.repeats,
    }
    return table_response(ans.items, format, "pareto", extra)


@router.get(
    "/best",
    summary="Best configuration per workload with runner-up, margin, tie flag",
    response_model=Best,
    responses=merged(CSV, read_errors()),
)
def best(
    scope: ScopeQ,
    data: Data,
    grouping: Literal["bench_moe", "dashboard"] = "dashboard",
    repeats: RepeatsQ = "median",
    format: Format = "json",
) -> Response:
    ans = _answer(lambda: best_table(data, scope, grouping, repeats))
    extra = {
        "grouping": grouping,
        "provenance": ans.provenance,
        "dispatch": _routing(ans.routing),
        "repeats": "per_run" if grouping == "bench_moe" else ans.repeats,
    }
    return table_response(ans.items, format, f"best_{grouping}", extra)


def _rec_json(rec: Recommendation) -> dict[str, Any]:
    return {
        "parallel_mode": rec.parallel_mode,
        "moe_ep_size": rec.moe_ep_size,
        "moe_tp_size": rec.moe_tp_size,
        "backend": rec.backend,
        "comm": rec.comm,
        "force_comm": rec.force_comm,
        "expected_comm": rec.expected_comm,
        "phase": rec.phase,
        "activated_tokens_per_rank": rec.activated_tokens_per_rank,
        "dispatch_kb": rec.dispatch_kb,
        "in_guide_coverage": rec.in_guide_coverage,
        "coverage": coverage_text(rec),
        "notes": list(rec.notes),
        "path": [
            {
                "step": s.step,
                "question": s.question,
                "answer": s.answer,
                "threshold_name": s.threshold_name,
                "threshold_value": s.threshold_value,
                "observed": s.observed,
            }
            for s in rec.path
        ],
        "env": env_line(rec),
        "low_precision_combine": rec.low_precision_combine,
    }


def _tokens_json(count: TokenCount | None) -> dict[str, Any] | None:
    if count is None:
        return None
    return {
        "num_tokens": count.num_tokens,
        "phase": count.phase,
        "tokens_per_rank": count.tokens_per_rank,
        "attention_dp_ranks": count.dp,
        "batch_per_rank": count.batch_per_rank,
        "batch_per_rank_padded": count.batch_per_rank_padded,
        "cuda_graph": count.cuda_graph,
        "formula": count.formula,
        "notes": list(count.notes),
    }


@router.get(
    "/recommendation",
    summary="The guide's tree and the measured best for a deployment",
    response_model=R.Recommendation,
    responses=read_errors(),
)
def recommendation(q: DeploymentQ, data: Data) -> Response:
    ans = _answer(lambda: recommend_for(data, q))
    pick = ans.measured
    measured: dict[str, Any] | None = None
    if pick is not None:
        measured = {
            **_rec_json(pick.recommendation),
            "measured_num_tokens": pick.measured_num_tokens,
            "exact": pick.exact,
            "score_ms": pick.score_ms,
            "runner_up_score_ms": pick.runner_up_score_ms,
            "margin_pct": pick.margin_pct,
            "n_candidates": pick.n_candidates,
            "provenance": {
                "run_ids": list(pick.run_ids),
                "trtllm_versions": list(pick.trtllm_versions),
            },
            "agrees_with_tree": ans.agrees,
            "dispatch": pick.dispatch,
            "n_repeats": pick.n_repeats,
            "repeat_run_ids": pick.repeat_run_ids,
            "spread_pct": pick.spread_pct,
            "spread_source": pick.spread_source,
        }
    dep = ans.deployment
    agreement = (
        None if ans.agreement is None else {k: plain_value(v) for k, v in ans.agreement.items()}
    )
    return FastJSONResponse(
        {
            "deployment": {
                **q.model_dump(),
                C.NUM_TOKENS: dep.num_tokens,
                C.NUM_EXPERTS: dep.num_experts,
                C.TOP_K: dep.top_k,
                C.HIDDEN_SIZE: dep.hidden_size,
            },
            "num_tokens_from": _tokens_json(ans.tokens),
            "thresholds": q.thresholds,
            "dispatch": _routing(ans.routing),
            "repeats": ans.repeats,
            "tree": _rec_json(ans.tree),
            "measured": measured,
            "agreement": agreement,
            "confidence": None if ans.confidence is None else ans.confidence.as_dict(),
            "capability_conflicts": conflict_lines(data, q.hardware),
        }
    )


# format=yaml / env, and format=launch: the shell script writing the documents
EXPORT_DOWNLOADS: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {
            **TEXT_DOWNLOADS[200]["content"],
            "text/x-shellscript": {
                "schema": {"type": "string"},
                "example": "#!/bin/sh\n# moedash launch: deepseek_v4_pro NVFP4 on GB300\n",
            },
        }
    }
}


@router.get(
    "/export",
    summary="Recommended config as trtllm-serve YAML or the env line",
    response_model=R.Export,
    responses=merged(EXPORT_DOWNLOADS, read_errors()),
)
def export(
    q: DeploymentQ,
    data: Data,
    source: Literal["tree", "measured"] = "tree",
    format: Literal["yaml", "env", "json", "launch"] = "yaml",
    release: Annotated[
        str, Query(max_length=32, description="TensorRT-LLM release the options are checked for")
    ] = DEFAULT_RELEASE,
    prefill_max_num_tokens: Annotated[
        int | None,
        Query(
            ge=1,
            le=10_000_000,
            description="disaggregated launch (format=launch|json, phase=decode): the "
            "prefill worker's max_num_tokens",
        ),
    ] = None,
    prefill_world_size: Annotated[int | None, Query(ge=1, le=100000)] = None,
    prefill_attention: Literal["dp", "tp"] | None = None,
) -> Response:
    if format in ("launch", "json"):
        launch = _answer(
            lambda: launch_export(
                data,
                q,
                source,
                release,
                prefill_max_num_tokens,
                prefill_world_size,
                prefill_attention,
            )
        )
        if format == "launch":
            return Response(
                launch.text,
                media_type="text/x-shellscript",
                headers={"Content-Disposition": 'attachment; filename="launch.sh"'},
            )
        body = _export_json(launch.workers[-1], launch)
        body["capability_conflicts"] = conflict_lines(data, q.hardware)
        return FastJSONResponse(body)
    ans = _answer(lambda: export_config(data, q, source, True, release))
    if format == "env":
        return Response((ans.env or "") + "\n", media_type="text/plain")
    return Response(
        ans.yaml,
        media_type="application/yaml",
        headers={"Content-Disposition": 'attachment; filename="moe_config.yaml"'},
    )


def _worker_json(w: ExportAnswer) -> dict[str, Any]:
    return {
        "role": w.role,
        "options": w.options,
        "yaml": w.yaml,
        "command": w.command,
        "environment": {"TRTLLM_FORCE_COMM_METHOD": w.recommendation.comm} if w.env else {},
        "warnings": list(w.warnings),
    }


def _export_json(ans: ExportAnswer, launch: LaunchAnswer) -> dict[str, Any]:
    rec = ans.recommendation
    return {
        **_rec_json(rec),
        "warnings": list(ans.warnings),
        "num_tokens": rec.deployment.num_tokens,
        "num_tokens_from": _tokens_json(ans.answer.tokens if ans.answer else None),
        "dispatch": _routing(ans.answer.routing if ans.answer else None),
        "provenance": {
            "run_ids": list(ans.provenance.run_ids),
            "trtllm_version": ans.provenance.trtllm_version,
            "produced_by": ans.provenance.produced_by,
            "confidence": ans.provenance.confidence,
        },
        "release": ans.serving.release,
        "workers": [_worker_json(w) for w in launch.workers],
    }


@router.get(
    "/capabilities",
    summary="What ran on which hardware, and where that contradicts the hand tables",
    response_model=R.Capabilities,
    responses=read_errors(),
)
def capabilities(
    data: Data,
    hardware: Annotated[str | None, Query(max_length=32)] = None,
) -> Response:
    rows = measured(data)
    if hardware:
        rows = rows[rows["hardware"] == hardware.upper()]
    return FastJSONResponse(
        {
            "items": [{k: plain_value(v) for k, v in r.items()} for r in rows.to_dict("records")],
            "conflicts": conflicts(data, hardware).to_dict("records"),
        }
    )


@router.get(
    "/agreement",
    summary="Tree pick vs measured best for every stored workload",
    response_model=Agreement,
    responses=merged(CSV, read_errors()),
)
def agreement(
    scope: ScopeQ,
    data: Data,
    detail: bool = False,
    thresholds: Literal["published", "derived", "validated"] = "published",
    repeats: RepeatsQ = "median",
    format: Format = "json",
) -> Response:
    ans = _answer(lambda: agreement_table(data, scope, detail, thresholds, repeats))
    # an empty scope answers the (empty) summary, as it always has
    name = "agreement_detail" if detail and ans.provenance["n_candidates"] else "agreement"
    extra = {
        "provenance": ans.provenance,
        "dispatch": _routing(ans.routing),
        "repeats": ans.repeats,
        "compares": "backend and comm (the comm the tree's advice runs: forced, or AUTO's pick)",
    }
    return table_response(ans.items, format, name, extra)
