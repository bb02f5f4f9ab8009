"""The tree with published / derived / validated thresholds (``analysis.threshold_agreement``)
and the guide's tree written down with a set's numbers (``analysis.tree_text``)."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from analysis import columns as C
from analysis.threshold_agreement import compare_trees
from analysis.threshold_validation import AGGRESSIVE
from analysis.thresholds import derive_guide_thresholds
from analysis.tree import Thresholds
from analysis.tree_text import guide_tree, number, tree_json, tree_text
from tests.factories import thresholds as TF


def _pct(cmp: object, model: str, name: str) -> float:
    s = cmp.summary.set_index(C.MODEL)  # type: ignore[attr-defined]
    return float(s.loc[model, f"agreement_pct_{name}"])


def test_regression_72_5_to_62_5_does_not_happen_with_the_validated_set() -> None:
    df = TF.regression_frame()
    check = derive_guide_thresholds(df)
    cmp = compare_trees(df, check)
    # the shape: switching to derived lowers model_c x GB300 x decode
    assert _pct(cmp, "model_c", "published") == 72.5
    assert _pct(cmp, "model_c", "derived") == 62.5
    assert _pct(cmp, "model_a", "derived") > _pct(cmp, "model_a", "published")
    # validated keeps the published decode threshold: LOO sees model_c get worse
    decision = cmp.decisions.set_index("name").loc["decode_megamoe_tokens_per_rank"]
    assert decision["verdict"] == AGGRESSIVE and not decision["loo_helps"] and not decision["used"]
    assert cmp.thresholds["validated"] == Thresholds()
    assert _pct(cmp, "model_c", "validated") == 72.5
    for name in ("derived", "validated"):
        assert cmp.overall.set_index("thresholds").loc[name, "n_workloads"] == 42 + 42 + 40


def test_tree_guard_rejects_a_threshold_that_lowers_any_group() -> None:
    """Even when the verdict and LOO let a derived value through, it is dropped if some
    model x hardware x phase loses agreement."""
    df = TF.regression_frame()
    check = derive_guide_thresholds(df)
    forced = check.table.copy()
    forced["loo_helps"] = True  # pretend leave-one-out said it generalises
    cmp = compare_trees(df, dataclasses.replace(check, table=forced))
    decision = cmp.decisions.set_index("name").loc["decode_megamoe_tokens_per_rank"]
    assert decision["candidate"] and not decision["used"]
    assert "model_c x GB300 x decode (72.5 % -> 62.5 %)" in decision["reason"]
    assert (cmp.summary["agreement_pct_validated"] >= cmp.summary["agreement_pct_published"]).all()


def test_validated_uses_a_derived_value_that_helps_everywhere() -> None:
    df = TF.world_size_frame()
    cmp = compare_trees(df, derive_guide_thresholds(df))
    assert cmp.thresholds["validated"].small_world_size == pytest.approx(22.627, abs=1e-3)
    used = cmp.decisions.set_index("name")["used"]
    assert used["small_world_size"] and not used["decode_megamoe_tokens_per_rank"]
    assert (cmp.summary["agreement_pct_validated"] > cmp.summary["agreement_pct_published"]).all()


def test_tree_text_has_the_guides_layout_and_the_numbers() -> None:
    published = tree_text(Thresholds())
    assert "│      │      │      ├─ activated_tokens_per_rank <= 512" in published
    assert "dispatch_KB <= 8192  (~8 MB per rank)" in published
    assert "├─ attention TP" in published and "→ TRTLLM" in published
    th = Thresholds(decode_megamoe_tokens_per_rank=886.81, small_world_size=22.63)
    notes = {
        "decode_megamoe_tokens_per_rank": {
            "source": "derived",
            "ci_lo": 768.0,
            "ci_hi": 1152.0,
            "published": 512.0,
            "verdict": AGGRESSIVE,
        }
    }
    text = tree_text(th, notes, header="# slice: all")
    assert text.startswith("# slice: all")
    note = "[derived; 95% CI [768, 1152); published 512; published is aggressive]"
    assert f"activated_tokens_per_rank <= 886.8  {note}" in text
    assert "world_size <= 22.63" in text
    # the arrows of one block share a column
    block = text.split("STEP2: Backend")[1].split("STEP3")[0]
    cols = {line.index("→") for line in block.splitlines() if "→" in line}
    assert len(cols) == 1


def test_attention_tp_split_only_when_the_set_uses_it() -> None:
    plain = json.dumps(tree_json(Thresholds()))
    assert "attention_tp_cutedsl_tokens_per_rank" not in plain
    th = Thresholds(attention_tp_cutedsl_tokens_per_rank=4096, use_attention_tp_crossover=True)
    text = tree_text(th)
    assert "activated_tokens_per_rank <= 4096" in text and "→ CUTEDSL" in text


def test_tree_json_carries_every_threshold_value() -> None:
    th = Thresholds(
        decode_megamoe_tokens_per_rank=700,
        prefill_megamoe_tokens_per_rank=20000,
        small_world_size=16,
        cross_domain_dispatch_kb=4096,
    )
    found: dict[str, float] = {}

    def walk(node: dict[str, object]) -> None:
        if node["threshold"]:
            found[str(node["threshold"])] = float(node["value"])  # type: ignore[arg-type]
        for child in node["children"]:  # type: ignore[attr-defined]
            walk(child)

    steps = tree_json(th)
    assert [s["step"] for s in steps] == [
        "STEP1: Parallelism",
        "STEP2: Backend",
        "STEP3: Communication",
    ]
    for s in steps:
        walk(s["tree"])
    assert found == {
        "decode_megamoe_tokens_per_rank": 700,
        "prefill_megamoe_tokens_per_rank": 20000,
        "small_world_size": 16,
        "cross_domain_dispatch_kb": 4096,
        "sm120_cutedsl_tokens_per_rank": 64,
    }
    assert len(guide_tree(th)) == 3


@pytest.mark.parametrize(
    ("value", "text"), [(512.0, "512"), (886.8100, "886.8"), (float("inf"), "∞"), (None, "—")]
)
def test_number(value: float | None, text: str) -> None:
    assert number(value) == text


def test_compare_trees_on_empty_data() -> None:
    df = pd.DataFrame(columns=TF.make_candidates([]).columns)
    cmp = compare_trees(df, derive_guide_thresholds(df))
    assert cmp.summary.empty and cmp.thresholds["validated"] == Thresholds()
