"""analysis.predict_next: the unmeasured token counts whose winner is least certain."""

from __future__ import annotations

import numpy as np

from analysis import predict as P
from analysis import predict_next as X
from tests.factories import prediction_frames as F

CELL = {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"}


def test_candidates_are_midpoints_and_one_doubling_beyond() -> None:
    assert X.candidates(np.array([1.0, 4.0, 16.0, 16.0])) == [2, 8, 32]
    assert X.candidates(np.array([8.0])) == []


def test_expected_regret_is_small_when_the_pick_is_clear() -> None:
    clear = X.expected_regret(np.log([1.0, 2.0]), np.log([0.95, 1.9]), np.log([1.05, 2.1]), 0.9)
    close = X.expected_regret(np.log([1.0, 1.01]), np.log([0.8, 0.8]), np.log([1.2, 1.2]), 0.9)
    assert clear < 0.01 < close


def test_the_crossover_is_where_to_measure() -> None:
    # CUTLASS wins below 32 tokens, TRTLLM above: the closest call is around the switch
    fit = P.fit_group(F.power_law_frame(noise=0.08, seed=2), 8)
    ranked = X.measure_next(fit, CELL, limit=3)
    assert len(ranked) == 3
    assert (np.diff(ranked["expected_regret_pct"]) <= 0).all()
    assert set(ranked["num_tokens"].iloc[:2]) == {23, 45}  # either side of 32
    assert f"--balanced_total_num_tokens {ranked['num_tokens'].iat[0]}" in ranked["command"].iat[0]
    assert "--world_size 8" in ranked["command"].iat[0]
