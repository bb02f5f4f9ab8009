"""The planner's answer: MegaScale-Infer-style disaggregated deployment plans.

:func:`run_plan` turns a :class:`~service.planner_request.PlanRequest` into one JSON-ready
document (best plan with its pipeline constraints, alternatives, the na sweep, the
co-located comparison, the ping-pong timeline, the Te fits and a verdict). ``POST
/api/v1/planner/plan`` returns it and the /planner page renders it (and offers it as
"Download plan JSON"), so both show the same plan. :func:`catalog` is ``GET
/api/v1/planner/catalog``.

Te (expert time) comes, per GPU, from the request's own coefficients, else a linear fit
on stored successful bench_moe sweeps of the same model shape on that GPU's hardware
label by the rule of ``analysis.planner.fit_rule``, else the roofline estimate
(``service.planner_fits``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis.planner import (
    GPUS,
    MODELS,
    Budget,
    Fit,
    PlanResult,
    search_heterogeneous,
    search_plans,
    timeline,
    user_fit,
)
from analysis.planner.colocated import SHARED_COSTS
from analysis.planner.feasibility import BROKEN_COLUMNS, CONSTRAINT_LABELS, REASON_LABELS
from analysis.planner.plans import ALTERNATIVE_COLUMNS, NA_SWEEP_COLUMNS
from analysis.tables import to_json_records
from db.store import Store
from service.frames import DashData
from service.planner_deploy import deployment
from service.planner_fits import CandidateLoader, check_attention_fits, expert_fits
from service.planner_fits import store_loader as store_loader  # the API's and tests' entry
from service.planner_near import near_best
from service.planner_request import (
    HETERO_MAX_GPUS,
    MAX_ESTIMATED_EVALUATIONS,
    MAX_EVALUATIONS,
    MAX_GPUS,
    WALL_BUDGET_S,
    PlanRequest,
    Resolved,
    resolve,
)
from service.planner_sensitivity import sensitivity


def search(
    req: PlanRequest, res: Resolved, efits: Mapping[str, Fit], budget: Budget | None = None
) -> PlanResult:
    """Homogeneous: each listed GPU on its own (same-type pairs), the best kept (plans
    meeting the pipeline constraints first, then tokens/s per cost; first listed on a
    tie), alternatives of every GPU merged in that order. Heterogeneous: every
    (attention, expert) pair of the listed GPUs. ``budget`` is shared by all GPUs."""
    afits = {
        (a.gpu.upper(), a.tpa): user_fit(a.slope_ms, a.intercept_ms, "given in the request")
        for a in req.attention_fits
    }
    if req.mode == "heterogeneous":
        return search_heterogeneous(
            res.model,
            res.workload,
            list(res.gpus),
            options=res.options,
            expert_fits=efits,
            attention_fits=afits,
            budget=budget,
        )
    results = [
        search_plans(
            res.model,
            res.workload,
            g,
            options=res.options,
            expert_fits=efits,
            attention_fits=afits,
            budget=budget,
        )
        for g in res.gpus
    ]
    if len(results) == 1:
        return results[0]
    with_plan = [r for r in results if r.best is not None]
    if with_plan:
        chosen = max(with_plan, key=lambda r: r.best.tput_per_cost)  # type: ignore[union-attr]
    else:
        chosen = next((r for r in results if r.colocated is not None), results[0])
    alts = _merged([r.alternatives for r in results]) if with_plan else chosen.alternatives
    broken = _merged([r.broken for r in results])
    notes = tuple(dict.fromkeys(n for r in results for n in r.notes))
    truncated = any(r.truncated for r in results)
    evals = max(r.evaluations for r in results)  # the shared budget's running count
    binding = None
    if not with_plan:
        codes = list(dict.fromkeys(r.binding[0] for r in results if r.binding))
        binding = (
            codes[0] if len(codes) == 1 else "several",
            "; ".join(
                f"{g.name}: {r.binding[1]}"
                for g, r in zip(res.gpus, results, strict=True)
                if r.binding
            ),
        )
    return PlanResult(
        chosen.best,
        alts,
        chosen.na_sweep,
        chosen.colocated,
        notes,
        truncated,
        evals,
        broken,
        binding,
    )


def _merged(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Plans of several searches in one frame, best tokens/s per cost first."""
    kept = [f for f in frames if len(f)]
    if not kept:
        return frames[0] if frames else pd.DataFrame()
    both = pd.concat(kept, ignore_index=True)
    return both.sort_values("tput_per_cost", ascending=False, kind="stable").reset_index(drop=True)


def finite(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, str | bytes):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _constraints(plan: Any) -> list[dict[str, Any]]:
    return [
        {"label": CONSTRAINT_LABELS.get(c.name, c.name), **dataclasses.asdict(c)}
        for c in plan.constraints
    ]


def verdict(result: PlanResult) -> str:
    """One sentence: does disaggregation pay against the co-located deployment?"""
    gain = result.disaggregation_gain
    if result.best is None:
        code, why = result.binding or ("slo", "no plan fits")
        label = REASON_LABELS.get(code, code)
        if result.colocated is not None:
            return (
                f"no disaggregated plan fits ({label}: {why}); the co-located deployment on "
                f"{result.colocated.gpus} {result.colocated.gpu} does"
            )
        return f"nothing fits ({label}): {why}"
    if gain is None:
        return "no co-located deployment on the same GPUs meets the SLO: disaggregation wins"
    if gain >= 1:
        return f"disaggregation pays: {gain:.2f}× the co-located throughput per cost"
    return (
        f"disaggregation does not pay: {gain:.2f}× the co-located throughput per cost "
        "(deploy co-located)"
    )


def run_plan(
    req: PlanRequest,
    load: CandidateLoader | None,
    cancelled: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """The whole planner answer as a JSON-ready dict (also the exported document):
    non-finite numbers are None; ``alternatives`` holds the best ``req.top`` plans
    (constraint-meeting plans first, then tokens/s per cost; ``n_alternatives`` counts
    all); ``near_best`` summarises the plans within ``options.near_best_pct`` % of the
    best. ``best`` is None when nothing fits memory and the SLO. The search stops at
    :data:`MAX_EVALUATIONS` evaluations, :data:`WALL_BUDGET_S` seconds or when
    ``cancelled()`` turns true, and then says ``truncated``. Raises
    :class:`~service.planner_request.PlanInputError` for a request
    :func:`~service.planner_request.resolve` refuses (including one over the cap)."""
    started = time.perf_counter()
    res = resolve(req)
    check_attention_fits(req, res)
    efits, fit_records = expert_fits(req, res, load)
    budget = Budget(MAX_EVALUATIONS, time.monotonic() + WALL_BUDGET_S, cancelled)
    result = search(req, res, efits, budget)
    best = result.best
    best_body = None
    tl: list[dict[str, Any]] = []
    if best is not None:
        best_body = dataclasses.asdict(best)
        best_body["constraints"] = _constraints(best)
        best_body["all_constraints_met"] = all(c.met for c in best.constraints)
        tl = to_json_records(timeline(best, req.timeline_layers))
    alts = result.alternatives
    payload: dict[str, Any] = {
        "request": req.model_dump(mode="json"),
        "model": dataclasses.asdict(res.model),
        "gpus": [dataclasses.asdict(g) for g in res.gpus],
        "workload": dataclasses.asdict(res.workload),
        "mode": req.mode,
        "expert_fits": fit_records,
        "best": best_body,
        "colocated": dataclasses.asdict(result.colocated) if result.colocated else None,
        "colocated_costs": list(SHARED_COSTS),
        "disaggregation_gain": result.disaggregation_gain,
        "verdict": verdict(result),
        "n_alternatives": len(alts),
        "alternative_columns": list(ALTERNATIVE_COLUMNS),
        "alternatives": to_json_records(alts.head(req.top)),
        "n_broken_plans": len(result.broken),
        "broken_plan_columns": list(BROKEN_COLUMNS),
        "broken_plans": to_json_records(result.broken.head(req.top)),
        "binding": _binding(result),
        "na_sweep_columns": list(NA_SWEEP_COLUMNS),
        "na_sweep": to_json_records(result.na_sweep),
        "timeline": tl,
        "notes": list(result.notes),
        "warnings": _warnings(result, fit_records),
        "near_best": near_best(alts, req.options.near_best_pct),
        "truncated": result.truncated,
        "truncated_reason": budget.reason,
        "evaluations": result.evaluations,
        "estimated_evaluations": res.estimated_evaluations,
        "limits": limits(),
        "elapsed_ms": (time.perf_counter() - started) * 1e3,
    }
    payload["deployment"] = deployment(payload)
    payload["sensitivity"] = (
        sensitivity(
            res,
            best_body,
            efits,
            lambda r, f, b: search(req, r, f, b),
            lambda: Budget(MAX_EVALUATIONS, time.monotonic() + WALL_BUDGET_S, cancelled),
        )
        if req.sensitivity
        else []
    )
    return finite(payload)  # type: ignore[no-any-return]


def _binding(result: PlanResult) -> dict[str, str] | None:
    """What keeps every plan out (None when a plan is offered): reason code, its label
    (TP choice, memory, GPU count, SLO, Te fit range, pipeline constraints), sentence."""
    if result.best is not None or result.binding is None:
        return None
    code, why = result.binding
    return {"reason": code, "label": REASON_LABELS.get(code, code), "message": why}


def limits() -> dict[str, Any]:
    """The per-request work limits (also in the catalogue)."""
    return {
        "max_gpus": MAX_GPUS,
        "heterogeneous_max_gpus": HETERO_MAX_GPUS,
        "max_estimated_evaluations": MAX_ESTIMATED_EVALUATIONS,
        "max_evaluations": MAX_EVALUATIONS,
        "wall_budget_s": WALL_BUDGET_S,
    }


def _warnings(result: PlanResult, fit_records: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the page shows in its warning box: refused or forced fits, a truncated
    search, a best plan that breaks a pipeline constraint, a best plan outside the batch
    range its Te was fitted on."""
    out = [f"Te on {r['gpu']}: {r['warning']}" for r in fit_records if r.get("warning")]
    out += [
        f"Te on {r['gpu']}: the fit departs from the rule: {d}"
        for r in fit_records
        for d in r.get("rule_deviations") or []
    ]
    if result.truncated:
        out.append("the search hit its work budget: the plan is the best found so far")
    best = result.best
    if best is None:
        return out
    for r in fit_records:
        if r["gpu"] == best.expert_gpu and best.extrapolated:
            out.append(
                f"Te on {r['gpu']} is extrapolated: the plan's {best.be:.0f} tokens per "
                f"expert lie outside the fitted {best.te_be_min:.0f}-{best.te_be_max:.0f} "
                f"(plans are limited to {r['plan_be_min']:.1f}-{r['plan_be_max']:.0f})"
            )
    return out


def plan_for(data: DashData, req: PlanRequest) -> dict[str, Any]:
    """:func:`run_plan` over ``data``'s store, cached per request and store version (the
    same request answers with the same document object until an upload)."""
    key = ("planner", json.dumps(req.model_dump(mode="json"), sort_keys=True))
    return data.cached(key, lambda: run_plan(req, store_loader(data.store)))


def export_filename(payload: Mapping[str, Any]) -> str:
    """``plan-<model>-<attention GPU>-<expert GPU>.json`` (the listed GPUs when there is
    no best plan), with anything but letters, digits, ``._-`` replaced by ``_``."""
    best = payload.get("best") or {}
    gpus = (
        f"{best.get('attention_gpu')}-{best.get('expert_gpu')}"
        if best
        else "-".join(g["name"] for g in payload.get("gpus", []))
    )
    stem = f"plan-{payload.get('model', {}).get('name', 'model')}-{gpus}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", stem)[:120] + ".json"


def catalog(store: Store | None) -> dict[str, Any]:
    """Models and GPUs of the catalogue, the modes, limits and request defaults; per
    model, the stored sweeps of its shape (hardware, quant, runs)."""
    runs = store.list_runs(limit=10_000).items if store is not None else pd.DataFrame()
    shapes: dict[tuple[int, int, int, int], list[dict[str, Any]]] = {}
    if len(runs):
        cols = [C.NUM_EXPERTS, C.TOP_K, C.HIDDEN_SIZE, C.INTERMEDIATE_SIZE]
        ok = runs.dropna(subset=cols)
        grouped = ok.groupby([*cols, C.HARDWARE, C.QUANT], dropna=False).size()
        for (e, k, h, hf, hw, q), n in grouped.items():
            shapes.setdefault((int(e), int(k), int(h), int(hf)), []).append(
                {"hardware": hw, "quant": q, "runs": int(n)}
            )
    models = []
    for m in MODELS.values():
        key = (m.num_experts, m.top_k, m.hidden_size, m.intermediate_size)
        models.append({**dataclasses.asdict(m), "stored_sweeps": shapes.get(key, [])})
    body: dict[str, Any] = finite(
        {
            "models": models,
            "gpus": [dataclasses.asdict(g) for g in GPUS.values()],
            "modes": ["homogeneous", "heterogeneous"],
            "limits": limits(),
            "defaults": PlanRequest().model_dump(mode="json"),
        }
    )
    return body


def stored_quants(data: DashData) -> list[str]:
    """Quants of the stored sweeps, sorted (the page's Te-fit quant choices); empty when
    the store is empty or cannot be read."""
    try:
        cov = data.coverage()
    except Exception:  # noqa: BLE001 - an empty or unavailable store shows no choices
        return []
    return sorted({str(q) for q in cov[C.QUANT].dropna()}) if len(cov) else []
