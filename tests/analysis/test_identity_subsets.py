"""Configuration frames of a year of versions (issue 23): the latest version of each
configuration is pooled, older ones only counted; ``rows=`` answers as the filtered
frame; answers built on them (agreement over several trees, the measured capabilities)
equal the row-by-row ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.agreement import agreement_detail, workload_configs
from analysis.capabilities import measured_capabilities
from analysis.derived import add_derived
from analysis.identity import N_REPEATS, N_VERSIONS, REPEAT_RUN_IDS, configuration_frame
from analysis.tree import Thresholds
from tests.factories import make_candidates

# run -> date (run 3 undated: the oldest; then by date): run order 3, 2, 4, 1, 5
DATES = {1: "2026-01-04", 2: "2026-01-01", 3: None, 4: "2026-01-02", 5: "2026-01-04"}
ORDER = {3: 0, 2: 1, 4: 2, 1: 3, 5: 4}

Row = tuple[int, str, int, bool, int]
rows_strategy = st.lists(
    st.tuples(
        st.integers(1, 5),  # run
        st.sampled_from(["TRTLLM", "CUTEDSL"]),  # backend
        st.integers(1, 9),  # score (quarters of a ms)
        st.booleans(),  # success
        st.integers(0, 1),  # candidate index
    ),
    min_size=0,
    max_size=16,
)


def _frame(rows: list[Row], versions: dict[int, str]) -> pd.DataFrame:
    return add_derived(
        make_candidates(
            [
                {
                    C.RUN_ID: run,
                    C.RUN_DATE: DATES[run],
                    C.TRTLLM_VERSION: versions[run],
                    C.BACKEND: backend,
                    C.SCORE_MS: score / 4,
                    C.STATUS: "success" if ok else "failed",
                    C.CANDIDATE_INDEX: cand,
                }
                for run, backend, score, ok, cand in rows
            ]
        )
    )


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.lists(st.sampled_from(["1.0", "1.1", "1.2"]), min_size=5, max_size=5))
def test_latest_version_pooled_and_older_versions_counted(rows: list[Row], vs: list[str]) -> None:
    versions = dict(zip(range(1, 6), vs, strict=True))
    df = _frame(rows, versions)
    out = configuration_frame(df).set_index(C.BACKEND)
    ok = [r for r in rows if r[3]]
    assert sorted(out.index) == sorted({r[1] for r in ok})
    for backend in out.index:
        mine = [r for r in ok if r[1] == backend]
        by_version: dict[str, list[int]] = {}
        for r in mine:
            by_version.setdefault(versions[r[0]], []).append(r[0])
        # the version whose latest run is the latest; a run holds one version
        latest = max(by_version, key=lambda v: max(ORDER[run] for run in by_version[v]))
        per_run: dict[int, float] = {}
        for run, _b, score, _ok, _c in mine:
            if versions[run] == latest:
                per_run[run] = min(per_run.get(run, np.inf), score / 4)
        got = out.loc[backend]
        assert got[C.SCORE_MS] == pytest.approx(float(np.median(list(per_run.values()))))
        assert got[N_REPEATS] == len(per_run)
        assert got[REPEAT_RUN_IDS] == ",".join(str(r) for r in sorted(per_run))
        assert got[N_VERSIONS] == len(by_version)
        assert got[C.TRTLLM_VERSION] == latest


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.lists(st.booleans(), min_size=16, max_size=16))
def test_rows_mask_answers_as_the_filtered_frame(rows: list[Row], keep: list[bool]) -> None:
    df = _frame(rows, {1: "1.0", 2: "1.1", 3: "1.0", 4: "1.1", 5: "1.2"})
    mask = np.array(keep[: len(df)], dtype=bool)
    before = df.copy()
    for repeats in ("median", "latest"):
        got = configuration_frame(df, repeats, rows=mask)  # type: ignore[arg-type]
        pd.testing.assert_frame_equal(got, configuration_frame(df[mask], repeats))  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(df, before)  # input untouched
    once = configuration_frame(df)
    pd.testing.assert_frame_equal(configuration_frame(once, rows=np.ones(len(once), bool)), once)


def test_agreement_on_pooled_configurations_equals_agreement_on_rows() -> None:
    """compare_trees walks several trees over one slice: it pools the repeats once
    (workload_configs) and passes the slice's MNNVL; each answer is the row-by-row one."""
    rows = []
    for run in (1, 2, 3):
        for n, (trt, cute) in {256: (1.0, 1.3), 2048: (2.0, 1.8), 8192: (4.0, 3.1)}.items():
            rows.append({C.RUN_ID: run, C.NUM_TOKENS: n, C.BACKEND: "TRTLLM", C.SCORE_MS: trt})
            rows.append(
                {
                    C.RUN_ID: run,
                    C.NUM_TOKENS: n,
                    C.BACKEND: "MEGAMOE_CUTEDSL",
                    C.COMM: "NONE",
                    C.SCORE_MS: cute * (1 + run / 100),
                }
            )
    rows.append({C.RUN_ID: 3, C.NUM_TOKENS: 256, C.STATUS: "failed", C.SCORE_MS: None})
    rows.append({C.RUN_ID: 3, C.NUM_TOKENS: 512, C.ATTENTION_DP: None, C.SCORE_MS: 0.5})
    rows.append({C.RUN_ID: 3, C.NUM_TOKENS: 1024, C.NUM_EXPERTS: None, C.SCORE_MS: 0.7})
    df = add_derived(make_candidates(rows))
    cfg = workload_configs(df)
    assert cfg[N_REPEATS].tolist() == [3] * 6  # the unknown-attention / shape rows left out
    mnnvl = {"GB300": 8}
    for th in (None, Thresholds(), Thresholds(decode_megamoe_tokens_per_rank=100)):
        pd.testing.assert_frame_equal(
            agreement_detail(cfg, th, mnnvl=mnnvl), agreement_detail(df, th, mnnvl=mnnvl)
        )


def test_capabilities_count_a_run_once_across_spellings() -> None:
    df = pd.DataFrame(
        {
            "hardware": pd.Categorical(["gb300", "GB300", "GB300", "GB300"]),
            "world_size": [8, 8, 8, 8],
            "quant": ["NVFP4"] * 4,
            "backend": ["cutlass", "CUTLASS", "CUTLASS", "CUTLASS"],
            "comm": ["NVLINK_ONE_SIDED", "NVLINK_ONE_SIDED", None, "NVLINK_ONE_SIDED"],
            "status": ["success", "success", "success", "failed"],
            "run_id": [7, 7, 7, 9],
        }
    )
    caps = measured_capabilities(df)
    assert caps[["comm", "n_success", "n_runs"]].values.tolist() == [
        ["AUTO", 1, 1],
        ["NVLINK_ONE_SIDED", 2, 1],
    ]
    assert (caps["hardware"] == "GB300").all() and (caps["backend"] == "CUTLASS").all()
