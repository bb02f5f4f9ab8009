"""Disaggregated MoE deployment planner after MegaScale-Infer (arXiv 2504.02263).

``catalog`` holds editable model and GPU specs, ``perf_model`` the Ta/Te/Tc model and the
Te fit on stored bench_moe sweeps, ``plans`` the result shapes, ``search`` the plan search,
``colocated`` the co-located comparison, ``timeline`` the ping-pong schedule of one
plan. Derivations and assumptions: docs/planner.md.
"""

from analysis.planner.catalog import GPUS, MODELS, GPUSpec, ModelSpec
from analysis.planner.colocated import colocated_plan
from analysis.planner.perf_model import Efficiency, Fit, UtilCurve, fit_expert_time, user_fit
from analysis.planner.plans import (
    ColocatedPlan,
    ConstraintCheck,
    Plan,
    PlanResult,
    SearchOptions,
    Workload,
)
from analysis.planner.search import search_heterogeneous, search_plans
from analysis.planner.timeline import timeline

__all__ = [
    "GPUS",
    "MODELS",
    "ColocatedPlan",
    "ConstraintCheck",
    "Efficiency",
    "Fit",
    "GPUSpec",
    "ModelSpec",
    "Plan",
    "PlanResult",
    "SearchOptions",
    "UtilCurve",
    "Workload",
    "colocated_plan",
    "fit_expert_time",
    "search_heterogeneous",
    "search_plans",
    "timeline",
    "user_fit",
]
