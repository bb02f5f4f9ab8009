"""analysis.versions and analysis.history: version order, score history, frontiers per
version and the frontier change on hand-checkable examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import history as H
from analysis.versions import parse_version, same_version, sort_versions, version_table
from tests.factories import version_sweeps as V


def test_versions_sort_by_number_then_date() -> None:
    versions = [
        "1.2.0rc28",
        "main",
        "1.2.0rc9",
        "1.1.0",
        "1.2.0",
        "1.2.0.dev20250101",
        "v1.2.0rc27",
        "1.2.0rc27",
        "feature-x",
    ]
    dates = [
        "2026-09-15",
        "2026-01-02",
        "2026-08-01",
        "2025-01-01",
        "2026-10-01",
        "2025-02-01",
        "2026-09-03",
        "2026-09-01",
        "2026-01-01",
    ]
    order = [versions[i] for i in sort_versions(versions, dates)]
    assert order == [
        "1.1.0",
        "1.2.0.dev20250101",
        "1.2.0rc9",
        "1.2.0rc27",  # same number as v1.2.0rc27, earlier date
        "v1.2.0rc27",
        "1.2.0rc28",
        "1.2.0",
        "feature-x",  # unparseable: last, by date
        "main",
    ]


def test_parse_and_same_version() -> None:
    assert parse_version("v1.3.0rc26") == parse_version("1.3.0rc26")
    assert parse_version("not a version") is None
    assert same_version("v1.2.0rc27", "1.2.0rc27")
    assert not same_version("1.2.0rc27", "1.2.0rc28")
    assert same_version("main", " main ")


def test_version_table_of_the_factory() -> None:
    table = version_table(V.frame(("rc28", "rc27b", "rc9", "rc27a")))
    assert list(table["version"]) == [V.RC9, V.RC27, V.RC28]
    assert list(table["n_runs"]) == [1, 2, 1]
    assert list(table["run_ids"]) == ["1", "2,3", "4"]
    assert table["first_run_date"].iloc[1] == "2026-09-01"
    assert table["last_run_date"].iloc[1] == "2026-09-02"


def _series(hist: pd.DataFrame, tokens: int, backend: str, comm: str) -> pd.DataFrame:
    return hist[
        (hist["num_tokens"] == tokens) & (hist["backend"] == backend) & (hist["comm"] == comm)
    ]


def test_score_history_per_version() -> None:
    hist = H.score_history(V.frame(("rc9", "rc27a", "rc27b", "rc28")))
    a = _series(hist, 256, "TRTLLM", V.NVL1)
    assert list(a["trtllm_version"]) == [V.RC9, V.RC27, V.RC28]
    assert list(a["score_ms"]) == pytest.approx([1.0, 1.0, 1.2])
    assert list(a["n_repeats"]) == [1, 2, 1]
    assert np.isnan(a["change_pct_vs_prev"].iloc[0])
    assert a["change_pct_vs_prev"].iloc[2] == pytest.approx(20.0)
    noisy = _series(hist, 4096, "CUTEDSL", V.NVL1)
    assert list(noisy["score_ms"]) == pytest.approx([2.2, 2.2, 2.33])  # rc27 median
    # a failed configuration has no point at that version
    assert list(_series(hist, 256, "CUTLASS", V.NVL2)["trtllm_version"]) == [V.RC9, V.RC27]


def test_score_history_per_run() -> None:
    hist = H.score_history(V.frame(("rc9", "rc27a", "rc27b", "rc28")), by="run")
    noisy = _series(hist, 4096, "CUTEDSL", V.NVL1)
    assert list(noisy["run_id"]) == [1, 2, 3, 4]
    assert list(noisy["score_ms"]) == pytest.approx([2.2, 2.1, 2.3, 2.33])
    assert list(noisy["run_date"]) == ["2026-08-01", "2026-09-01", "2026-09-02", "2026-09-15"]
    with pytest.raises(ValueError, match="by"):
        H.score_history(V.frame(("rc9",)), by="commit")  # type: ignore[arg-type]


def test_best_history() -> None:
    best = H.best_history(H.score_history(V.frame(("rc9", "rc27a", "rc27b", "rc28"))))
    at256 = best[best["num_tokens"] == 256]
    assert list(at256["trtllm_version"]) == [V.RC9, V.RC27, V.RC28]
    assert list(at256["backend"]) == ["TRTLLM", "TRTLLM", "CUTEDSL"]


def test_version_frontiers() -> None:
    front = H.version_frontiers(V.frame(("rc27a", "rc27b", "rc28")))
    decode = front[front["phase"] == "decode"]
    rc27 = decode[decode["trtllm_version"] == V.RC27]
    assert list(rc27["score_ms"]) == pytest.approx([1.0, 2.0])
    assert list(rc27["tokens_per_s_per_gpu"]) == pytest.approx([32000.0, 256000.0])
    rc28 = decode[decode["trtllm_version"] == V.RC28]
    assert list(rc28["score_ms"]) == pytest.approx([1.1, 1.8])
    assert list(rc28["backend"]) == ["CUTEDSL", "TRTLLM"]


def test_frontier_change_by_hand() -> None:
    base = pd.DataFrame({"score_ms": [1.0, 2.0, 2.5], "tokens_per_s_per_gpu": [10.0, 20.0, 15.0]})
    head = pd.DataFrame({"score_ms": [3.0, 1.0], "tokens_per_s_per_gpu": [30.0, 12.0]})
    change = H.frontier_change(base, head)
    # latencies >= 1 (both reach): T_base 10, 20, 20; T_head 12, 12, 30
    assert list(change.at_latency["latency_ms"]) == [1.0, 2.0, 3.0]
    assert list(change.at_latency["change_pct"]) == pytest.approx([20.0, -40.0, 50.0])
    assert change.summary["throughput_change_pct"] == pytest.approx(20.0)
    # throughputs <= 20 (both reach): L_base 1, 2, 2; L_head 1, 1, 3
    assert list(change.at_throughput["tokens_per_s_per_gpu"]) == [10.0, 12.0, 20.0]
    assert list(change.at_throughput["change_pct"]) == pytest.approx([0.0, -50.0, 50.0])
    assert change.summary["latency_change_pct"] == pytest.approx(0.0)
    # reference (1.1 * 3 ms, 0): base 1*10 + 1.3*20 = 36, head 2*12 + 0.3*30 = 33
    assert change.summary["reference_point"]["latency_ms"] == pytest.approx(3.3)
    assert change.summary["hypervolume_base"] == pytest.approx(36.0)
    assert change.summary["hypervolume_head"] == pytest.approx(33.0)
    assert change.summary["hypervolume_change_pct"] == pytest.approx(100 * (33 / 36 - 1))
    assert change.summary["base_points"] == 2  # (2.5, 15) is dominated


def test_frontier_change_is_row_order_independent() -> None:
    base = pd.DataFrame({"score_ms": [1.0, 2.0, 2.5], "tokens_per_s_per_gpu": [10.0, 20.0, 15.0]})
    head = pd.DataFrame({"score_ms": [3.0, 1.0], "tokens_per_s_per_gpu": [30.0, 12.0]})
    a = H.frontier_change(base, head)
    b = H.frontier_change(base.iloc[::-1], head.iloc[::-1])
    assert a.summary == b.summary
    pd.testing.assert_frame_equal(a.at_latency, b.at_latency)


def test_frontier_change_one_side_empty() -> None:
    base = pd.DataFrame({"score_ms": [1.0], "tokens_per_s_per_gpu": [10.0]})
    change = H.frontier_change(base, base.iloc[0:0])
    assert change.summary["throughput_change_pct"] is None
    assert change.at_latency.empty


def test_frontier_changes_per_slice_on_the_factory() -> None:
    points = H.per_version_frames(V.frame(("rc27a", "rc27b", "rc28")))
    base = points[points["trtllm_version"] == V.RC27]
    head = points[points["trtllm_version"] == V.RC28]
    out = dict((s["phase"], c) for s, c in H.frontier_changes(base, head))
    decode = out["decode"].summary
    assert decode["throughput_change_pct"] == pytest.approx(100 * (284444.444 / 256000 - 1), 1e-6)
    assert decode["latency_change_pct"] == pytest.approx(10.0)
    hv_base = 1.0 * 32000 + 0.2 * 256000
    hv_head = 0.7 * (256 / 0.0011 / 8) + 0.4 * (4096 / 0.0018 / 8)
    assert decode["hypervolume_change_pct"] == pytest.approx(100 * (hv_head / hv_base - 1))
    assert out["prefill"].summary["latency_change_pct"] == pytest.approx(2.5)
