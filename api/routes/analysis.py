"""/api/v1 analysis endpoints: pareto, best, recommendation, thresholds, agreement, export.

Every number comes from ``analysis/`` over ``Store.candidate_frame``; every answer carries
provenance (the runs and TensorRT-LLM versions it was computed from). Tables come as
JSON (default) or CSV (``format=csv``).
"""

from __future__ import annotations

import threading
import weakref
from typing import Annotated, Any, Literal

import pandas as pd
from fastapi import APIRouter, Depends, HTTPException, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from analysis import columns as C
from analysis.agreement import agreement_report
from analysis.best import best_by_workload
from analysis.derived import add_derived
from analysis.export import Provenance, env_line, recommended_config_yaml
from analysis.measured import MeasuredPick, nearest_measured_best
from analysis.pareto import pareto_frontier
from analysis.tables import to_csv_text, to_json_records
from analysis.thresholds import GuideCheck, derive_guide_thresholds, thresholds_from_check
from analysis.tree import Deployment, Recommendation, Thresholds, recommend
from api.auth import get_store, require_read
from api.jsonio import FastJSONResponse
from db.store import Store

router = APIRouter(tags=["analysis"], dependencies=[Depends(require_read)])

Format = Literal["json", "csv"]
Phase = Literal["decode", "prefill"]
Attention = Literal["dp", "tp"]


class Scope(BaseModel):
    """Which stored candidates an analysis looks at (all given filters must match)."""

    # other query parameters of the endpoint share the query string
    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(None, max_length=100, description="bench_moe model name")
    hardware: str | None = Field(None, max_length=32)
    quant: str | None = Field(None, max_length=64)
    world_size: int | None = Field(None, ge=1, le=100000)
    phase: Phase | None = Field(None, description="decode = CUDA graph on, prefill = off")
    attention: Attention | None = None
    run_id: list[int] | None = Field(None, description="restrict to these runs")
    include_synthetic: bool = Field(True, description="include generated demo data")

    def filters(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, col in (
            ("model", C.MODEL),
            ("hardware", C.HARDWARE),
            ("quant", C.QUANT),
            ("world_size", C.WORLD_SIZE),
        ):
            value = getattr(self, name)
            if value is not None:
                out[col] = value.upper() if name == "hardware" else value
        if self.phase is not None:
            out[C.CUDA_GRAPH] = self.phase == "decode"
        if self.attention is not None:
            out[C.ATTN] = "D" if self.attention == "dp" else "T"
        if not self.include_synthetic:
            out[C.SYNTHETIC] = False
        return out


def _frame(store: Store, scope: Scope, success_only: bool = True) -> pd.DataFrame:
    df = store.candidate_frame(
        run_ids=scope.run_id,
        filters=scope.filters(),
        success_only=success_only,
        columns=[c for c in C.CANDIDATE_COLUMNS if c not in (C.PER_RANK_JSON, C.EXTRA_JSON)],
    )
    return add_derived(df) if not df.empty else df


def _provenance(df: pd.DataFrame) -> dict[str, Any]:
    if df.empty:
        return {"run_ids": [], "trtllm_versions": [], "n_candidates": 0, "synthetic": False}
    return {
        "run_ids": sorted(int(x) for x in df[C.RUN_ID].unique()),
        "trtllm_versions": sorted(str(x) for x in df[C.TRTLLM_VERSION].dropna().unique()),
        "n_candidates": int(len(df)),
        "synthetic": bool(df[C.SYNTHETIC].fillna(False).astype(bool).any()),
    }


def _table(df: pd.DataFrame, fmt: Format, name: str, extra: dict[str, Any]) -> Response:
    if fmt == "csv":
        return Response(
            to_csv_text(df),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
        )
    return FastJSONResponse({**extra, "items": to_json_records(df)})


ScopeQ = Annotated[Scope, Query()]


@router.get("/pareto", summary="Pareto frontier: tokens/s/GPU against latency or tokens per rank")
def pareto(
    scope: ScopeQ,
    store: Store = Depends(get_store),
    x: Literal["score_ms", "activated_tokens_per_rank"] = "score_ms",
    format: Format = "json",
) -> Response:
    df = _frame(store, scope)
    group = [C.MODEL, C.HARDWARE, C.QUANT, C.WORLD_SIZE, C.PHASE]
    front = (
        pareto_frontier(
            df,
            x=x,
            y=C.TOKENS_PER_S_PER_GPU,
            minimize_x=x == C.SCORE_MS,
            maximize_y=True,
            group_cols=group,
        )
        if not df.empty
        else df
    )
    cols = [
        *group,
        x,
        C.TOKENS_PER_S_PER_GPU,
        C.SCORE_MS,
        C.NUM_TOKENS,
        C.ACTIVATED_TOKENS_PER_RANK,
        C.BACKEND,
        C.COMM,
        C.PARALLEL_MODE,
        C.MOE_EP_SIZE,
        C.MOE_TP_SIZE,
        C.CUDA_GRAPH,
        C.RUN_ID,
        C.CANDIDATE_INDEX,
    ]
    cols = list(dict.fromkeys(cols))
    out = front[cols] if not front.empty else pd.DataFrame(columns=cols)
    return _table(
        out, format, "pareto", {"x": x, "y": C.TOKENS_PER_S_PER_GPU, "provenance": _provenance(df)}
    )


@router.get("/best", summary="Best configuration per workload with runner-up, margin, tie flag")
def best(
    scope: ScopeQ,
    store: Store = Depends(get_store),
    grouping: Literal["bench_moe", "dashboard"] = "dashboard",
    format: Format = "json",
) -> Response:
    df = _frame(store, scope)
    table = best_by_workload(df, grouping=grouping) if not df.empty else pd.DataFrame()
    if not table.empty and grouping == "dashboard":
        table = _with_axes(table, df)
    return _table(
        table, format, f"best_{grouping}", {"grouping": grouping, "provenance": _provenance(df)}
    )


def _with_axes(table: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """Attach activated_tokens_per_rank and dispatch_kb of each workload's winner."""
    key = [C.RUN_ID, C.CANDIDATE_INDEX]
    axes = df[[*key, C.ACTIVATED_TOKENS_PER_RANK, C.DISPATCH_KB]]
    merged = table.merge(
        axes, left_on=["best_run_id", "best_candidate_index"], right_on=key, how="left"
    )
    return merged.drop(columns=key)


class DeploymentQuery(BaseModel):
    """A deployment to recommend for. The model shape comes from the stored runs of
    ``model`` unless num_experts/top_k/hidden_size are all given."""

    # other query parameters of the endpoint share the query string
    model_config = ConfigDict(extra="ignore")

    hardware: str = Field(..., max_length=32, description="GB300, B300, H200 …")
    quant: str = Field(
        ..., max_length=64, description="NVFP4, W4A8_MXFP4_MXFP8, FP8_BLOCK_SCALES …"
    )
    world_size: int = Field(..., ge=1, le=100000)
    attention: Attention = "dp"
    phase: Phase = "decode"
    num_tokens: int = Field(..., ge=1, le=10_000_000, description="bench_moe num_tokens")
    model: str | None = Field(None, max_length=100)
    num_experts: int | None = Field(None, ge=1, le=100000)
    top_k: int | None = Field(None, ge=1, le=1024)
    hidden_size: int | None = Field(None, ge=1, le=1_000_000)
    thresholds: Literal["published", "derived"] = "published"


def _shape(store: Store, q: DeploymentQuery) -> tuple[int, int, int]:
    if q.num_experts and q.top_k and q.hidden_size:
        return q.num_experts, q.top_k, q.hidden_size
    if q.model:
        runs = store.list_runs(model=q.model, limit=1).items
        if not runs.empty:
            r = runs.iloc[0]
            return int(r[C.NUM_EXPERTS]), int(r[C.TOP_K]), int(r[C.HIDDEN_SIZE])
        from analysis.planner import MODELS

        spec = MODELS.get(q.model)
        if spec is not None:
            return spec.num_experts, spec.top_k, spec.hidden_size
        raise HTTPException(
            422,
            [
                {
                    "loc": ["query", "model"],
                    "type": "unknown",
                    "msg": f"unknown model {q.model!r}: no stored runs and not in "
                    "the built-in table; give num_experts, top_k and hidden_size",
                }
            ],
        )
    raise HTTPException(
        422,
        [
            {
                "loc": ["query", "model"],
                "type": "missing",
                "msg": "give model, or num_experts + top_k + hidden_size",
            }
        ],
    )


# One entry per store (several apps, e.g. tests, may live in one process), holding the
# run-set key it was computed for and the result.
_derived_cache: weakref.WeakKeyDictionary[
    Store, tuple[tuple[int, int], tuple[GuideCheck, Thresholds]]
] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def _derived(store: Store) -> tuple[GuideCheck, Thresholds]:
    """Thresholds re-derived from every stored success candidate, cached until the set of
    runs changes."""
    runs = store.list_runs(limit=1)
    top = int(runs.items[C.RUN_ID].iloc[0]) if not runs.items.empty else 0
    key = (runs.total, top)
    with _cache_lock:
        cached = _derived_cache.get(store)
    if cached is not None and cached[0] == key:
        return cached[1]
    check = derive_guide_thresholds(_frame(store, Scope()))
    value = (check, thresholds_from_check(check))
    with _cache_lock:
        _derived_cache[store] = (key, value)
    return value


def _deployment(store: Store, q: DeploymentQuery) -> Deployment:
    experts, top_k, hidden = _shape(store, q)
    return Deployment(
        hardware=q.hardware.upper(),
        num_experts=experts,
        top_k=top_k,
        hidden_size=hidden,
        quant=q.quant,
        world_size=q.world_size,
        attention_dp=q.attention == "dp",
        cuda_graph=q.phase == "decode",
        num_tokens=q.num_tokens,
        model=q.model,
    )


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
    }


def _measured(store: Store, dep: Deployment, q: DeploymentQuery) -> MeasuredPick | None:
    if not q.model:
        return None
    scope = Scope(model=q.model, hardware=dep.hardware, quant=dep.quant, world_size=dep.world_size)
    return nearest_measured_best(_frame(store, scope), dep)


@router.get("/recommendation", summary="The guide's tree and the measured best for a deployment")
def recommendation(
    q: Annotated[DeploymentQuery, Query()], store: Store = Depends(get_store)
) -> Response:
    dep = _deployment(store, q)
    th = _derived(store)[1] if q.thresholds == "derived" else Thresholds()
    tree = recommend(dep, th)
    pick = _measured(store, dep, q)
    data: dict[str, Any] | None = None
    if pick is not None:
        data = {
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
            "agrees_with_tree": pick.recommendation.backend == tree.backend,
        }
    return FastJSONResponse(
        {
            "deployment": {
                **q.model_dump(),
                "num_experts": dep.num_experts,
                "top_k": dep.top_k,
                "hidden_size": dep.hidden_size,
            },
            "thresholds": q.thresholds,
            "tree": _rec_json(tree),
            "measured": data,
        }
    )


@router.get("/export", summary="Recommended config as trtllm-serve YAML or the env line")
def export(
    q: Annotated[DeploymentQuery, Query()],
    store: Store = Depends(get_store),
    source: Literal["tree", "measured"] = "tree",
    format: Literal["yaml", "env", "json"] = "yaml",
) -> Response:
    dep = _deployment(store, q)
    if source == "measured":
        pick = _measured(store, dep, q)
        if pick is None:
            raise HTTPException(
                404,
                [
                    {
                        "loc": ["query", "source"],
                        "type": "no_data",
                        "msg": "no measured candidates for this deployment; "
                        "give model and check hardware/quant/world_size",
                    }
                ],
            )
        rec = pick.recommendation
        prov = Provenance(
            run_ids=pick.run_ids,
            trtllm_version=", ".join(pick.trtllm_versions) or None,
            produced_by="moedash measured best (nearest stored workload)",
        )
    else:
        th = _derived(store)[1] if q.thresholds == "derived" else Thresholds()
        rec = recommend(dep, th)
        prov = Provenance(produced_by=f"moedash decision tree ({q.thresholds} thresholds)")
    if format == "json":
        return FastJSONResponse(_rec_json(rec))
    if format == "env":
        return Response((env_line(rec) or "") + "\n", media_type="text/plain")
    return Response(
        recommended_config_yaml(rec, prov),
        media_type="application/yaml",
        headers={"Content-Disposition": 'attachment; filename="moe_config.yaml"'},
    )


@router.get("/thresholds", summary="The guide's thresholds: published vs re-derived from the data")
def thresholds(
    store: Store = Depends(get_store),
    format: Format = "json",
    evidence: bool = False,
) -> Response:
    check, _ = _derived(store)
    table = check.evidence if evidence else check.table
    return _table(table, format, "thresholds_evidence" if evidence else "thresholds", {})


@router.get("/agreement", summary="Tree pick vs measured best for every stored workload")
def agreement(
    scope: ScopeQ,
    store: Store = Depends(get_store),
    detail: bool = False,
    thresholds: Literal["published", "derived"] = "published",
    format: Format = "json",
) -> Response:
    df = _frame(store, scope)
    if df.empty:
        return _table(pd.DataFrame(), format, "agreement", {"provenance": _provenance(df)})
    th = _derived(store)[1] if thresholds == "derived" else None
    rows, summary = agreement_report(df, th)
    out = rows if detail else summary
    return _table(
        out, format, "agreement_detail" if detail else "agreement", {"provenance": _provenance(df)}
    )
