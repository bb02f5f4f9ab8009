"""Routing skew comparison and the guide's advice, on hand-built frames with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.routing_advice import WorkloadFacts, skew_advice
from analysis.routing_skew import (
    BEYOND_NOISE,
    NOISE_BAND_PCT,
    RANK_CHANGE,
    SLOWDOWN_PCT,
    TABLE_COLUMNS,
    compare_patterns,
)
from tests.factories import make_candidates
from tests.factories.routing import ROWS, SKEWED

SKEW = SKEWED


def _frame(decode_only: bool = True, **overrides: object) -> pd.DataFrame:
    """The routing factory's rows (world size 16) as one candidate frame, both runs."""
    rows = []
    for run, dispatch in ((1, "balanced"), (2, SKEW)):
        for backend, comm, mode, tokens, graph, bal, skew in ROWS:
            score = bal if dispatch == "balanced" else skew
            if score is None or (decode_only and (tokens != 256 or mode != "DEP")):
                continue
            rows.append(
                {
                    C.RUN_ID: run,
                    C.CANDIDATE_INDEX: len(rows),
                    C.WORLD_SIZE: 16,
                    C.BACKEND: backend,
                    C.COMM: comm,
                    C.PARALLEL_MODE: mode,
                    C.NUM_TOKENS: tokens,
                    C.CUDA_GRAPH: graph,
                    C.SCORE_MS: score,
                    C.DISPATCH: dispatch,
                    **overrides,
                }
            )
    return make_candidates(rows)


def _by_backend(table: pd.DataFrame) -> dict[tuple[str, str], dict]:
    return {(r[C.BACKEND], r[C.COMM]): r for r in table.to_dict("records")}


def test_ranks_rank_changes_and_slowdowns_have_the_known_answers() -> None:
    cmp = compare_patterns(_frame(), "balanced", SKEW)
    rows = _by_backend(cmp.table)
    one_sided, cutedsl = rows["TRTLLM", "NVLINK_ONE_SIDED"], rows["CUTEDSL", "NVLINK_ONE_SIDED"]
    fused, allgather = rows["MEGAMOE_CUTEDSL", "NONE"], rows["TRTLLM", "ALLGATHER"]
    assert [r["balanced_rank"] for r in (one_sided, cutedsl, fused, allgather)] == [1, 2, 3, 4]
    assert [r["skewed_rank"] for r in (one_sided, cutedsl, fused)] == [3, 2, 1]
    assert [r[RANK_CHANGE] for r in (one_sided, cutedsl, fused)] == [2, 0, -2]
    assert [round(r[SLOWDOWN_PCT], 9) for r in (one_sided, cutedsl, fused)] == [50.0, 20.0, 5.0]
    # measured under balanced only: keeps its rank, has no slowdown and no skewed rank
    assert pd.isna(allgather["skewed_rank"]) and math.isnan(allgather[SLOWDOWN_PCT])
    assert not allgather[BEYOND_NOISE]
    # iteration spread 0.5 % on both sides -> band 100 * hypot(0.005, 0.005)
    assert one_sided[NOISE_BAND_PCT] == pytest.approx(0.7071, abs=1e-4)
    assert list(cmp.table.columns) == [c for c in TABLE_COLUMNS if c in cmp.table]
    s = cmp.summary
    assert s["n_balanced"] == 4 and s["n_skewed"] == 3 and s["n_paired"] == 3
    assert s["winner_changes"] is True
    assert s["balanced_best"]["backend"] == "TRTLLM" and s["skewed_best"]["score_ms"] == 1.26
    assert s["balanced_pick_regret_pct"] == pytest.approx((1.50 / 1.26 - 1) * 100)
    assert s["median_slowdown_pct"] == pytest.approx(20.0)
    assert s["n_rank_changes"] == 2 and s["imbalance_measured"] is True


def test_repeats_are_pooled_per_configuration_and_latest_is_a_choice() -> None:
    df = _frame()
    repeat = df[df[C.DISPATCH] == "balanced"].assign(**{C.RUN_ID: 3, C.RUN_DATE: "2026-09-20"})
    repeat[C.SCORE_MS] = repeat[C.SCORE_MS] * 1.2
    both = pd.concat([df, repeat], ignore_index=True)
    median = _by_backend(compare_patterns(both, "balanced", SKEW).table)
    # median of two repeats = their mean: (1.0 + 1.2) / 2
    assert median["TRTLLM", "NVLINK_ONE_SIDED"]["balanced_score_ms"] == pytest.approx(1.1)
    assert median["TRTLLM", "NVLINK_ONE_SIDED"]["balanced_n_repeats"] == 2
    assert median["TRTLLM", "NVLINK_ONE_SIDED"]["balanced_repeat_run_ids"] == "1,3"
    latest = _by_backend(compare_patterns(both, "balanced", SKEW, repeats="latest").table)
    assert latest["TRTLLM", "NVLINK_ONE_SIDED"]["balanced_score_ms"] == pytest.approx(1.2)


def test_a_skewed_run_without_the_low_precision_flag_still_pairs() -> None:
    df = _frame()
    df[C.LOW_PRECISION_COMBINE] = (df[C.DISPATCH] == "balanced").astype("boolean")
    cmp = compare_patterns(df, "balanced", SKEW)
    assert cmp.summary["n_paired"] == 3
    note = skew_advice(cmp, WorkloadFacts("decode", 16, 16.0, 128.0))[2]
    assert note.technique == "low_precision_combine" and note.verdict == "note"
    assert "different settings" in note.summary and "2 NVLINK_ONE_SIDED" in note.summary
    assert [c.met for c in note.checks] == [True, False]


def test_flag_off_on_both_sides_says_the_one_sided_rows_ran_slower() -> None:
    cmp = compare_patterns(_frame(low_precision_combine=False), "balanced", SKEW)
    note = skew_advice(cmp, WorkloadFacts("decode", 16, 16.0, 128.0))[2]
    assert "Neither pattern used the flag" in note.summary and "~4 %" in note.summary


def test_eplb_indicated_in_decode_with_wide_ep_and_measured_imbalance() -> None:
    cmp = compare_patterns(_frame(), "balanced", SKEW)
    eplb, dwdp, _ = skew_advice(cmp, WorkloadFacts("decode", 16, 16.0, 128.0))
    assert eplb.verdict == "indicated"
    assert [c.met for c in eplb.checks] == [True, True, None, True]
    assert "ep_size 16" in eplb.checks[1].observed
    assert any("Online plan" in d and "16 tokens per rank" in d for d in eplb.details)
    assert dwdp.verdict == "not applicable"


def test_eplb_not_indicated_at_ep_8_or_without_imbalance() -> None:
    narrow = _frame(world_size=8, parallel_mode="DEP")
    eplb = skew_advice(
        compare_patterns(narrow, "balanced", SKEW), WorkloadFacts("decode", 8, 32.0, 192.0)
    )[0]
    assert eplb.verdict == "not indicated" and eplb.checks[1].met is False
    bal = _frame()
    bal = bal[bal[C.DISPATCH] == "balanced"]
    same = bal.assign(**{C.DISPATCH: SKEW, C.RUN_ID: 2})
    cmp = compare_patterns(pd.concat([bal, same], ignore_index=True), "balanced", SKEW)
    assert cmp.summary["median_slowdown_pct"] == pytest.approx(0.0)
    assert cmp.summary["imbalance_measured"] is False
    eplb = skew_advice(cmp, WorkloadFacts("decode", 16, 16.0, 128.0))[0]
    assert eplb.verdict == "not indicated" and eplb.checks[3].met is False


def test_prefill_points_to_dwdp_and_never_to_eplb() -> None:
    df = _frame(decode_only=False)
    df = df[~df[C.CUDA_GRAPH].astype(bool)]
    cmp = compare_patterns(df, "balanced", SKEW)
    eplb, dwdp, _ = skew_advice(cmp, WorkloadFacts("prefill", 16, 1024.0, 8192.0))
    assert eplb.verdict == "not indicated" and eplb.checks[0].met is False
    assert dwdp.verdict == "indicated"
    assert dwdp.checks[2].condition == "not on the same MoE path as EPLB" and dwdp.checks[2].met
    assert any("TTFT" in d for d in dwdp.details)


def test_same_label_twice_is_refused_and_input_is_not_modified() -> None:
    df = _frame()
    before = df.copy()
    with pytest.raises(ValueError, match="different"):
        compare_patterns(df, "balanced", "balanced")
    compare_patterns(df, "balanced", SKEW)
    pd.testing.assert_frame_equal(df, before)


def test_no_pair_means_no_measured_imbalance() -> None:
    df = _frame()
    df = df[~((df[C.DISPATCH] == SKEW) & (df[C.BACKEND] != "CUTLASS"))]
    cmp = compare_patterns(df, "balanced", SKEW)
    assert cmp.summary["n_paired"] == 0 and cmp.summary["skewed_best"] is None
    assert cmp.summary["imbalance_measured"] is False
    eplb = skew_advice(cmp, WorkloadFacts("decode", 16, 16.0, 128.0))[0]
    assert "no configuration was measured under both" in eplb.checks[3].observed


@settings(max_examples=15, deadline=None)
@given(st.randoms(use_true_random=False))
def test_result_does_not_depend_on_row_order(rnd: object) -> None:
    df = _frame()
    order = list(range(len(df)))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    a = compare_patterns(df, "balanced", SKEW).table
    b = compare_patterns(df.iloc[order], "balanced", SKEW).table
    pd.testing.assert_frame_equal(a, b)


def test_versions_per_pattern_are_reported() -> None:
    df = _frame()
    df[C.TRTLLM_VERSION] = np.where(df[C.DISPATCH] == SKEW, "v1.3.0rc27", "v1.3.0rc26")
    cmp = compare_patterns(df, "balanced", SKEW)
    assert cmp.summary["trtllm_versions"] == {"balanced": ["v1.3.0rc26"], "skewed": ["v1.3.0rc27"]}
    assert cmp.summary["n_paired"] == 3  # still the same configurations
