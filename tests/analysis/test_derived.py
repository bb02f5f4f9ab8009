from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import columns as C
from analysis.derived import (
    activated_tokens_per_rank,
    add_derived,
    group_codes,
    parse_parallel_mode,
    rankable_mask,
)
from tests.factories import make_candidates


def test_dp_activated_tokens_and_dispatch_kb() -> None:
    df = add_derived(
        make_candidates(
            num_tokens=1024,
            top_k=6,
            world_size=8,
            hidden_size=7168,
            quant="NVFP4",
            parallel_mode="DEP",
        )
    )
    row = df.iloc[0]
    assert row[C.ACTIVATED_TOKENS_PER_RANK] == 1024 * 6 / 8
    assert row[C.DISPATCH_KB] == pytest.approx(768 * 7168 * 0.5 / 1024)
    assert row[C.LOCAL_BATCH] == 128
    assert row[C.PHASE] == "decode"


def test_tp_uses_ep_size_not_world_size() -> None:
    # TTP2EP4: every rank sees all 64 tokens; experts split 4 ways -> 64*8/4 per rank.
    df = add_derived(
        make_candidates(
            [
                {C.PARALLEL_MODE: "TTP2EP4"},
                {C.PARALLEL_MODE: "TEP"},
                {C.PARALLEL_MODE: "TTP"},
            ],
            num_tokens=64,
            top_k=8,
            world_size=8,
        )
    )
    assert list(df[C.ACTIVATED_TOKENS_PER_RANK]) == [128.0, 64.0, 512.0]
    assert list(df[C.LOCAL_BATCH]) == [64, 64, 64]


def test_tp_missing_ep_size_is_filled_from_mode() -> None:
    df = make_candidates(parallel_mode="TTP2EP4", num_tokens=64, top_k=8, world_size=8)
    df[C.MOE_EP_SIZE] = pd.array([None], dtype="Int64")
    assert add_derived(df)[C.ACTIVATED_TOKENS_PER_RANK].iat[0] == 128.0


def test_throughput_per_gpu_same_formula_both_modes() -> None:
    df = add_derived(
        make_candidates(
            [{C.PARALLEL_MODE: "DEP"}, {C.PARALLEL_MODE: "TEP"}],
            num_tokens=512,
            world_size=4,
            score_ms=2.0,
        )
    )
    assert list(df[C.TOKENS_PER_S_PER_GPU]) == [512 / 0.002 / 4] * 2


def test_unknown_quant_and_bad_values_give_nan_not_crash() -> None:
    df = add_derived(
        make_candidates(
            [
                {C.QUANT: "SOMETHING_NEW"},
                {C.QUANT: None},
                {C.STATUS: "failed"},
                {C.NUM_TOKENS: 10, C.WORLD_SIZE: 4},
                {C.CUDA_GRAPH: False},
                {C.CUDA_GRAPH: None},
            ]
        )
    )
    assert math.isnan(df[C.DISPATCH_KB].iat[0]) and math.isnan(df[C.DISPATCH_KB].iat[1])
    assert math.isnan(df[C.TOKENS_PER_S_PER_GPU].iat[2])
    assert df[C.LOCAL_BATCH].isna().iat[3]  # 10 / 4 not integral under DP
    assert df[C.PHASE].iat[4] == "prefill"
    assert df[C.PHASE].isna().iat[5]


def test_attention_mode_inferred_from_parallel_mode_when_flag_missing() -> None:
    df = make_candidates(parallel_mode="TEP", num_tokens=64, top_k=8, world_size=8)
    df[C.ATTENTION_DP] = pd.array([None], dtype="boolean")
    df[C.ATTN] = None
    assert add_derived(df)[C.LOCAL_BATCH].iat[0] == 64


def test_parse_parallel_mode() -> None:
    assert parse_parallel_mode("DEP", 8) == (True, 8, 1)
    assert parse_parallel_mode("ttp4ep2", 8) == (False, 2, 4)
    assert parse_parallel_mode("DTP2EP4", 8) == (True, 4, 2)
    assert parse_parallel_mode("CUSTOM", 8) is None
    assert parse_parallel_mode(None, 8) is None


def test_scalar_matches_column() -> None:
    assert activated_tokens_per_rank(64, 8, 8, False, 4) == 128.0
    assert activated_tokens_per_rank(1024, 6, 8, True) == 768.0
    assert math.isnan(activated_tokens_per_rank(1, 1, 0, True))


def test_rankable_mask_excludes_autotune_failures() -> None:
    df = make_candidates(
        [
            {},
            {C.AUTOTUNE_STATUS: "failed:RuntimeError: x"},
            {C.FAILURE_CATEGORY: "autotune_failed"},
            {C.STATUS: "skipped"},
            {C.SCORE_MS: float("inf")},
            {C.AUTOTUNE_STATUS: None},
        ]
    )
    assert list(rankable_mask(df)) == [True, False, False, False, False, True]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["DEP", "TEP", "TTP", "DTP2EP4"]),
            st.integers(1, 70000),
            st.floats(0.01, 100),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_add_derived_does_not_mutate_and_is_rowwise(rows: list[tuple[str, int, float]]) -> None:
    df = make_candidates([{C.PARALLEL_MODE: m, C.NUM_TOKENS: n, C.SCORE_MS: s} for m, n, s in rows])
    before = df.copy()
    out = add_derived(df)
    pd.testing.assert_frame_equal(df, before)
    perm = np.random.default_rng(0).permutation(len(df))
    shuffled = add_derived(df.iloc[perm]).sort_index()
    pd.testing.assert_frame_equal(shuffled, out)
    assert (out[C.ACTIVATED_TOKENS_PER_RANK] > 0).all()


def test_group_codes_match_groupby_on_mixed_dtypes() -> None:
    rng = np.random.default_rng(5)
    n = 200
    df = pd.DataFrame(
        {
            "i": rng.integers(-2, 3, n),
            "f": rng.choice([0.5, np.nan, -1.0], n),
            "b": rng.random(n) < 0.5,
            "nb": pd.array(rng.choice([True, False, None], n), dtype="boolean"),
            "ni": pd.array(rng.choice([1, 2, None], n), dtype="Int64"),
            "s": pd.array(rng.choice(["b", "a", None], n), dtype="string"),
            "c": pd.Categorical(rng.choice(["z", "y", None], n), categories=["z", "x", "y"]),
            "o": pd.Series(rng.choice(["q", "p", None], n), dtype=object),
        }
    )
    for cols in (
        ["i"],
        ["c", "f"],
        ["nb", "s", "i"],
        ["ni", "c", "b"],
        ["o", "i"],
        list(df.columns),
    ):
        want = df.groupby(cols, sort=True, dropna=False, observed=True).ngroup().to_numpy()
        assert np.array_equal(group_codes(df, cols), want), cols
