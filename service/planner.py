"""The planner's answer: MegaScale-Infer-style disaggregated deployment plans.

:func:`run_plan` turns a :class:`~service.planner_request.PlanRequest` into one JSON-ready
document (best plan with its pipeline constraints, alternatives, the na sweep, the
co-located comparison, the ping-pong timeline, the Te fits and a verdict). ``POST
/api/v1/planner/plan`` returns it and the /planner page renders it (and offers it as
"Download plan JSON"), so both show the same plan. :func:`catalog` is ``GET
/api/v1/planner/catalog``.

Te (expert time) comes, per GPU, from the request's own coefficients, else a linear fit
on stored successful bench_moe sweeps of the same model shape on that GPU's hardware
label, else the roofline estimate.
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
    GPUSpec,
    ModelSpec,
    PlanResult,
    TeFit,
    fit_te,
    search_heterogeneous,
    search_plans,
    timeline,
    user_fit,
)
from analysis.planner.colocated import SHARED_COSTS
from analysis.planner.feasibility import BROKEN_COLUMNS, CONSTRAINT_LABELS, REASON_LABELS
from analysis.planner.fit_rule import (
    EXTRAPOLATION_FACTOR,
    be_limits,
    deviations,
    implausible,
    implausible_attention,
)
from analysis.planner.perf_model import expert_time_roofline
from analysis.planner.plans import ALTERNATIVE_COLUMNS, NA_SWEEP_COLUMNS
from analysis.tables import to_json_records
from db.store import Store
from service.frames import DashData
from service.planner_deploy import deployment
from service.planner_near import near_best
from service.planner_request import (
    HETERO_MAX_GPUS,
    MAX_ESTIMATED_EVALUATIONS,
    MAX_EVALUATIONS,
    MAX_GPUS,
    WALL_BUDGET_S,
    PlanInputError,
    PlanRequest,
    Resolved,
    resolve,
)
from service.planner_sensitivity import sensitivity

# Candidate columns the Te fit reads (run columns always come with candidate_frame).
FIT_COLUMNS: tuple[str, ...] = (
    C.STATUS,
    C.NUM_TOKENS,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.SCORE_MS,
    C.CUDA_GRAPH,
    C.DISPATCH,
    C.ATTENTION_DP,
    C.BACKEND,
)

CandidateLoader = Callable[[ModelSpec, Sequence[str]], pd.DataFrame]


def store_loader(store: Store) -> CandidateLoader:
    """A loader of the stored successful candidates of one model shape (experts, top-k,
    hidden and expert width) on the given hardware labels, with :data:`FIT_COLUMNS`."""

    def load(model: ModelSpec, labels: Sequence[str]) -> pd.DataFrame:
        filters = {
            C.NUM_EXPERTS: model.num_experts,
            C.TOP_K: model.top_k,
            C.HIDDEN_SIZE: model.hidden_size,
            C.INTERMEDIATE_SIZE: model.intermediate_size,
            C.HARDWARE: sorted(set(labels)),
        }
        return store.candidate_frame(filters=filters, success_only=True, columns=FIT_COLUMNS)

    return load


def fit_record(
    gpu: GPUSpec, fit: Fit, label: str, roofline: Fit, te: TeFit | None = None
) -> dict[str, Any]:
    """One GPU's Te fit as a JSON record, next to the roofline's coefficients, with its
    provenance when it came from stored sweeps: the group (quant, attention mode, EP size,
    backend), whether it is used, the warning, the refused candidate's R² and the points
    (be, t_ms, predicted_ms, residual_ms) for the points-vs-fit chart."""
    cand = te.candidate if te is not None else None
    rule = te.rule if te is not None else None
    lo, hi = be_limits(
        fit.x_min, fit.x_max, rule.extrapolation_factor if rule else EXTRAPOLATION_FACTOR
    )
    return {
        "gpu": gpu.name,
        "hardware_label": label,
        "source": fit.source,
        "slope_ms": fit.slope_ms,
        "intercept_ms": fit.intercept_ms,
        "n_points": fit.n_points,
        "r2": fit.r2,
        "residual_std_ms": fit.residual_std_ms,
        "residual_max_ms": fit.residual_max_ms,
        "roofline_slope_ms": roofline.slope_ms,
        "roofline_intercept_ms": roofline.intercept_ms,
        "overhead_ms": fit.overhead_ms,
        "note": fit.note,
        "fitted_be_min": cand.x_min if cand else None,
        "fitted_be_max": cand.x_max if cand else None,
        "candidate_r2": cand.r2 if cand else None,
        "candidate_slope_ms": cand.slope_ms if cand else None,
        "candidate_intercept_ms": cand.intercept_ms if cand else None,
        "group": te.group if te is not None else {},
        "rule": rule.as_dict() if rule is not None else None,
        "rule_text": rule.describe() if rule is not None else "",
        "rule_deviations": deviations(rule) if rule is not None else [],
        "plan_be_min": lo if fit.source == "fit" else None,
        "plan_be_max": hi if fit.source == "fit" else None,
        "used": te.used if te is not None else fit.source != "roofline",
        "warning": te.warning if te is not None else "",
        "points": to_json_records(te.points) if te is not None else [],
    }


def expert_fits(
    req: PlanRequest, res: Resolved, load: CandidateLoader | None
) -> tuple[dict[str, Fit], list[dict[str, Any]]]:
    """Te per GPU: the request's own coefficients, else a fit on stored sweeps, else the
    roofline (fit_expert_time's fallback). Returns the fits and their JSON records, in
    the request's GPU order. ``load`` None (or ``fit.use_stored`` false) skips the store."""
    labels = {g.name: req.fit.hardware.get(g.name, g.name).upper() for g in res.gpus}
    frame = None
    if req.fit.use_stored and load is not None:
        needed = [g.name for g in res.gpus if g.name not in req.expert_fits]
        frame = load(res.model, [labels[n] for n in needed]) if needed else None
    fits: dict[str, Fit] = {}
    records = []
    for gpu in res.gpus:
        roof = expert_time_roofline(res.model, gpu, res.options.efficiency)
        own = req.expert_fits.get(gpu.name)
        te = None
        if own is not None:
            why = implausible(own.slope_ms, own.intercept_ms, res.model, gpu)
            if why:
                raise PlanInputError(["expert_fits", gpu.name], "; ".join(why))
            fit = user_fit(own.slope_ms, own.intercept_ms, note="given in the request")
        elif frame is not None:
            te = fit_te(
                frame,
                res.model,
                gpu,
                hardware=labels[gpu.name],
                quant=req.fit.quant,
                attention_dp=req.fit.attention_dp,
                ep_size=req.fit.ep_size,
                backend=req.fit.backend,
                be_min=req.fit.be_min,
                be_max=req.fit.be_max,
                min_points=req.fit.min_points,
                min_r2=req.fit.min_r2,
                force=req.fit.force,
                efficiency=res.options.efficiency,
            )
            fit = te.fit
        else:
            fit = dataclasses.replace(roof, note=roof.note + " (stored sweeps not used)")
        fits[gpu.name] = fit
        records.append(fit_record(gpu, fit, labels[gpu.name], roof, te))
    return fits, records


def check_attention_fits(req: PlanRequest, res: Resolved) -> None:
    """Refuse (:class:`PlanInputError`, 422) a caller's attention law that is physically
    impossible for its GPU (``fit_rule.implausible_attention``)."""
    by_name = {g.name: g for g in res.gpus}
    for i, af in enumerate(req.attention_fits):
        gpu = by_name.get(af.gpu.upper())
        if gpu is None:
            continue
        why = implausible_attention(
            af.slope_ms, af.intercept_ms, res.model, gpu, af.tpa, res.workload.seq_len
        )
        if why:
            raise PlanInputError(["attention_fits", i], "; ".join(why))


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
