"""Answers of /planner/*: MegaScale-Infer-style disaggregated deployment plans."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api.schemas.common import Open, Row, examples

_LIMITS: dict[str, Any] = {
    "max_gpus": 10,
    "heterogeneous_max_gpus": 4,
    "max_estimated_evaluations": 40000,
    "max_evaluations": 80000,
    "wall_budget_s": 6.0,
}
_H20: dict[str, Any] = {
    "name": "H20",
    "memory_gb": 96,
    "bandwidth_gb_s": 4096,
    "bf16_tflops": 148,
    "price": 1.85,
    "power_w": 500,
    "nic_gbps": 200,
    "intra_node_gb_s": 450,
    "gpus_per_node": 8,
    "source": "MegaScale-Infer GPU table",
}
_MIXTRAL: dict[str, Any] = {
    "name": "mixtral_8x22b",
    "num_experts": 8,
    "top_k": 2,
    "hidden_size": 6144,
    "intermediate_size": 16384,
    "num_layers": 56,
}


class CatalogModel(Row):
    name: str
    num_experts: int | None = None
    top_k: int | None = None
    hidden_size: int | None = None
    intermediate_size: int | None = None
    num_layers: int | None = None
    stored_sweeps: list[Any] | None = Field(None, description="Stored sweeps that can fit Te")


class CatalogGpu(Row):
    name: str
    memory_gb: float | None = Field(None, description="GB")
    bandwidth_gb_s: float | None = Field(None, description="Memory bandwidth, GB/s")
    bf16_tflops: float | None = Field(None, description="TFLOPS")
    price: float | None = Field(None, description="Relative cost per GPU-hour")


class Catalog(Open):
    """The editable model and GPU catalogues, the limits and the request defaults."""

    model_config = examples(
        {
            "models": [{**_MIXTRAL, "stored_sweeps": []}],
            "gpus": [_H20],
            "modes": ["homogeneous", "heterogeneous"],
            "limits": _LIMITS,
            "defaults": {"model": "mixtral_8x22b", "gpus": ["H20"], "mode": "homogeneous"},
        }
    )

    models: list[CatalogModel]
    gpus: list[CatalogGpu]
    modes: list[str]
    limits: dict[str, Any] = Field(description="Search limits (GPUs, evaluations, seconds)")
    defaults: dict[str, Any] = Field(description="The plan request's defaults")


class Plan(Open):
    """The best disaggregated plan, its alternatives, the na sweep, the co-located
    baseline and a timeline (``truncated``: the search stopped at its budget)."""

    model_config = examples(
        {
            "request": {"model": "mixtral_8x22b", "gpus": ["H20"], "mode": "homogeneous"},
            "model": _MIXTRAL,
            "gpus": [_H20],
            "workload": {"seq_len": 650.0, "slo_tbt_ms": 150.0},
            "mode": "homogeneous",
            "expert_fits": [{"gpu": "H20", "source": "roofline", "slope_ms": 0.0058}],
            "best": {"attention_gpu": "H20", "expert_gpu": "H20", "tpa": 4, "tpe": 2, "na": 1},
            "colocated": {"gpu": "H20", "gpus": 8, "tp_attention": 1, "replicas": 8},
            "disaggregation_gain": 0.88,
            "verdict": "disaggregation does not pay: 0.88× the co-located throughput per cost",
            "n_alternatives": 496,
            "alternative_columns": ["attention_gpu", "expert_gpu", "tpa", "tpe", "na"],
            "alternatives": [],
            "na_sweep_columns": ["na", "feasible", "batch"],
            "na_sweep": [],
            "timeline": [
                {
                    "lane": "attention",
                    "micro_batch": 1,
                    "layer": 1,
                    "start_ms": 0.0,
                    "end_ms": 0.63,
                }
            ],
            "notes": [],
            "warnings": [],
            "near_best": {"pct": 2.0, "count": 7},
            "truncated": False,
            "truncated_reason": "",
            "evaluations": 496,
            "estimated_evaluations": 1024,
            "limits": _LIMITS,
            "elapsed_ms": 126.2,
            "deployment": {"model": "mixtral_8x22b", "nodes": []},
            "sensitivity": [],
        }
    )

    request: dict[str, Any] = Field(description="The request as resolved")
    model: dict[str, Any]
    gpus: list[dict[str, Any]]
    workload: dict[str, Any] = Field(description="seq_len (tokens), slo_tbt_ms (ms)")
    mode: str
    expert_fits: list[dict[str, Any]] = Field(
        description="Te fit per expert GPU (ms): coefficients, the data rule that chose the "
        "sweep rows (rule, rule_text), the fitted tokens-per-expert range and the range "
        "plans may use (plan_be_min/max, 2x beyond), points, and why a fit was refused"
    )
    best: dict[str, Any] | None = Field(
        description="The best plan offered (null: none; see binding)"
    )
    colocated: dict[str, Any] | None = Field(
        description="The co-located baseline (be: tokens per expert; extrapolated: outside "
        "the Te fit's range)"
    )
    colocated_costs: list[str] = Field(
        default_factory=list,
        description="The modelled costs the co-located baseline pays like the plan does",
    )
    disaggregation_gain: float | None = Field(
        description="Throughput per cost of the best plan / the co-located one"
    )
    verdict: str
    n_alternatives: int
    alternative_columns: list[str]
    alternatives: list[dict[str, Any]] = Field(
        description="Plans offered: each fits memory, the GPU cap, the SLO and the Te fit "
        "range and meets the three ping-pong pipeline constraints"
    )
    n_broken_plans: int = Field(0, description="Plans that fit but break a pipeline constraint")
    broken_plan_columns: list[str] = Field(
        default_factory=list, description="Columns of broken_plans (alternatives' + broken)"
    )
    broken_plans: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The best of those, not offered; ``broken`` names the constraints broken",
    )
    binding: dict[str, Any] | None = Field(
        None,
        description="When no plan is offered: what binds (reason: tp_choice, memory, "
        "gpu_count, slo, te_range, pipeline; label; message with the numbers)",
    )
    na_sweep_columns: list[str]
    na_sweep: list[dict[str, Any]]
    timeline: list[dict[str, Any]] = Field(description="Ping-pong pipeline lanes (ms)")
    notes: list[str]
    warnings: list[str]
    truncated: bool = Field(description="The search stopped at its budget")
    truncated_reason: str
    evaluations: int
    elapsed_ms: float = Field(description="Search time, ms")
