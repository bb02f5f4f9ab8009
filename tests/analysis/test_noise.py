"""analysis.noise: run-to-run spread from repeats, history and priors; bands; verdicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis import noise as N
from tests import factories


def _runs(scores: dict[str, list[float]], **row: object) -> pd.DataFrame:
    """One row per run: ``scores`` maps a version to its runs' scores (in version
    order), one configuration."""
    rows, run = [], 0
    for i, (version, values) in enumerate(scores.items()):
        for value in values:
            run += 1
            rows.append(
                {
                    C.RUN_ID: run,
                    C.TRTLLM_VERSION: version,
                    C.RUN_DATE: f"2026-01-{i + 1:02d}",
                    C.SCORE_MS: value,
                    **row,
                }
            )
    return factories.make_candidates(rows)


def test_repeats_give_the_sample_spread_of_log_scores() -> None:
    got = N.estimate_noise(_runs({"1.0.0": [1.0, 1.1, 0.95]}))
    row = got.table.iloc[0]
    assert row[N.SOURCE] == N.REPEATS
    want = float(np.std(np.log([1.0, 1.1, 0.95]), ddof=1))
    assert row[N.SPREAD] == pytest.approx(want) and row[N.DF] == 2
    assert row[N.N_LEVEL] == 3 and row[N.LAST_VERSION] == "1.0.0"


def test_a_level_change_in_the_history_is_not_noise() -> None:
    # five versions around 1.0 (±1 %), then a real +20 % change kept for four versions
    scores = [1.0, 1.01, 0.99, 1.005, 0.995, 1.2, 1.21, 1.19, 1.2]
    history = _runs({f"1.0.{i}": [s] for i, s in enumerate(scores)})
    row = N.estimate_noise(history).table.iloc[0]
    assert row[N.SOURCE] == N.HISTORY
    assert row[N.SPREAD] < 0.02  # the noise, not the +20 % step
    assert row[N.DF] == len(scores) - 2  # two levels
    # the baseline is the runs since the change
    assert row[N.N_LEVEL] == 4 and math.exp(row[N.LEVEL]) == pytest.approx(1.2, rel=0.01)


def test_a_lone_step_is_no_evidence() -> None:
    one = N.estimate_noise(_runs({"1.0.0": [1.0], "1.0.1": [1.3], "1.0.2": [1.31]}))
    assert one.table.iloc[0][N.SOURCE] == N.WITHIN
    assert np.isnan(one.table.iloc[0][N.SPREAD]) and one.priors.empty


def _alike(spreads: dict[str, float], n_runs: int = 4, seed: int = 0) -> pd.DataFrame:
    """Repeats of one version for backends TRTLLM/CUTLASS/CUTEDSL at 3 token counts,
    each drawn with its given log spread (by backend), graph on."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(n_runs):
        for backend, sd in spreads.items():
            for tokens in (4, 8, 16):
                rows.append(
                    {
                        C.RUN_ID: run + 1,
                        C.TRTLLM_VERSION: "1.0.0",
                        C.BACKEND: backend,
                        C.NUM_TOKENS: tokens,
                        C.SCORE_MS: float(np.exp(rng.normal(0.0, sd))),
                    }
                )
    return factories.make_candidates(rows)


def test_a_configuration_without_evidence_gets_its_groups_prior() -> None:
    model = N.estimate_noise(_alike({"TRTLLM": 0.01, "CUTLASS": 0.01, "CUTEDSL": 0.3}))
    unseen = factories.make_candidates(
        [{C.BACKEND: "CUTEDSL", C.NUM_TOKENS: 32}, {C.BACKEND: "DEEPGEMM", C.NUM_TOKENS: 32}]
    )
    got = N.noise_for(model, unseen)
    assert list(got[N.SOURCE]) == [N.PRIOR, N.PRIOR]
    # CUTEDSL's own group (graph on, CUTEDSL, 4-63 tokens) is noisy; DEEPGEMM has no
    # group of its own and falls back to graph on x 4-63 tokens, all backends
    assert got[N.SPREAD].iat[0] > 0.1 > got[N.SPREAD].iat[1]
    levels = set(model.priors["level"])
    assert {0, 1} <= levels


def test_moderation_pulls_a_lucky_estimate_toward_its_group() -> None:
    # 12 alike configurations, one of which happened to give two identical runs
    frame = _alike({"TRTLLM": 0.02, "CUTLASS": 0.02, "CUTEDSL": 0.02}, n_runs=2, seed=3)
    lucky = (frame[C.BACKEND] == "TRTLLM") & (frame[C.NUM_TOKENS] == 4)
    frame.loc[lucky, C.SCORE_MS] = 1.0
    model = N.estimate_noise(frame)
    row = N.noise_for(model, frame.loc[lucky].iloc[:1])
    assert row[N.SPREAD].iat[0] > 0.005 and row[N.SOURCE].iat[0] == N.REPEATS


def test_fit_prior_spread_of_spreads() -> None:
    rng = np.random.default_rng(0)
    same = rng.chisquare(4, 400) / 4 * 0.01**2  # one true variance, 4 df each
    s0_sq, d0 = N.fit_prior(same, np.full(400, 4.0))
    assert math.sqrt(s0_sq) == pytest.approx(0.01, rel=0.1) and d0 > 30
    mixed = np.r_[same[:200], same[200:] * 400]  # half 1 %, half 20 %
    assert N.fit_prior(mixed, np.full(400, 4.0))[1] == N.MIN_PRIOR_DF


def test_change_band_narrows_with_runs_and_degrees_of_freedom() -> None:
    one = N.change_band(np.array([0.01]), np.array([1e6]), np.array([1]), np.array([1]))[0]
    # z(1 - 1e-4) = 3.719: 100 * (exp(3.719 * 0.01 * sqrt(2)) - 1)
    assert one == pytest.approx(100 * math.expm1(3.719 * 0.01 * math.sqrt(2)), rel=1e-3)
    more = N.change_band(np.array([0.01]), np.array([1e6]), np.array([8]), np.array([1]))[0]
    few_df = N.change_band(np.array([0.01]), np.array([3.0]), np.array([1]), np.array([1]))[0]
    assert more < one < few_df
    huge = N.change_band(np.array([5.0]), np.array([1.0]), np.array([1]), np.array([1]))[0]
    assert huge == pytest.approx(N.MAX_BAND_PCT)
    assert np.isnan(N.change_band(np.array([np.nan]), np.array([4.0]), [1], [1])[0])


def test_verdict_codes() -> None:
    change = np.array([20.0, -20.0, 20.0, 3.0, 8.0, np.nan])
    band = np.array([10.0, 10.0, 30.0, 1.0, np.nan, 5.0])
    assert list(N.verdict_codes(change, band, 5.0)) == [0, 1, 3, 2, 0, 2]


def test_row_order_does_not_matter_and_the_input_is_kept() -> None:
    frame = _alike({"TRTLLM": 0.01, "CUTLASS": 0.05, "CUTEDSL": 0.3}, n_runs=3)
    before = frame.copy()
    want = N.estimate_noise(frame)
    shuffled = frame.iloc[np.random.default_rng(1).permutation(len(frame))]
    got = N.estimate_noise(shuffled)
    pd.testing.assert_frame_equal(got.table, want.table)
    pd.testing.assert_frame_equal(frame, before)


def test_history_until_a_version_leaves_out_later_versions_and_the_head() -> None:
    frame = _runs({"1.0.9": [1.0], "1.0.10": [1.0, 1.1], "1.0.11": [1.2]})
    got = N.history_until(frame, "1.0.10", exclude_runs=[3])
    assert list(got[C.RUN_ID]) == [1, 2]  # 1.0.9 < 1.0.10 although "1.0.9" > "1.0.10"
    assert list(N.history_until(frame, None, [4])[C.RUN_ID]) == [1, 2, 3]


def test_boundary_t_is_scipys_two_sample_t() -> None:
    from scipy import stats

    y = np.log(np.array([1.0, 1.02, 0.99, 1.01, 1.2, 1.18, 1.22]))
    bounds = np.arange(1, len(y))
    got = N.boundary_t(y, bounds)
    want = [stats.ttest_ind(y[:k], y[k:]).statistic for k in bounds[1:-1]]
    assert got[1:-1] == pytest.approx(want)
