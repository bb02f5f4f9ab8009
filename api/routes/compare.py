"""/api/v1/compare and /api/v1/history*: changes across TensorRT-LLM versions.

Thin handlers over ``service.compare`` and ``service.history`` (the read path the
Compare and History pages use too). ``base`` / ``head`` are run ids ("123") or
TensorRT-LLM versions ("1.2.0rc27"); an unknown one is a 422 naming ``base`` or
``head``. Tables come as JSON (default) or CSV (``format=csv``) with a file name naming
what they hold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from pydantic import StringConstraints

from analysis import compare as K
from analysis.tables import plain_value, to_json_records
from api.auth import require_read
from api.errors import http_error
from api.jsonio import FastJSONResponse
from api.routes.analysis import Data, RepeatsQ, ScopeQ
from api.schemas import history as X
from api.schemas.common import CSV, merged
from api.schemas.errors import read_errors
from api.tables import table_response
from service.compare import compare, compare_options, csv_text, records
from service.errors import NoData, ServiceError
from service.history import HistoryFilter, frontier_change, frontiers, history

router = APIRouter(tags=["history"], dependencies=[Depends(require_read)])

Format = Literal["json", "csv"]
T = TypeVar("T")
SideQ = Annotated[
    str,
    Query(
        min_length=1,
        max_length=64,
        pattern=r"^\s*[A-Za-z0-9][A-Za-z0-9._+\-]*\s*$",
        description="a run id (digits) or a TensorRT-LLM version, e.g. 1.2.0rc27",
    ),
]
NOISE_RULE = (
    "regression/improvement: |baseline_change_pct| > threshold_pct and > noise_pct; "
    "inconclusive: > threshold_pct but inside noise_pct (a re-run could give it). noise_pct "
    "is the band a re-run could move the change by (analysis.noise: run-to-run spread from "
    "repeats, the history since the last level change or a prior of alike configurations, "
    "noise_source says which; 1 false alarm in 10,000); where none is known, "
    f"{K.NOISE_Z:g} * sqrt(base_spread^2 + head_spread^2) of the within-run spreads"
)
_MAX_VERSIONS = 20
VerdictName = Literal[
    "regression",
    "improvement",
    "unchanged",
    "inconclusive",
    "new_failure",
    "newly_skipped",
    "recovered",
    "still_unsuccessful",
    "only_base",
    "only_head",
]


def _answer(call: Callable[[], T]) -> T:
    try:
        return call()
    except ServiceError as err:
        raise HTTPException(
            404 if isinstance(err, NoData) else 422,
            [{"loc": ["query", err.field], "msg": err.msg, "type": err.type}],
        ) from err


@router.get(
    "/compare",
    summary="Compare two runs or two versions: per configuration change",
    response_model=X.Compare,
    responses=merged(CSV, read_errors()),
)
def compare_view(
    scope: ScopeQ,
    data: Data,
    base: SideQ,
    head: SideQ,
    threshold_pct: Annotated[float, Query(ge=0, le=1000, allow_inf_nan=False)] = 5.0,
    repeats: RepeatsQ = "median",
    table: Literal["rows", "best_changes"] = "rows",
    verdict: Annotated[
        list[VerdictName] | None, Query(description="only rows with these verdicts")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200_000)] = 100_000,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    format: Format = "json",
) -> Response:
    """Per workload x configuration: base and head score (ms), change (%), noise band
    (%) and its source, verdict (regression / improvement / unchanged / new_failure /
    newly_skipped / recovered / still_unsuccessful / only_base / only_head); the
    workloads whose best configuration changed; counts per verdict (always over every
    row). ``verdict`` keeps rows of those verdicts, ``limit`` / ``offset`` page them
    (``total`` = rows after the verdict filter). ``format=csv`` with ``table=rows``
    (default) or ``table=best_changes``."""
    ans = _answer(
        lambda: compare(data, base, head, scope, threshold_pct=threshold_pct, repeats=repeats)
    )
    rows = ans.rows
    if verdict:
        rows = rows[rows[K.VERDICT].isin(verdict).to_numpy()]
    total = len(rows)
    rows = rows.iloc[offset : offset + limit]
    if format == "csv":
        frame = rows if table == "rows" else ans.best_changes
        name = ans.filename + ("" if table == "rows" else "-best-changes")
        return Response(
            csv_text(frame),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
        )
    return FastJSONResponse(
        {
            "base": ans.base.as_dict(),
            "head": ans.head.as_dict(),
            "threshold_pct": ans.threshold_pct,
            "noise_rule": NOISE_RULE,
            "counts": ans.counts,
            "dispatch": ans.routing.as_dict(),
            "repeats": ans.repeats,
            "provenance": ans.provenance,
            "filename": ans.filename + ".csv",
            "best_changes": records(ans.best_changes),
            "total": total,
            "limit": limit,
            "offset": offset,
            "items": records(rows),
        }
    )


@router.get(
    "/history/versions",
    summary="Versions and runs of a slice, in version order",
    response_model=X.HistoryVersions,
    responses=read_errors(),
)
def history_versions(scope: ScopeQ, data: Data) -> Response:
    """The slice's TensorRT-LLM versions ordered by version number, then run date
    (with first/last run date, run ids, commits) and its runs, newest first."""
    opts = _answer(lambda: compare_options(data, scope))
    return FastJSONResponse(
        {
            "dispatch": opts["routing"].as_dict(),
            "versions": to_json_records(opts["versions"]),
            "runs": to_json_records(opts["runs"]),
        }
    )


@router.get(
    "/history",
    summary="Score per workload x configuration over versions or runs",
    response_model=X.History,
    responses=merged(CSV, read_errors()),
)
def history_view(
    scope: ScopeQ,
    data: Data,
    num_tokens: Annotated[int | None, Query(ge=1, le=100_000_000)] = None,
    backend: Annotated[str | None, Query(max_length=64)] = None,
    comm: Annotated[str | None, Query(max_length=64)] = None,
    parallel_mode: Annotated[str | None, Query(max_length=64)] = None,
    config: Annotated[str | None, Query(max_length=200, description="config label")] = None,
    by: Literal["version", "run"] = "version",
    best_only: bool = False,
    repeats: RepeatsQ = "median",
    limit: Annotated[int, Query(ge=1, le=100_000)] = 10_000,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    format: Format = "json",
) -> Response:
    """One point per series (workload x configuration) and version (``by=version``,
    repeats pooled) or run (``by=run``), in series then version order, with the change
    against the series' previous point; ``best_only``: each workload's fastest
    configuration per version. Paged by ``limit`` / ``offset`` (``total`` says how many)."""
    flt = HistoryFilter(num_tokens, backend, comm, parallel_mode, config)
    ans = _answer(lambda: history(data, scope, flt, by=by, repeats=repeats, best_only=best_only))
    page = ans.items.iloc[offset : offset + limit]
    extra = {
        "by": ans.by,
        "repeats": ans.repeats,
        "dispatch": ans.routing.as_dict(),
        "provenance": ans.provenance,
        "versions": to_json_records(ans.versions),
        "total": len(ans.items),
        "limit": limit,
        "offset": offset,
    }
    return table_response(page, format, "history", extra)


@router.get(
    "/history/frontier",
    summary="The Pareto frontier of each version per slice",
    response_model=X.HistoryFrontier,
    responses=merged(CSV, read_errors()),
)
def history_frontier(
    scope: ScopeQ,
    data: Data,
    version: Annotated[
        list[Annotated[str, StringConstraints(max_length=100)]] | None,
        Query(max_length=50, description="only these versions"),
    ] = None,
    repeats: RepeatsQ = "median",
    format: Format = "json",
) -> Response:
    """Frontier points (tokens/s/GPU against score_ms) per slice (model, hardware,
    quant, world size, phase) and version, for an overlay with one trace per version."""
    versions = version or []
    if len(versions) > _MAX_VERSIONS or any(len(v) > 64 for v in versions):
        raise http_error(
            422,
            ["query", "version"],
            f"at most {_MAX_VERSIONS} versions of <= 64 characters",
            "too_many",
        )
    ans = _answer(lambda: frontiers(data, scope, versions or None, repeats))
    extra = {
        "dispatch": ans.routing.as_dict(),
        "provenance": ans.provenance,
        "versions": to_json_records(ans.versions),
        "x": "score_ms",
        "y": "tokens_per_s_per_gpu",
    }
    return table_response(ans.items, format, "history-frontier", extra)


def _slice_json(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "slice": {k: plain_value(v) for k, v in item["slice"].items()},
        "summary": {
            k: (v if isinstance(v, dict) else plain_value(v)) for k, v in item["summary"].items()
        },
        "at_latency": to_json_records(item["at_latency"]),
        "at_throughput": to_json_records(item["at_throughput"]),
    }


@router.get(
    "/history/frontier-change",
    summary="Frontier change between two versions",
    response_model=X.FrontierChange,
    responses=merged(CSV, read_errors()),
)
def history_frontier_change(
    scope: ScopeQ,
    data: Data,
    base: SideQ,
    head: SideQ,
    repeats: RepeatsQ = "median",
    format: Format = "json",
) -> Response:
    """Per slice: throughput change at fixed latency and latency change at fixed
    throughput (on the step frontier, medians over both frontiers' breakpoints, each
    grid given) and the hypervolume change (reference: 1.1 x the largest latency, 0
    tokens/s/GPU). ``format=csv``: one summary row per slice."""
    ans = _answer(lambda: frontier_change(data, scope, base, head, repeats))
    if format == "csv":
        name = f"frontier-change-{ans.base.label}-vs-{ans.head.label}".replace(" ", "")
        return table_response(ans.summary_frame(), "csv", name, {})
    return FastJSONResponse(
        {
            "base": ans.base.as_dict(),
            "head": ans.head.as_dict(),
            "dispatch": ans.routing.as_dict(),
            "provenance": ans.provenance,
            "method": "step frontier; medians over breakpoints; hypervolume reference "
            "(1.1 x max latency, 0)",
            "slices": [_slice_json(s) for s in ans.slices],
        }
    )
