"""analysis.predict: answers between and beyond the measured token counts, their
intervals, the probability of being fastest, and the validation on held-out counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import predict as P
from analysis.predict_curves import LogLogCurves
from tests.factories import prediction_frames as F


def _truth(backend: str, tokens: float) -> float:
    a, b = F.CURVES[backend]
    return a * tokens**b


def test_between_measured_counts_a_power_law_is_exact_and_the_crossover_respected() -> None:
    frame = F.power_law_frame(tokens=[t for t in F.TOKENS if t not in (16, 64)])
    for tokens, winner in ((16, "CUTLASS"), (64, "TRTLLM")):
        got = P.predict_workload(frame, tokens, 8)
        assert not got.measured and got.pick is not None and got.pick.startswith(winner)
        rows = got.rows.set_index("backend")
        for backend in F.CURVES:
            want = _truth(backend, tokens)
            assert rows.loc[backend, P.PRED_MS] == pytest.approx(want, rel=1e-9)
            assert rows.loc[backend, P.LO_MS] <= want <= rows.loc[backend, P.HI_MS]
        assert set(rows[P.KIND]) == {P.PREDICTED}
        assert rows[P.P_FASTEST].sum() == pytest.approx(1.0)
        assert rows.loc[winner, P.P_FASTEST] == rows[P.P_FASTEST].max()
    # the measured neighbours of 64 and their winners: both sides of the crossover
    got = P.predict_workload(frame, 64, 8)
    assert got.below is not None and got.below[0] == 32
    assert got.above is not None and got.above == (128, got.pick)


def test_beyond_the_range_the_last_slope_goes_on() -> None:
    frame = F.power_law_frame()
    got = P.predict_workload(frame, 4096, 8).rows.set_index("backend")
    assert got.loc["CUTEDSL", P.PRED_MS] == pytest.approx(_truth("CUTEDSL", 4096), rel=1e-9)
    assert "extrapolated" in P.predict_workload(frame, 4096, 8).notes[0]


def test_a_measured_count_is_answered_from_the_measurements() -> None:
    frame = F.power_law_frame()
    got = P.predict_workload(frame, 256, 8)
    assert got.measured and set(got.rows[P.KIND]) == {P.MEASURED}
    assert got.rows[P.PRED_MS].iat[0] == pytest.approx(_truth("TRTLLM", 256))
    assert P.predict_workload(frame, 256, 16).pick is None  # nothing at world size 16


def test_curves_clip_the_slope_and_know_their_codes() -> None:
    x = np.array([[0, 0.0], [0, 1.0], [1, 0.0], [1, 1.0]])
    y = np.array([0.0, -1.0, 0.0, 3.0])  # falling, and steeper than max_slope
    model = LogLogCurves(min_slope=0.0, max_slope=1.2).fit(x, y)
    got = model.predict(np.array([[0, 2.0], [1, 2.0], [1, 0.5], [7, 1.0]]))
    assert got[0] == pytest.approx(-1.0) and got[1] == pytest.approx(4.2)
    assert got[2] == pytest.approx(1.5) and np.isnan(got[3])


def test_validation_on_held_out_counts() -> None:
    frame = F.power_law_frame(noise=0.01, seed=1)
    before = frame.copy()
    table = P.validate(frame)
    pd.testing.assert_frame_equal(frame, before)
    assert len(table) == len(F.TOKENS) and table["edge"].sum() == 2
    summary = P.summarize(table)
    assert summary["n_queries"] == len(F.TOKENS)
    assert summary["predicted"]["worst_regret_pct"] < 10.0
    assert 0.0 <= summary["coverage"] <= 1.0


def test_validation_goal_on_the_demo_cell() -> None:
    """The goals of issue 24 on the data we ship (held-out token counts, held out from
    the fit and from the calibration): worst regret <= 10 %, 90 % intervals covering
    >= 88 % of held-out scores."""
    summary = P.summarize(P.validate(F.demo_cell()))
    print(summary)
    assert summary["n_queries"] >= 30
    assert summary["predicted"]["worst_regret_pct"] <= 10.0
    assert summary["coverage"] >= 0.88


def test_too_few_measurements_to_calibrate_is_no_answer() -> None:
    # two configurations x 4 token counts: 8 scores, below 1 / (1 - 0.9) + 1
    small = F.power_law_frame(tokens=[1, 2, 4, 8])
    small = small[small["backend"] != "CUTEDSL"].reset_index(drop=True)
    got = P.predict_workload(small, 3, 8)
    assert got.pick is None and "too few" in got.notes[0]
    assert P.validate(small).empty
    assert P.predict_workload(small, 3, 8, confidence=0.8).pick is not None
