"""The measured pick: the nearest workload rule, the order inside it, the export shape."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis import columns as C
from analysis.derived import add_derived
from analysis.measured import (
    RANK,
    candidate_recommendation,
    measured_top,
    nearest_measured_best,
    nearest_num_tokens,
    recommendation_from_candidate,
)
from analysis.tree import Deployment
from tests.factories import make_candidates


def _dep(tokens: int, **kw: object) -> Deployment:
    values: dict[str, object] = {
        "hardware": "GB300",
        "num_experts": 384,
        "top_k": 6,
        "hidden_size": 7168,
        "quant": "NVFP4",
        "world_size": 8,
        "attention_dp": True,
        "cuda_graph": True,
        "num_tokens": tokens,
        "model": "deepseek_v4_pro",
    }
    values.update(kw)
    return Deployment(**values)  # type: ignore[arg-type]


def _tie_frame() -> pd.DataFrame:
    """64 tokens: TRTLLM wins; 256 tokens: MEGAMOE_CUTEDSL wins."""
    rows = [
        {C.NUM_TOKENS: 64, C.BACKEND: "TRTLLM", C.SCORE_MS: 0.5},
        {C.NUM_TOKENS: 64, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 0.7},
        {C.NUM_TOKENS: 256, C.BACKEND: "TRTLLM", C.SCORE_MS: 1.2},
        {C.NUM_TOKENS: 256, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 0.9},
    ]
    return add_derived(make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)]))


@pytest.mark.parametrize(
    ("asked", "nearest"),
    [(128, 256), (64, 64), (100, 64), (200, 256), (1, 64), (100_000, 256), (0, 64)],
)
def test_nearest_in_log2_with_ties_to_the_larger(asked: int, nearest: int) -> None:
    assert nearest_num_tokens([64.0, 256.0], asked) == nearest


def test_nearest_ignores_missing_and_empty() -> None:
    assert nearest_num_tokens([], 8) is None
    assert nearest_num_tokens([math.nan, 0.0, -4.0], 8) is None
    assert nearest_num_tokens([math.nan, 16.0], 8) == 16


@given(
    measured=st.lists(st.integers(1, 1 << 20), min_size=1, max_size=12),
    asked=st.integers(1, 1 << 20),
)
def test_nearest_minimises_log_distance(measured: list[int], asked: int) -> None:
    got = nearest_num_tokens([float(m) for m in measured], asked)
    assert got in measured
    dist = {m: abs(math.log2(m) - math.log2(asked)) for m in measured}
    best = min(dist.values())
    assert dist[got] <= best + 1e-9
    for m in measured:
        if m != got and m * got == asked * asked:  # as near, on the other side
            assert got > m


def test_tie_goes_to_the_larger_workload_and_its_winner() -> None:
    pick = nearest_measured_best(_tie_frame(), _dep(128))
    assert pick is not None
    assert (pick.measured_num_tokens, pick.exact) == (256, False)
    assert pick.recommendation.backend == "MEGAMOE_CUTEDSL"
    assert pick.margin_pct == pytest.approx((1.2 - 0.9) / 0.9 * 100)
    assert pick.recommendation.notes[0] == "num_tokens 128 was not measured; used 256"
    assert pick.recommendation.notes[1].startswith("comm: MEGAMOE_CUTEDSL fuses the exchange")


def test_top_rows_are_in_pick_order_and_equal_scores_break_by_recipe() -> None:
    frame = _tie_frame()
    tied = add_derived(
        make_candidates(
            [
                {C.CANDIDATE_INDEX: 10, C.NUM_TOKENS: 64, C.BACKEND: "CUTLASS", C.SCORE_MS: 0.45},
                {C.CANDIDATE_INDEX: 11, C.NUM_TOKENS: 64, C.BACKEND: "DEEPGEMM", C.SCORE_MS: 0.45},
            ]
        )
    )
    both = pd.concat([frame, tied], ignore_index=True)
    top = measured_top(both, _dep(64), n=3)
    assert list(top[RANK]) == [1, 2, 3]
    # 0.45, 0.45 (by name), 0.5
    assert list(top[C.BACKEND]) == ["CUTLASS", "DEEPGEMM", "TRTLLM"]
    pick = nearest_measured_best(both.sample(frac=1.0, random_state=1), _dep(64))
    assert pick is not None and pick.recommendation.backend == "CUTLASS"  # row order is moot


def test_repeats_are_one_configuration_and_the_runner_up_is_another() -> None:
    """A repeat run of TRTLLM at 64 tokens (0.4 ms, run 2) beside run 1's 0.5 ms: one
    configuration at the median 0.45 ms, n = 2; the runner-up is MEGAMOE_CUTEDSL, not
    TRTLLM's other run. ``latest`` answers the later run's own 0.4 ms."""
    repeat = add_derived(
        make_candidates([{C.RUN_ID: 2, C.CANDIDATE_INDEX: 0, C.NUM_TOKENS: 64, C.SCORE_MS: 0.4}])
    )
    both = pd.concat([_tie_frame(), repeat], ignore_index=True)
    top = measured_top(both, _dep(64), n=3)
    assert list(top[C.BACKEND]) == ["TRTLLM", "MEGAMOE_CUTEDSL"]
    assert top[C.SCORE_MS].iloc[0] == pytest.approx(0.45)
    pick = nearest_measured_best(both, _dep(64))
    assert pick is not None
    assert (pick.n_repeats, pick.repeat_run_ids, pick.spread_source) == (2, "1,2", "run_to_run")
    assert pick.spread_pct == pytest.approx(100 * np.std([0.4, 0.5], ddof=1) / 0.45)
    assert pick.margin_pct == pytest.approx((0.7 - 0.45) / 0.45 * 100)
    assert pick.run_ids == (1, 2)
    latest = nearest_measured_best(both, _dep(64), repeats="latest")
    assert latest is not None and latest.score_ms == pytest.approx(0.4)
    assert latest.candidate[C.RUN_ID] == 2


def test_other_attention_or_phase_is_not_comparable() -> None:
    frame = _tie_frame()
    assert nearest_measured_best(frame, _dep(64, attention_dp=False)) is None
    assert nearest_measured_best(frame, _dep(64, cuda_graph=False)) is None
    assert measured_top(frame, _dep(64, cuda_graph=False)).empty
    assert nearest_measured_best(frame.iloc[0:0], _dep(64)) is None


def test_missing_comm_request_on_categorical_frames_is_not_forced() -> None:
    """Categorical frames give NaN for a missing text: that is no forced comm."""
    frame = _tie_frame().assign(**{C.COMM_REQUESTED: None})
    frame[C.COMM_REQUESTED] = frame[C.COMM_REQUESTED].astype("category")
    row = frame.iloc[0].to_dict()
    assert isinstance(row[C.COMM_REQUESTED], float) and np.isnan(row[C.COMM_REQUESTED])
    rec = recommendation_from_candidate(_dep(64), row, 64, True)
    assert (rec.comm, rec.force_comm, rec.expected_comm) == ("AUTO", False, "NVLINK_ONE_SIDED")
    forced = recommendation_from_candidate(
        _dep(64), {**row, C.COMM_REQUESTED: "DEEPEP", C.COMM: "DEEPEP"}, 64, True
    )
    assert (forced.comm, forced.force_comm) == ("DEEPEP", True)


def test_candidate_recommendation_describes_the_row_as_run() -> None:
    row = _tie_frame().iloc[3].to_dict()
    rec = candidate_recommendation(row)
    assert rec.backend == "MEGAMOE_CUTEDSL" and rec.path == ()
    assert (rec.deployment.num_tokens, rec.deployment.world_size) == (256, 8)
    assert rec.comm == "AUTO" and not rec.force_comm  # NONE (fused) is never forced
    assert rec.notes[0].startswith("measured candidate: run 1, candidate 3")


# ------------------------------------------------------------------ issue 10: comm rule
@pytest.mark.parametrize(
    ("kw", "comm", "force", "expected"),
    [
        # NVIDIA rows record no request: AUTO on GB300 DEP picks NVLINK_ONE_SIDED itself
        ({C.COMM: "NVLINK_ONE_SIDED", C.COMM_REQUESTED: None}, "AUTO", False, "NVLINK_ONE_SIDED"),
        # ... but not NVLINK_TWO_SIDED: forced
        (
            {C.COMM: "NVLINK_TWO_SIDED", C.COMM_REQUESTED: None},
            "NVLINK_TWO_SIDED",
            True,
            "NVLINK_TWO_SIDED",
        ),
        # the run left AUTO and recorded what it chose: AUTO reproduces it
        ({C.COMM: "NVLINK_TWO_SIDED", C.COMM_REQUESTED: "AUTO"}, "AUTO", False, "NVLINK_TWO_SIDED"),
        # the run forced a method: forced again
        ({C.COMM: "DEEPEP", C.COMM_REQUESTED: "DEEPEP"}, "DEEPEP", True, "DEEPEP"),
        # actual comm unknown: AUTO, with the predicted pick
        ({C.COMM: "AUTO", C.COMM_REQUESTED: "AUTO"}, "AUTO", False, "NVLINK_ONE_SIDED"),
        # MEGAMOE: NONE, nothing to set
        ({C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE"}, "AUTO", False, "NONE"),
        # MoE TP: AUTO picks ALLGATHER before it reads the variable; nothing is forced
        (
            {C.PARALLEL_MODE: "DTP2EP4", C.COMM: "DEEPEP", C.COMM_REQUESTED: None},
            "AUTO",
            False,
            "DEEPEP",
        ),
    ],
)
def test_measured_comm_rule(kw: dict[str, object], comm: str, force: bool, expected: str) -> None:
    from analysis.measured import measured_comm

    row = add_derived(make_candidates([kw])).iloc[0].to_dict()
    got = measured_comm(_dep(256), row)
    assert (got.comm, got.force, got.expected) == (comm, force, expected), got.note
