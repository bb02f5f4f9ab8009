"""Fit, bootstrap interval, verdict rule and leave-one-out (``analysis.threshold_fit``,
``analysis.threshold_validation``) on hand-built votes with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.threshold_checks import AXIS_VALUE, IS_X
from analysis.threshold_fit import bootstrap_brackets, count_votes, fit_counts, predict_x
from analysis.threshold_validation import (
    AGGRESSIVE,
    AGREES,
    CONSERVATIVE,
    CONTRADICTS,
    NOT_ENOUGH,
    assess,
    leave_one_out,
    verdict,
)

GRID = np.array([2.0**i for i in range(4, 14)])  # 16 .. 8192


def votes(
    switch: float, models: dict[str, float] | None = None, grid: np.ndarray = GRID
) -> pd.DataFrame:
    """X above each model's switch (default: one model "m")."""
    rows = []
    for model, s in (models or {"m": switch}).items():
        rows += [{C.MODEL: model, C.HARDWARE: "GB300", AXIS_VALUE: x, IS_X: x > s} for x in grid]
    return pd.DataFrame(rows)


def test_fit_bracket_ties_and_open_ends() -> None:
    x = GRID
    fit = fit_counts(count_votes(x, x > 700), x_above=True)
    assert (fit.lo, fit.hi, fit.errors) == (512, 1024, 0) and fit.interior
    assert fit.derived == pytest.approx(math.sqrt(512 * 1024))
    below = fit_counts(count_votes(x, x <= 700), x_above=False)  # X up to the threshold
    assert (below.lo, below.hi) == (512, 1024)
    never = fit_counts(count_votes(x, np.zeros(len(x), bool)), x_above=True)
    assert (never.lo, never.hi) == (8192, math.inf) and math.isnan(never.derived)
    always = fit_counts(count_votes(x, np.ones(len(x), bool)), x_above=True)
    assert (always.lo, always.hi) == (-math.inf, 16)
    # one flipped vote: the best split stays, one misclassified
    noisy = x > 700
    noisy[2] = True
    assert fit_counts(count_votes(x, noisy), True).errors == 1


def test_bootstrap_is_deterministic_and_covers_the_bracket() -> None:
    c = count_votes(GRID, GRID > 700)
    a, b = bootstrap_brackets(c, True, 500, seed=1), bootstrap_brackets(c, True, 500, seed=1)
    np.testing.assert_array_equal(a.lo, b.lo)
    lo, hi = a.interval()
    assert lo <= 512 and hi >= 1024
    other = bootstrap_brackets(c, True, 500, seed=2)
    assert len(other.lo) == 500
    empty = bootstrap_brackets(count_votes(np.array([]), np.array([], bool)), True)
    assert math.isnan(empty.interval()[0])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.booleans(), min_size=3, max_size=40), st.integers(0, 1000))
def test_interval_contains_the_full_sample_bracket_mostly(flags: list[bool], seed: int) -> None:
    x = np.arange(1, len(flags) + 1, dtype=float)
    c = count_votes(x, np.array(flags))
    fit = fit_counts(c, True)
    boot = bootstrap_brackets(c, True, 200, seed)
    lo, hi = boot.interval()
    assert lo <= hi
    assert np.all(boot.lo < boot.hi)  # every resample's bracket is a real interval
    assert fit.lo < fit.hi


def test_predict_x() -> None:
    a = np.array([1.0, 512.0, 513.0])
    assert predict_x(a, 512, True).tolist() == [False, False, True]  # "<= 512 -> not X"
    assert predict_x(a, 512, False).tolist() == [True, True, False]
    assert not predict_x(a, math.inf, True).any()


@pytest.mark.parametrize(
    ("published", "ci", "expected"),
    [
        (512, (384.0, 768.0), AGREES),
        (512, (768.0, 1152.0), AGGRESSIVE),
        (512, (128.0, 512.0), CONSERVATIVE),  # half-open: 512 calls the 512 point wrong
        (8, (16.0, 32.0), AGGRESSIVE),
        (512, (-math.inf, math.inf), NOT_ENOUGH),
        (16384, (8192.0, math.inf), NOT_ENOUGH),  # outside the measured range [1, 8192]
    ],
)
def test_verdict_rule(published: float, ci: tuple[float, float], expected: str) -> None:
    assert verdict(published, "crossover", ci, (1.0, 8192.0))[0] == expected


def test_verdict_rule_statuses_models_and_loo() -> None:
    ci, rng = (384.0, 768.0), (1.0, 8192.0)
    assert verdict(512, "insufficient", ci, rng)[0] == NOT_ENOUGH
    assert verdict(512, "reversed", ci, rng)[0] == CONTRADICTS
    split = [CONSERVATIVE, AGGRESSIVE, AGREES]
    assert verdict(512, "crossover", ci, rng, split)[0] == NOT_ENOUGH
    assert verdict(512, "crossover", ci, rng, [AGREES, AGREES, CONSERVATIVE])[0] == AGREES
    assert (
        verdict(512, "crossover", ci, rng, [AGREES, CONSERVATIVE, CONSERVATIVE])[0] == CONSERVATIVE
    )
    assert verdict(512, "crossover", ci, rng, [NOT_ENOUGH, AGREES])[0] == AGREES  # one judged
    v, why = verdict(512, "crossover", ci, rng, loo_better=700.0)
    assert v == AGGRESSIVE and "held-out" in why
    assert verdict(512, "crossover", ci, rng, loo_better=400.0)[0] == CONSERVATIVE


def test_leave_one_model_out() -> None:
    same = votes(0, {"a": 700, "b": 700, "c": 700})
    table, s = leave_one_out(same, 512, True)
    assert s["loo_unit"] == C.MODEL and s["loo_n"] == 3 and len(table) == 3
    assert s["loo_accuracy_derived"] == 1.0 and s["loo_accuracy_published"] == 1.0
    assert not s["loo_helps"]  # no better than published
    later = votes(0, {"a": 3000, "b": 3000, "c": 3000})
    assert leave_one_out(later, 512, True)[1]["loo_helps"]
    odd = votes(0, {"a": 3000, "b": 3000, "c": 700})  # c follows the published value
    table, s = leave_one_out(odd, 512, True)
    assert s["loo_n_worse"] == 1 and not s["loo_helps"]
    held_c = table.set_index("held_out").loc["c"]
    assert held_c["fitted"] == pytest.approx(math.sqrt(2048 * 4096))
    assert held_c["accuracy_derived"] < held_c["accuracy_published"] == 1.0
    one = votes(3000)
    assert leave_one_out(one, 512, True)[1]["loo_unit"] is None


def test_assess_fields() -> None:
    loo, r = assess(votes(0, {"a": 3000, "b": 3000}), 512, True, resamples=300)
    assert r["status"] == "crossover" and r["n_points"] == 2 * len(GRID)
    assert r["verdict"] == AGGRESSIVE and r["loo_helps"] and len(loo) == 2
    assert r["accuracy"] == 1.0 and r["accuracy_published"] < 1.0
    _, tiny = assess(votes(3000, grid=np.array([16.0, 32.0])), 512, True)
    assert (
        tiny["status"] == "insufficient"
        and tiny["verdict"] == NOT_ENOUGH
        and math.isnan(tiny["ci_lo"])
    )
