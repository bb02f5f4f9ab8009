"""Disaggregated MoE deployment planner after MegaScale-Infer (arXiv 2504.02263).

``catalog`` holds editable model and GPU specs, ``perf_model`` the Ta/Te/Tc model and the
Te fit on stored bench_moe sweeps, ``plans`` the result shapes, ``search`` the plan search,
``colocated`` the co-located comparison, ``timeline`` the ping-pong schedule of one
plan. Derivations and assumptions: docs/planner.md.
"""

from analysis.planner.catalog import GPUS, MODELS, GPUSpec, ModelSpec
from analysis.planner.colocated import colocated_plan
from analysis.planner.perf_model import Efficiency, Fit, UtilCurve, user_fit
from analysis.planner.plans import (
    Budget,
    ColocatedPlan,
    ConstraintCheck,
    Plan,
    PlanResult,
    SearchOptions,
    Workload,
)
from analysis.planner.search import estimate_evaluations, search_heterogeneous, search_plans
from analysis.planner.te_fit import MIN_R2, TeFit, fit_expert_time, fit_te
from analysis.planner.timeline import timeline
from analysis.planner.tp_cost import TPCost

__all__ = [
    "GPUS",
    "MODELS",
    "ColocatedPlan",
    "ConstraintCheck",
    "MIN_R2",
    "Budget",
    "Efficiency",
    "Fit",
    "GPUSpec",
    "ModelSpec",
    "Plan",
    "PlanResult",
    "SearchOptions",
    "TPCost",
    "TeFit",
    "UtilCurve",
    "Workload",
    "colocated_plan",
    "estimate_evaluations",
    "fit_te",
    "fit_expert_time",
    "search_heterogeneous",
    "search_plans",
    "timeline",
    "user_fit",
]
