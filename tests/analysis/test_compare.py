"""analysis.compare: verdicts (threshold and noise band), status changes, best changes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import compare as K
from tests import factories
from tests.factories import version_sweeps as V


def _row(result: K.Comparison, tokens: int, backend: str, comm: str = V.NVL1) -> pd.Series:
    rows = result.rows
    hit = rows[
        (rows["num_tokens"] == tokens) & (rows["backend"] == backend) & (rows["comm"] == comm)
    ]
    assert len(hit) == 1, hit
    return hit.iloc[0]


@pytest.fixture
def rc27_rc28() -> K.Comparison:
    return K.compare(V.frame(("rc27a", "rc27b")), V.frame(("rc28",)))


def test_counts_match_the_factory_table(rc27_rc28: K.Comparison) -> None:
    assert rc27_rc28.counts == V.EXPECTED_COUNTS
    assert len(rc27_rc28.rows) == 9


def test_regression_beyond_threshold_and_noise(rc27_rc28: K.Comparison) -> None:
    row = _row(rc27_rc28, 256, "TRTLLM")
    assert row["verdict"] == "regression"
    assert row["base_ms"] == pytest.approx(1.0)
    assert row["head_ms"] == pytest.approx(1.2)
    assert row["change_pct"] == pytest.approx(20.0)
    # base pooled two equal repeats: the noise model's band is far below +20 %
    assert 0 < row["noise_pct"] < 5.0
    assert row["noise_source"] == "repeats"
    assert row["base_n_repeats"] == 2
    assert row["base_run_ids"] == "2,3"
    assert row["head_version"] == V.RC28


def test_change_inside_the_noise_band_is_inconclusive(rc27_rc28: K.Comparison) -> None:
    row = _row(rc27_rc28, 4096, "CUTEDSL")
    assert row["change_pct"] == pytest.approx(100 * (2.33 / 2.2 - 1))
    assert row["change_pct"] > 5.0
    # the repeats 2.1 and 2.3 differ by 9 %: a +5.9 % change is what a re-run gives
    assert row["noise_pct"] > 2 * row["change_pct"]
    assert row["run_spread_pct"] > 2.0 and row["noise_source"] == "repeats"
    assert row["verdict"] == "inconclusive"


def test_improvement_and_below_threshold(rc27_rc28: K.Comparison) -> None:
    assert _row(rc27_rc28, 4096, "TRTLLM")["verdict"] == "improvement"
    small = _row(rc27_rc28, 16384, "TRTLLM")
    assert small["change_pct"] == pytest.approx(2.5)
    assert small["verdict"] == "unchanged"


def test_status_changes_and_one_sided(rc27_rc28: K.Comparison) -> None:
    failed = _row(rc27_rc28, 256, "CUTLASS", V.NVL2)
    assert (failed["verdict"], failed["base_status"], failed["head_status"]) == (
        "new_failure",
        "success",
        "failed",
    )
    assert failed["base_ms"] == pytest.approx(1.3) and np.isnan(failed["head_ms"])
    assert _row(rc27_rc28, 256, "TRTLLM", "ALLGATHER")["verdict"] == "newly_skipped"
    assert _row(rc27_rc28, 16384, "CUTEDSL")["verdict"] == "only_base"
    assert _row(rc27_rc28, 16384, "MEGAMOE_CUTEDSL", "NONE")["verdict"] == "only_head"


def test_best_configuration_change(rc27_rc28: K.Comparison) -> None:
    best = rc27_rc28.best_changes
    assert len(best) == 1
    row = best.iloc[0]
    assert row["num_tokens"] == 256
    assert row["base_best_backend"] == "TRTLLM" and row["head_best_backend"] == "CUTEDSL"
    assert row["base_best_ms"] == pytest.approx(1.0)
    assert row["head_best_ms"] == pytest.approx(1.1)
    assert row["base_best_on_head_ms"] == pytest.approx(1.2)
    assert row["gain_pct"] == pytest.approx(100 * (1 - 1.1 / 1.2))
    assert not row["within_noise"]
    assert row["head_best"] == "CUTEDSL · NVLINK_ONE_SIDED · DEP EP8 TP1"


def _pair(base_ms: float, head_ms: float, **extra: object) -> tuple[pd.DataFrame, pd.DataFrame]:
    base = factories.make_candidates([{"score_ms": base_ms, **extra}], trtllm_version="a")
    head = factories.make_candidates([{"score_ms": head_ms, **extra}], run_id=2, trtllm_version="b")
    return base, head


def test_unknown_noise_uses_the_threshold_only() -> None:
    base, head = _pair(1.0, 1.06, iter_stdev_ms=None, iter_p90_ms=None)
    row = K.compare(base, head).rows.iloc[0]
    assert np.isnan(row["noise_pct"]) and row["noise_source"] == "unknown"
    assert row["verdict"] == "regression"
    assert K.compare(base, head, threshold_pct=7.0).rows.iloc[0]["verdict"] == "unchanged"


def test_threshold_decides_when_noise_is_small() -> None:
    base, head = _pair(1.0, 0.97)  # -3 %, band 1.41 %
    assert K.compare(base, head, threshold_pct=2.0).rows.iloc[0]["verdict"] == "improvement"
    assert K.compare(base, head).rows.iloc[0]["verdict"] == "unchanged"


def test_recovered_and_still_unsuccessful() -> None:
    base = factories.make_candidates(
        [
            {"backend": "TRTLLM", "status": "failed"},
            {"backend": "CUTEDSL", "status": "skipped"},
        ]
    )
    head = factories.make_candidates(
        [{"backend": "TRTLLM", "score_ms": 1.0}, {"backend": "CUTEDSL", "status": "failed"}],
        run_id=2,
    )
    rows = K.compare(base, head).rows.set_index("backend")
    assert rows.loc["TRTLLM", "verdict"] == "recovered"
    assert rows.loc["CUTEDSL", "verdict"] == "new_failure"  # skipped -> failed
    same = K.compare(base, base.assign(run_id=2)).rows.set_index("backend")
    assert set(same["verdict"]) == {"still_unsuccessful"}


def test_row_order_does_not_matter_and_inputs_are_kept() -> None:
    base, head = V.frame(("rc27a", "rc27b")), V.frame(("rc28",))
    before = base.copy()
    want = K.compare(base, head)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        got = K.compare(
            base.iloc[rng.permutation(len(base))], head.iloc[rng.permutation(len(head))]
        )
        pd.testing.assert_frame_equal(got.rows, want.rows)
        pd.testing.assert_frame_equal(got.best_changes, want.best_changes)
    pd.testing.assert_frame_equal(base, before)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_threshold_is_refused(bad: float) -> None:
    base, head = _pair(1.0, 1.1)
    with pytest.raises(ValueError, match="threshold_pct"):
        K.compare(base, head, threshold_pct=bad)


def test_empty_sides() -> None:
    empty = factories.make_candidates()
    result = K.compare(empty, empty)
    assert result.rows.empty and result.best_changes.empty
    assert result.counts["regression"] == 0
