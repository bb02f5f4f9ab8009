"""Answers of /thresholds*: the guide's thresholds re-derived from the stored data."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api.schemas.common import PROVENANCE_EXAMPLE, Open, Provenance, Row, Table, examples

TREE_TEXT = (
    "# The TensorRT-LLM MoE guide's decision tree, derived thresholds (moedash)\n"
    "# slice: all stored data\n"
)
_SLICE = {"model": None, "hardware": None, "quant": None, "dispatch": None}
_METHOD: dict[str, Any] = {
    "votes": "one per workload: is its rank-1 (fastest) candidate X (the tree's pick)?",
    "fit": "one split along the tree's axis with the fewest misclassified votes",
    "interval": "95 % bootstrap percentile interval over workloads, 2000 resamples",
    "validation": "leave one model out",
    "resamples": 2000,
    "seed": 20260913,
    "min_points": 3,
}


class ThresholdSliceOut(Open):
    """The slice filters applied (null: all)."""

    model: str | None
    hardware: str | None
    quant: str | None
    dispatch: str | None


class ThresholdAnswer(Open):
    slice: ThresholdSliceOut
    provenance: Provenance


class WithMethod(ThresholdAnswer):
    method: dict[str, Any] = Field(description="How votes, fit and interval are computed")


class ThresholdRow(Row):
    """One threshold: published vs re-derived, with its evidence and verdict."""

    name: str | None = None
    axis: str | None = Field(None, description="activated_tokens_per_rank, dispatch_kb …")
    published: float | None = Field(None, description="The guide's value (axis unit)")
    derived: float | None = Field(None, description="Re-derived from the data (axis unit)")
    ci_lo: float | None = Field(None, description="95 % interval, low end")
    ci_hi: float | None = Field(None, description="95 % interval, high end")
    n_points: int | None = Field(None, description="Workloads voting")
    verdict: str | None = None


class Thresholds(WithMethod, Table):
    """One row per threshold (``by``: per threshold and group; ``evidence``: votes)."""

    model_config = examples(
        {
            "slice": _SLICE,
            "by": "none",
            "method": _METHOD,
            "verdict_rule": "Each workload votes with its rank-1 (fastest) candidate",
            "provenance": PROVENANCE_EXAMPLE,
            "items": [
                {
                    "name": "decode_megamoe_tokens_per_rank",
                    "axis": "activated_tokens_per_rank",
                    "published": 512.0,
                    "derived": 1254.14,
                    "ci_lo": 2.0,
                    "ci_hi": None,
                    "n_points": 10,
                    "verdict": "published is aggressive",
                }
            ],
        }
    )

    by: str = Field(description="none, model, hardware or quant")
    verdict_rule: str
    items: list[ThresholdRow]


class Validation(WithMethod, Table):
    """Leave-one-model-out rows, one per threshold x held-out model."""

    model_config = examples(
        {
            "slice": _SLICE,
            "method": _METHOD,
            "provenance": PROVENANCE_EXAMPLE,
            "items": [
                {
                    "name": "decode_megamoe_tokens_per_rank",
                    "held_out_by": "model",
                    "held_out": "kimi_k2",
                    "n_points": 4,
                    "fitted": 768.0,
                    "accuracy_derived": 0.75,
                    "accuracy_published": 0.5,
                }
            ],
        }
    )

    items: list[Row]


class ThresholdAgreement(ThresholdAnswer, Table):
    """The tree under published, derived and validated thresholds, side by side."""

    model_config = examples(
        {
            "slice": _SLICE,
            "overall": [{"thresholds": "published", "n_workloads": 12, "agreement_pct": 58.3}],
            "decisions": [
                {"name": "decode_megamoe_tokens_per_rank", "used": False, "reason": "..."}
            ],
            "provenance": PROVENANCE_EXAMPLE,
            "items": [
                {
                    "model": "deepseek_v4_pro",
                    "hardware": "GB300",
                    "phase": "decode",
                    "n_workloads": 5,
                    "agreement_pct_published": 60.0,
                    "agreement_pct_derived": 80.0,
                }
            ],
        }
    )

    overall: list[Row] = Field(description="Agreement per threshold set, all workloads")
    decisions: list[Row] = Field(description="Which derived values the validated set uses")
    items: list[Row]


class TreeNode(Open):
    label: str
    pick: str | None
    threshold: Any = Field(description="The threshold's name (null: none)")
    value: Any = Field(description="Its value in this set (null: none)")
    children: list[TreeNode]


class TreeStepOut(Open):
    step: str
    tree: TreeNode


class ThresholdTree(WithMethod):
    """The guide's tree with a threshold set's numbers in place (``format=json``)."""

    model_config = examples(
        {
            "slice": _SLICE,
            "thresholds": "derived",
            "use_attention_tp_crossover": False,
            "values": {
                "decode_megamoe_tokens_per_rank": {
                    "value": 1254.14,
                    "source": "derived",
                    "published": 512.0,
                }
            },
            "method": _METHOD,
            "verdict_rule": "Each workload votes with its rank-1 (fastest) candidate",
            "provenance": PROVENANCE_EXAMPLE,
            "tree": [
                {
                    "step": "STEP1: Parallelism",
                    "tree": {
                        "label": "Parallelism",
                        "pick": None,
                        "threshold": None,
                        "value": None,
                        "children": [],
                    },
                }
            ],
        }
    )

    thresholds: str = Field(description="published, derived or validated")
    use_attention_tp_crossover: bool
    values: dict[str, dict[str, Any]] = Field(description="Each threshold's value and source")
    verdict_rule: str
    tree: list[TreeStepOut]
