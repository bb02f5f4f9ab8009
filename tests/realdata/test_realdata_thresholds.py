"""Real-data tier: the guide's thresholds re-derived on NVIDIA's published sweeps (top 3
per workload only). These tests pin properties of the method (every model votes, each
number lies in its bracket and interval, the verdict follows its rule, the validated tree
never loses agreement) and print the findings; the findings themselves are reported, not
asserted. Run with ``-s`` to see them."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis.derived import add_derived
from analysis.threshold_agreement import compare_trees
from analysis.threshold_validation import AGREES, VERDICTS
from analysis.thresholds import derive_guide_thresholds
from ingest.detect import parse_path
from ingest.records import UploadMeta
from tests.realdata import require, shared_data_dir

pytestmark = pytest.mark.realdata
DECODE = "decode_megamoe_tokens_per_rank"


@pytest.fixture(scope="module")
def nvidia() -> pd.DataFrame:
    path = require(shared_data_dir() / "nvidia_moe_dashboard" / "data.js")
    frames = []
    for run_id, sweep in enumerate(parse_path(Path(path), UploadMeta())):
        run = {k: sweep.run[k] for k in C.RUN_COLUMNS if k != C.RUN_ID}
        frames.append(sweep.candidates.assign(**run, **{C.RUN_ID: run_id}))
    return add_derived(pd.concat(frames, ignore_index=True))


def _line(r: dict[str, object]) -> str:
    return (
        f"derived {r['derived']:.4g} (bracket {r['bracket_lo']:.4g}-{r['bracket_hi']:.4g}), "
        f"95% CI {r['interval']}, {r['n_points']} votes, status {r['status']}, "
        f"LOO derived/published {r['loo_accuracy_derived']:.3f}/{r['loo_accuracy_published']:.3f}: "
        f"{r['verdict']}"
    )


def test_decode_megamoe_pooled_and_per_model(nvidia: pd.DataFrame) -> None:
    check = derive_guide_thresholds(nvidia, by=(C.MODEL, C.HARDWARE))
    pooled = check.table.set_index("name").loc[DECODE].to_dict()
    per_model = check.groups[(check.groups["by"] == C.MODEL) & (check.groups["name"] == DECODE)]
    print(f"\npooled {DECODE}: {_line(pooled)}")
    for r in per_model.to_dict("records"):
        print(f"  {r['group']}: {_line(r)}")
    models = sorted(nvidia[C.MODEL].unique())
    # every model gets comparison points, though TRTLLM and MEGAMOE_CUTEDSL are only
    # ever listed together in some of its top-3 groups
    assert sorted(per_model["group"]) == models and (per_model["n_points"] > 0).all()
    assert per_model["n_points"].sum() == pooled["n_points"]
    # rank 1 does switch from non-fused to fused in every model's decode sweeps
    assert set(per_model["status"]) <= {"crossover", "noisy"}
    assert pooled["status"] in ("crossover", "noisy")


def test_every_threshold_follows_its_rule(nvidia: pd.DataFrame) -> None:
    check = derive_guide_thresholds(nvidia, by=(C.MODEL,))
    rows = [*check.table.to_dict("records"), *check.groups.to_dict("records")]
    print()
    for r in check.table.to_dict("records"):
        print(
            f"{r['name']} (published {r['published']:.4g}): {r['verdict']} - {r['verdict_reason']}"
        )
    for r in rows:
        assert r["verdict"] in VERDICTS
        if np.isfinite(r["derived"]):
            assert r["bracket_lo"] <= r["derived"] <= r["bracket_hi"]
            assert r["ci_lo"] <= r["bracket_lo"] and r["bracket_hi"] <= r["ci_hi"]
            assert r["axis_min"] <= r["bracket_lo"] <= r["bracket_hi"] <= r["axis_max"]
        if r["verdict"] == AGREES:
            assert r["ci_lo"] <= r["published"] < r["ci_hi"]
    again = derive_guide_thresholds(nvidia, by=(C.MODEL,))
    pd.testing.assert_frame_equal(check.table, again.table)  # fixed seed: the same answer


def test_validated_tree_never_loses_agreement(nvidia: pd.DataFrame) -> None:
    check = derive_guide_thresholds(nvidia)
    cmp = compare_trees(nvidia, check)
    print("\n" + cmp.overall.to_string(index=False))
    print(cmp.decisions[["name", "verdict", "loo_helps", "used"]].to_string(index=False))
    s = cmp.summary
    assert (s["agreement_pct_validated"] >= s["agreement_pct_published"] - 1e-9).all()
    assert s["n_workloads"].sum() == cmp.overall["n_workloads"].iat[0]
    assert not math.isnan(cmp.overall["agreement_pct"].iat[0])
