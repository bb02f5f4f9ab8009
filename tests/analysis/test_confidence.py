"""analysis.confidence: deploy / tie: either / measure first."""

from __future__ import annotations

import math

import pandas as pd

from analysis import confidence as V


def test_measured_answers() -> None:
    assert V.verdict(True, 8.0, 3.0) == V.DEPLOY
    assert V.verdict(True, 2.0, 3.0) == V.TIE
    assert V.verdict(True, None, None) == V.DEPLOY  # alone: nothing to tie with
    assert V.verdict(True, 2.0, math.nan) == V.DEPLOY  # band unknown: the margin decides


def test_predicted_answers() -> None:
    assert V.verdict(False, 8.0, 3.0, p_fastest=0.9) == V.DEPLOY
    assert V.verdict(False, 2.0, 3.0, p_fastest=0.9) == V.TIE  # sure, but inside the band
    assert V.verdict(False, 8.0, 3.0, p_fastest=0.6) == V.TIE
    assert V.verdict(False, 8.0, 3.0, p_fastest=0.3) == V.MEASURE_FIRST
    assert V.verdict(False, 8.0, 3.0, p_fastest=0.99, extrapolated=True) == V.MEASURE_FIRST
    assert V.verdict(False, 8.0, 3.0) == V.MEASURE_FIRST  # no probability: nothing known


def test_frame_of_answers() -> None:
    frame = pd.DataFrame(
        {
            "measured": [True, False, False],
            "margin": [1.0, 10.0, None],
            "band": [3.0, 3.0, None],
            "p": [None, 0.95, 0.2],
        }
    )
    got = V.verdicts(frame, "measured", "margin", "band", p_fastest="p")
    assert list(got) == [V.TIE, V.DEPLOY, V.MEASURE_FIRST]
