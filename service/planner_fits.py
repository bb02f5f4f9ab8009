"""The planner's Te per GPU: the request's own law, a fit on stored sweeps by the rule
of ``analysis.planner.fit_rule``, or the roofline; each as a JSON record with its
provenance. Also the physical checks of a caller's own Ta and Te laws (422).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis.planner import Fit, GPUSpec, ModelSpec, TeFit, fit_te, user_fit
from analysis.planner.fit_rule import (
    EXTRAPOLATION_FACTOR,
    be_limits,
    deviations,
    implausible,
    implausible_attention,
)
from analysis.planner.perf_model import expert_time_roofline
from analysis.tables import to_json_records
from db.store import Store
from service.planner_request import PlanInputError, PlanRequest, Resolved

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
