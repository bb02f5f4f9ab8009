"""The guide's thresholds re-derived as "rank 1 is X vs not X" (``analysis.thresholds``).

Known answers come from ``tests.factories.thresholds`` (activated tokens per rank ==
num_tokens there)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.derived import add_derived
from analysis.threshold_validation import AGGRESSIVE, AGREES, CONSERVATIVE, CONTRADICTS, NOT_ENOUGH
from analysis.thresholds import derive_guide_thresholds, find_crossovers, thresholds_from_check
from analysis.tree import Thresholds
from tests.factories import make_candidates
from tests.factories import thresholds as TF

DECODE = "decode_megamoe_tokens_per_rank"
TRT, MEGA = {C.BACKEND: "TRTLLM"}, {C.BACKEND: TF.FUSED}


def row(check: object, name: str = DECODE) -> dict[str, object]:
    table = check.table if hasattr(check, "table") else check  # type: ignore[attr-defined]
    out: dict[str, object] = table.set_index("name").loc[name].to_dict()
    return out


def test_known_switch_bracket_interval_and_verdict() -> None:
    check = derive_guide_thresholds(TF.decode_frame({"m1": 700, "m2": 700}))
    r = row(check)
    assert (r["bracket_lo"], r["bracket_hi"]) == (512, 1024)
    assert r["derived"] == pytest.approx(math.sqrt(512 * 1024))
    assert r["status"] == "crossover" and r["n_points"] == 2 * len(TF.GRID)
    assert r["ci_lo"] <= r["bracket_lo"] and r["bracket_hi"] <= r["ci_hi"]
    # 512 lies on the bracket's closed end: the same calls on every measured point
    assert r["verdict"] == AGREES and r["n_resamples"] == 2000
    far = row(derive_guide_thresholds(TF.decode_frame({"m1": 5000, "m2": 5000})))
    assert (far["bracket_lo"], far["bracket_hi"]) == (4096, 8192)
    assert far["verdict"] == AGGRESSIVE  # the tree switches to fused 3 sweep steps too early
    near = row(derive_guide_thresholds(TF.decode_frame({"m1": 100, "m2": 100})))
    assert near["verdict"] == CONSERVATIVE and near["ci_hi"] <= 512


def test_top3_only_data_vote_where_the_pair_is_never_measured_together() -> None:
    df = TF.top3_never_both("x", 700)
    pairwise = find_crossovers(add_derived(df), TRT, MEGA, C.ACTIVATED_TOKENS_PER_RANK)
    assert pairwise.crossovers["n_workloads"].iat[0] == 0  # the old method saw nothing
    check = derive_guide_thresholds(df)
    r = row(check)
    assert r["n_points"] == len(TF.GRID) and (r["bracket_lo"], r["bracket_hi"]) == (512, 1024)
    votes = check.evidence[check.evidence["name"] == DECODE]
    # an unknown backend never makes rank 1 "fused", and the margin below the switch is
    # a lower bound (the fused backend is not among the listed rows)
    assert set(votes["winner"]) == {"fused MEGAMOE backend", "not fused"}
    low = votes[votes["axis_value"] <= 512]
    assert low["margin_is_lower_bound"].all() and np.allclose(low["margin_pct"], 20.0)


def test_window_is_noisy_not_a_contradiction_and_reversal_contradicts() -> None:
    # fused at the very smallest batches and again above 1024 (like kimi_k2's decode)
    rows = []
    for n in TF.GRID:
        fused = n <= 32 or n > 1024
        rows += TF.workload(
            TF.FUSED if fused else "TRTLLM",
            ("TRTLLM" if fused else TF.FUSED,),
            **TF.BASE,
            model="m",
            num_tokens=n,
        )
    r = row(derive_guide_thresholds(make_candidates(rows)))
    assert r["status"] in ("crossover", "noisy") and r["verdict"] != CONTRADICTS
    assert (r["bracket_lo"], r["bracket_hi"]) == (1024, 2048)
    # fused everywhere below 1024 and never above: the other way round
    rev = TF.decode_frame({"m": 10**9})
    rev.loc[(rev[C.NUM_TOKENS] < 1024), C.SCORE_MS] = rev[C.SCORE_MS] * np.where(
        rev[C.BACKEND] == TF.FUSED, 0.5, 1.0
    )
    r = row(derive_guide_thresholds(rev))
    assert r["status"] == "reversed" and r["verdict"] == CONTRADICTS and math.isnan(r["derived"])


def test_world_size_22_6_against_published_8_does_not_agree() -> None:
    check = derive_guide_thresholds(TF.world_size_frame(), by=(C.MODEL,))
    r = row(check, "small_world_size")
    assert r["derived"] == pytest.approx(math.sqrt(16 * 32))
    assert (r["ci_lo"], r["ci_hi"]) == (16, 32)
    assert r["verdict"] == AGGRESSIVE and "below" in str(r["verdict_reason"])
    assert r["n_models"] == 3 and r["n_models_agree"] == 0


@pytest.mark.parametrize(
    ("switches", "verdict"),
    [
        ({"a": 1024, "b": 262144}, NOT_ENOUGH),  # pooled interval holds 24576, models split
        ({"a": 1024, "b": 2048, "c": 262144}, CONSERVATIVE),  # most models: earlier
    ],
)
def test_attention_tp_does_not_agree_when_no_model_does(
    switches: dict[str, float], verdict: str
) -> None:
    check = derive_guide_thresholds(TF.attention_tp_frame(switches), by=(C.MODEL,))
    r = row(check, "attention_tp_cutedsl_tokens_per_rank")
    per_model = check.groups[check.groups["name"] == "attention_tp_cutedsl_tokens_per_rank"]
    assert AGREES not in set(per_model["verdict"])
    assert r["verdict"] == verdict and r["n_models_agree"] == 0


def test_repeats_pool_and_skewed_routing_is_its_own_workload() -> None:
    base = TF.decode_frame({"m": 700})
    repeat = base.assign(**{C.RUN_ID: 2, C.SCORE_MS: base[C.SCORE_MS] * 1.01})
    skewed = base.assign(**{C.DISPATCH: "recv_hotspot"})
    one = row(derive_guide_thresholds(base))
    two = row(derive_guide_thresholds(pd.concat([base, repeat], ignore_index=True)))
    assert two["n_points"] == one["n_points"]  # a repeat run is the same workload
    both = row(derive_guide_thresholds(pd.concat([base, skewed], ignore_index=True)))
    assert both["n_points"] == 2 * one["n_points"]
    # one lucky repeat (fused fastest at 256 in run 3 only) does not flip rank 1: the
    # median over the three runs decides
    lucky = base.assign(**{C.RUN_ID: 3})
    at = (lucky[C.NUM_TOKENS] == 256) & (lucky[C.BACKEND] == TF.FUSED)
    lucky.loc[at, C.SCORE_MS] = 0.5
    three = pd.concat([base, repeat, lucky], ignore_index=True)
    votes = derive_guide_thresholds(three).evidence
    assert not votes[votes["axis_value"] == 256]["is_x"].any()
    latest = derive_guide_thresholds(three, repeats="latest").evidence
    assert latest[latest["axis_value"] == 256]["is_x"].all()


def test_scopes_follow_the_tree() -> None:
    df = TF.decode_frame({"m": 700})
    hopper = df.assign(**{C.HARDWARE: "H100"})
    assert row(derive_guide_thresholds(hopper))["n_points"] == 0  # not the SM100 branch
    prefill = df.assign(**{C.CUDA_GRAPH: False})
    check = derive_guide_thresholds(prefill)
    assert row(check)["n_points"] == 0
    assert row(check, "prefill_megamoe_tokens_per_rank")["n_points"] == len(TF.GRID)
    w4a8 = df.assign(**{C.QUANT: "W4A8_MXFP4_MXFP8"})
    assert row(derive_guide_thresholds(w4a8))["n_points"] == 0  # no threshold there


def test_breakdowns_and_unknown_breakdown() -> None:
    df = pd.concat(
        [TF.decode_frame({"m1": 700}), TF.decode_frame({"m2": 5000}, hardware="B300")],
        ignore_index=True,
    )
    check = derive_guide_thresholds(df, by=(C.MODEL, C.HARDWARE))
    g = check.groups[check.groups["name"] == DECODE].set_index(["by", "group"])
    assert (
        g.loc[(C.MODEL, "m1"), "bracket_hi"] == 1024
        and g.loc[(C.MODEL, "m2"), "bracket_hi"] == 8192
    )
    assert g.loc[(C.HARDWARE, "B300"), "bracket_hi"] == 8192
    with pytest.raises(ValueError, match="unknown breakdown"):
        derive_guide_thresholds(df, by=("backend",))


def test_thresholds_from_check() -> None:
    check = derive_guide_thresholds(TF.decode_frame({"m1": 700, "m2": 700}))
    th = thresholds_from_check(check)
    assert th.decode_megamoe_tokens_per_rank == pytest.approx(math.sqrt(512 * 1024))
    assert th.prefill_megamoe_tokens_per_rank == 16384 and not th.use_attention_tp_crossover
    tp = thresholds_from_check(derive_guide_thresholds(TF.attention_tp_frame({"a": 4096})))
    assert (
        tp.use_attention_tp_crossover
        and tp.attention_tp_cutedsl_tokens_per_rank == pytest.approx(math.sqrt(4096 * 8192))
    )
    assert thresholds_from_check(check, names=()) == Thresholds()


def test_empty_frame_is_not_enough_data() -> None:
    check = derive_guide_thresholds(make_candidates([]))
    assert len(check.table) == 5 and set(check.table["verdict"]) == {NOT_ENOUGH}
    assert check.evidence.empty and check.loo.empty


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(TF.GRID[2:-2]), st.integers(0, 10**6))
def test_deterministic_order_independent_not_mutating(switch: int, seed: int) -> None:
    df = TF.decode_frame({"m1": switch * 0.9, "m2": switch * 1.1})
    before = df.copy()
    first = derive_guide_thresholds(df, resamples=300)
    pd.testing.assert_frame_equal(df, before)
    perm = np.random.default_rng(seed).permutation(len(df))
    again = derive_guide_thresholds(df.iloc[perm], resamples=300)
    pd.testing.assert_frame_equal(first.table, again.table)
    pd.testing.assert_frame_equal(first.loo, again.loo)
    r = row(first)
    assert r["ci_lo"] <= r["bracket_lo"] <= r["derived"] <= r["bracket_hi"] <= r["ci_hi"]
