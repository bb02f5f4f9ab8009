"""analysis.predict: under attention DP a token count below the world size leaves ranks
idle -- another regime -- so an answer above it is never interpolated with a neighbour
below it (NVIDIA's glm_5 · GB300 · ws 8 at 16 tokens: 15.6 % regret when it was)."""

from __future__ import annotations

import numpy as np

from analysis import predict as P
from analysis.confidence import MEASURE_FIRST
from analysis.predict_curves import idle_ranks, same_regime
from service.predictions import _verdict
from tests.factories.prediction_frames import top3_frame

# Below 8 tokens on 8 ranks the source kept the fused M and two layouts (X, Y) that run
# there; N and C, the fastest from 8 tokens up, were not kept (not run, or slow with idle
# ranks). From 32 tokens on N and C beat M; their own slope says they do at 16 as well.
ROWS = [
    *[(b, t, s) for t in (1, 4) for b, s in (("M", 0.068), ("X", 0.080), ("Y", 0.082))],
    *[(b, 32, s) for b, s in (("C", 0.0730), ("N", 0.0736), ("M", 0.0800))],
    *[(b, 64, s) for b, s in (("N", 0.0881), ("C", 0.0905), ("M", 0.0933))],
    *[(b, 128, s) for b, s in (("N", 0.1189), ("M", 0.1231), ("C", 0.1235))],
    *[(b, 256, s) for b, s in (("N", 0.1708), ("C", 0.1772), ("M", 0.1779))],
]


def test_idle_ranks_only_under_attention_dp() -> None:
    tokens = np.array([1.0, 4.0, 8.0, 16.0])
    assert idle_ranks(tokens, 8, True).tolist() == [True, True, False, False]
    assert not idle_ranks(tokens, 8, False).any()  # attention TP: every rank has them all
    assert same_regime(tokens, 16, 8, True).tolist() == [False, False, True, True]
    assert same_regime(tokens, 2, 8, True).tolist() == [True, True, False, False]
    # a group that measured only the other regime: every count (extrapolated)
    assert same_regime(np.array([1.0, 2.0]), 16, 8, True).all()


def test_an_answer_above_the_world_size_is_not_interpolated_with_idle_ranks() -> None:
    frame = top3_frame(ROWS)
    got = P.predict_workload(frame, 16, 8)
    # interpolating M between 4 and 32 (68 -> 80 us) against N's stand-in (the slowest
    # kept at 4, 82 us) named M; within the regime N and C extrapolate below M
    assert got.pick is not None and got.pick.split(" · ")[0] in {"N", "C"}
    assert any("idle" in n and "extrapolated" in n for n in got.notes)
    assert _verdict(got) == MEASURE_FIRST  # an extrapolation is never "deploy"
    assert got.below is not None and got.below[0] == 4  # the measured neighbours still shown
    # between two counts of the same regime nothing changes: the neighbours decide
    inside = P.predict_workload(frame, 45, 8)
    assert inside.pick is not None and inside.pick.startswith("N")  # 80.4 us against C 81.2
    assert not any("idle" in n for n in inside.notes)


def test_attention_tp_is_interpolated_across_the_world_size() -> None:
    rows = [
        (b, t, s * t**0.2)
        for t in (1, 4, 32, 64, 128)
        for b, s in (("A", 1.0), ("B", 1.1), ("C", 1.2))
    ]
    got = P.predict_workload(top3_frame(rows, attention_dp=False), 16, 8, attention_dp=False)
    assert got.pick is not None and got.pick.startswith("A")
    assert not any("idle" in n for n in got.notes)
    assert np.isfinite(got.rows[P.NEIGHBOUR_MS].to_numpy(float)).any()  # interpolated
