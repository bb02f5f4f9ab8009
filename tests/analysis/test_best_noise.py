"""analysis.best with the noise model: a margin inside what a re-run could open between
two configurations is a tie, the band says where it came from."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import best as B
from analysis import columns as C
from analysis import noise as N
from tests import factories


def _repeats(spread: float, seed: int = 0) -> pd.DataFrame:
    """Four runs of one version: TRTLLM ~1.00 ms and CUTLASS ~1.03 ms at three token
    counts, each run moved by a log-normal noise of ``spread``."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(1, 5):
        for tokens in (64, 128, 256):
            for backend, base in (("TRTLLM", 1.0), ("CUTLASS", 1.03)):
                rows.append(
                    {
                        C.RUN_ID: run,
                        C.TRTLLM_VERSION: "1.0.0",
                        C.BACKEND: backend,
                        C.NUM_TOKENS: tokens,
                        C.SCORE_MS: base * tokens / 64 * float(np.exp(rng.normal(0, spread))),
                    }
                )
    return factories.make_candidates(rows)


def test_noisy_configurations_tie_quiet_ones_do_not() -> None:
    quiet, noisy = _repeats(0.002), _repeats(0.15)
    calm = B.best_by_workload(quiet, "dashboard", noise=N.estimate_noise(quiet))
    assert not calm[B.IS_TIE].any() and set(calm[B.NOISE_SOURCE]) == {N.REPEATS}
    rough = B.best_by_workload(noisy, "dashboard", noise=N.estimate_noise(noisy))
    assert (rough[B.NOISE_BAND_PCT] > 5).all() and rough[B.IS_TIE].sum() >= 2
    assert (rough[B.IS_TIE] == (rough[B.MARGIN_PCT] <= rough[B.NOISE_BAND_PCT])).all()
    # without a model: the within-run rule of before (the pooled repeats' spreads)
    plain = B.best_by_workload(noisy, "dashboard")
    assert set(plain[B.NOISE_SOURCE]) == {"run_to_run"}
