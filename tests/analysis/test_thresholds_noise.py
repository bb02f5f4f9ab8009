"""The one noise model inside the threshold intervals: a vote that a re-run could
reverse (its two sides closer than their run-to-run spread) carries that probability,
and the bootstrap flips such votes, so a threshold resting on them gets a wider
interval; votes far outside the noise keep theirs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis.noise import estimate_noise
from analysis.threshold_checks import P_FLIP
from analysis.threshold_fit import bootstrap_brackets, count_votes, flip_rates
from analysis.thresholds import derive_guide_thresholds
from tests.factories import make_candidates
from tests.factories import thresholds as TF

DECODE = "decode_megamoe_tokens_per_rank"
SWITCH = 700


def repeat_frame(margin: float, spread: float, runs: int = 4, seed: int = 3) -> pd.DataFrame:
    """Decode sweeps measured ``runs`` times (one TensorRT-LLM version): the fused
    backend wins above ``SWITCH`` tokens by ``margin`` (relative), TRTLLM below; every
    score moves between runs by a log-normal factor of sd ``spread``."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(runs):
        for n in TF.GRID:
            fast, slow = (TF.FUSED, "TRTLLM") if n > SWITCH else ("TRTLLM", TF.FUSED)
            for backend, base in ((fast, 1.0), (slow, 1.0 + margin), ("CUTEDSL", 1.5)):
                comm = "NONE" if backend.startswith("MEGAMOE_") else "NVLINK_ONE_SIDED"
                score = base * float(np.exp(rng.normal(0.0, spread)))
                rows.append(
                    {
                        **TF.BASE,
                        C.MODEL: "m",
                        C.NUM_TOKENS: n,
                        C.BACKEND: backend,
                        C.COMM: comm,
                        C.SCORE_MS: score,
                        C.RUN_ID: run + 1,
                        C.TRTLLM_VERSION: "1.3.0",
                        C.RUN_DATE: f"2026-10-0{run + 1}",
                    }
                )
    return make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)])


def _check(frame: pd.DataFrame, noise: bool) -> tuple[dict[str, object], pd.DataFrame]:
    check = derive_guide_thresholds(frame, noise=estimate_noise(frame) if noise else None)
    row = check.table.set_index("name").loc[DECODE].to_dict()
    votes = check.evidence[check.evidence["name"] == DECODE]
    return row, votes


def _width(row: dict[str, object]) -> float:
    return float(np.log2(float(row["ci_hi"])) - np.log2(float(row["ci_lo"])))  # type: ignore[arg-type]


def test_votes_inside_the_noise_carry_their_flip_probability() -> None:
    noisy = repeat_frame(margin=0.02, spread=0.10)
    row, votes = _check(noisy, noise=True)
    assert P_FLIP in votes
    # medians 2 % apart with a 10 % run-to-run spread over 4 runs: mostly near a coin
    # toss (the drawn medians of a few land further apart)
    assert votes[P_FLIP].max() <= 0.5 and 0.1 <= votes[P_FLIP].median() <= 0.5
    assert (votes[P_FLIP] > 0.05).mean() >= 0.8
    assert float(row["noise_votes"]) == pytest.approx(votes[P_FLIP].sum())  # type: ignore[arg-type]
    quiet = repeat_frame(margin=0.30, spread=0.01)
    _, calm = _check(quiet, noise=True)
    assert calm[P_FLIP].max() < 1e-6  # 30 % apart, 1 % spread: no re-run reverses them


def test_noise_widens_the_interval_of_a_threshold_resting_on_close_votes() -> None:
    frame = repeat_frame(margin=0.02, spread=0.10)
    with_noise, _ = _check(frame, noise=True)
    without, _ = _check(frame, noise=False)
    assert with_noise["bracket_lo"] == without["bracket_lo"]  # the fit itself is the same
    wide = not np.isfinite(float(with_noise["ci_hi"])) or not np.isfinite(  # type: ignore[arg-type]
        float(with_noise["ci_lo"])  # type: ignore[arg-type]
    )
    assert wide or _width(with_noise) > _width(without)


def test_clear_votes_keep_their_interval() -> None:
    frame = repeat_frame(margin=0.30, spread=0.01)
    with_noise, _ = _check(frame, noise=True)
    without, _ = _check(frame, noise=False)
    assert (with_noise["ci_lo"], with_noise["ci_hi"]) == (without["ci_lo"], without["ci_hi"])
    assert float(with_noise["noise_votes"]) < 1e-3  # type: ignore[arg-type]


def test_flip_rates_average_per_cell_and_side() -> None:
    axis = np.array([16.0, 16.0, 32.0, 32.0, 64.0])
    is_x = np.array([True, True, False, True, False])
    p = np.array([0.2, 0.4, 0.1, np.nan, 0.3])
    c = count_votes(axis, is_x)
    fx, fn = flip_rates(axis, is_x, p, c.u)
    assert fx.tolist() == pytest.approx([0.3, 0.0, 0.0])
    assert fn.tolist() == pytest.approx([0.0, 0.1, 0.3])
    # flipping every vote turns the switch round: the bootstrap sees the reversed data
    grid = np.array([2.0**i for i in range(4, 12)])
    clean = count_votes(grid, grid > 200)
    ones = (np.ones(len(clean.u)), np.ones(len(clean.u)))
    flipped = bootstrap_brackets(clean, True, 50, seed=1, flips=ones)
    assert flipped.reversed_better.all()
