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


def _rows() -> pd.DataFrame:
    """Two workloads measured in three runs (1-3, bench_moe) and one from NVIDIA's
    top-3 dashboard data (run 4)."""
    runs = {1: ("1.2.0", "2026-09-01", "bench_moe"), 2: ("1.3.0", "2026-10-01", "bench_moe")}
    runs |= {
        3: ("1.3.0", "2026-10-02", "bench_moe"),
        4: ("1.3.0", "2026-11-01", "nvidia_dashboard"),
    }
    return pd.DataFrame(
        [
            {"run_id": r, "trtllm_version": v, "run_date": d, "source_format": s}
            for r, (v, d, s) in runs.items()
        ]
    )


def test_best_rows_get_the_confidence_panel() -> None:
    table = pd.DataFrame(
        {
            "best_run_id": [3, 3, 4],
            "best_repeat_run_ids": ["1,2,3", "2,3", None],
            "margin_pct": [25.0, 2.0, math.nan],
            "noise_band_pct": [3.1, 5.0, 3.0],
            "noise_source": ["repeats", "repeats+history", "default"],
        }
    )
    out = V.with_evidence(table, _rows())
    assert list(out[V.CONFIDENCE]) == [V.DEPLOY, V.TIE, V.DEPLOY]
    assert list(out[V.EVIDENCE_RUNS]) == [3, 2, 1]
    assert list(out[V.EVIDENCE_VERSIONS]) == ["1.2.0, 1.3.0", "1.3.0", "1.3.0"]
    assert list(out[V.EVIDENCE_DATE]) == ["2026-10-02", "2026-10-02", "2026-11-01"]
    assert list(out[V.TOP3_ONLY]) == [False, False, True]
    assert out[V.MEASURED].all()
    assert out[V.CONFIDENCE_NOTE].iat[0] == (
        "deploy; margin 25.0 % beyond the noise band 3.1 % (repeats); 3 runs; "
        "TensorRT-LLM 1.2.0, 1.3.0 (2026-10-02); measured"
    )
    assert "inside the noise band 5.0 %" in out[V.CONFIDENCE_NOTE].iat[1]
    last = out[V.CONFIDENCE_NOTE].iat[2]
    assert "no runner-up measured" in last and "top 3 per workload only" in last
    assert "1 run;" in last
    empty = V.with_evidence(table.iloc[:0], _rows())
    assert set(V.EVIDENCE_COLUMNS) <= set(empty.columns) and empty.empty
