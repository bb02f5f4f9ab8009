"""Properties of analysis.compare on random sides (hypothesis): the answer does not depend
on row order, verdicts agree with the numbers they are drawn from, every configuration
of either side appears once, counts add up, a change within the threshold is
unchanged and one inside the noise band inconclusive, and the inputs are not modified."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis import compare as K
from tests.factories import make_candidates

ROW = st.fixed_dictionaries(
    {
        C.BACKEND: st.sampled_from(["TRTLLM", "CUTEDSL", "CUTLASS"]),
        C.COMM: st.sampled_from(["NVLINK_ONE_SIDED", "ALLGATHER"]),
        C.NUM_TOKENS: st.sampled_from([1, 64, 4096]),
        C.CUDA_GRAPH: st.booleans(),
        C.RUN_ID: st.sampled_from([1, 2]),
        C.STATUS: st.sampled_from(["success", "success", "success", "failed", "skipped"]),
        C.SCORE_MS: st.sampled_from([0.5, 0.51, 0.6, 1.0, 2.0]),
        C.ITER_STDEV_MS: st.one_of(st.none(), st.sampled_from([0.0, 0.01, 0.1])),
    }
)


def _frame(rows: list[dict[str, object]], version: str, offset: int) -> pd.DataFrame:
    out = [
        {**r, C.RUN_ID: int(r[C.RUN_ID]) + offset, C.CANDIDATE_INDEX: i} for i, r in enumerate(rows)
    ]
    return make_candidates(out, trtllm_version=version, iter_p90_ms=None)


SIDES = st.tuples(st.lists(ROW, min_size=1, max_size=25), st.lists(ROW, min_size=1, max_size=25))


@settings(max_examples=30, deadline=None)
@given(sides=SIDES, seed=st.integers(0, 1000), threshold=st.sampled_from([0.0, 5.0, 30.0]))
def test_compare_properties(
    sides: tuple[list[dict[str, object]], list[dict[str, object]]], seed: int, threshold: float
) -> None:
    base, head = _frame(sides[0], "a", 0), _frame(sides[1], "b", 10)
    before = (base.copy(), head.copy())
    got = K.compare(base, head, threshold_pct=threshold)
    rng = np.random.default_rng(seed)
    shuffled = K.compare(
        base.iloc[rng.permutation(len(base))],
        head.iloc[rng.permutation(len(head))],
        threshold_pct=threshold,
    )
    pd.testing.assert_frame_equal(got.rows, shuffled.rows)
    pd.testing.assert_frame_equal(got.best_changes, shuffled.best_changes)
    pd.testing.assert_frame_equal(base, before[0])
    pd.testing.assert_frame_equal(head, before[1])
    rows = got.rows
    key = [c for c in got.key]
    assert not rows.duplicated(key).any()
    n_keys = len(
        pd.concat([base, head]).drop_duplicates([C.BACKEND, C.COMM, C.NUM_TOKENS, C.CUDA_GRAPH])
    )
    assert len(rows) == n_keys
    assert sum(v for k, v in got.counts.items() if k != K.BEST_CHANGED) == len(rows)
    # the verdict judges the change against the baseline (analysis.noise.judge)
    change = rows[K.BASELINE_CHANGE_PCT].to_numpy(float)
    noise = rows[K.NOISE_PCT].to_numpy(float)
    verdict = rows[K.VERDICT].astype(str).to_numpy()
    over = np.abs(change) > threshold
    beyond = over & (np.isnan(noise) | (np.abs(change) > noise))
    measured = np.isfinite(change)
    assert (verdict[measured & beyond & (change > 0)] == K.REGRESSION).all()
    assert (verdict[measured & beyond & (change < 0)] == K.IMPROVEMENT).all()
    assert (verdict[measured & over & ~beyond] == K.INCONCLUSIVE).all()
    assert (verdict[measured & ~over] == K.UNCHANGED).all()
    judged = {K.REGRESSION, K.IMPROVEMENT, K.UNCHANGED, K.INCONCLUSIVE}
    assert set(verdict[~measured]) <= set(K.VERDICTS) - judged
