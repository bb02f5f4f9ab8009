"""analysis.predict_shape_validate: which fits the leave-one-model-out validation makes
(leaving one out up to FOLDS models, folds of models above, so a slice's fits stop
growing with the square of its models) and that a held-out model's tie-break threshold
is never chosen on its own rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import predict_shape as S
from analysis import predict_shape_validate as L
from tests.analysis.test_predict_shape import SHAPES, TOKENS, frame

Plan = dict[tuple[str, ...], tuple[str, ...]]


def _names(m: int) -> list[str]:
    return [f"model_{i:02d}" for i in range(m)]


def _leave_one_out(names: list[str]) -> Plan:
    """The fits of the method before folds: each model on all the others; each other
    model on all but it and the held-out one, when such a fit keeps MIN_MODELS."""
    out: dict[tuple[str, ...], set[str]] = {}
    for held in names:
        others = tuple(m for m in names if m != held)
        out.setdefault(others, set()).add(held)
        if len(others) - 1 >= L.MIN_MODELS:
            for a in others:
                out.setdefault(tuple(m for m in others if m != a), set()).add(a)
    return {train: tuple(sorted(asked)) for train, asked in out.items()}


@pytest.mark.parametrize("m", [2, 3, 4, 5, 6])
def test_up_to_six_models_the_fits_are_leaving_one_out_as_before(m: int) -> None:
    assert L.FOLDS == 6
    assert L.slice_plan(_names(m)) == _leave_one_out(_names(m))
    assert L.model_folds(_names(m)) == [(n,) for n in _names(m)]


@pytest.mark.parametrize(("m", "fits"), [(3, 3), (6, 21), (7, 21), (17, 21), (60, 21)])
def test_the_fits_per_slice_stop_growing_with_the_models(m: int, fits: int) -> None:
    plan = L.slice_plan(_names(m))
    assert len(plan) == fits  # each a fit_shapes call of _slice
    # bounded by FOLDS (FOLDS + 1) / 2 (leaving one out at 17: 17 + 136 = 153)
    assert len(plan) <= L.FOLDS * (L.FOLDS + 1) // 2
    answered = pd.Series([a for asked in plan.values() for a in asked]).value_counts()
    assert answered.max() <= L.FOLDS  # the fit without its fold, one per other fold
    assert set(answered.index) == set(_names(m))


def test_seventeen_models_are_dealt_round_robin_into_six_folds() -> None:
    names = _names(17)
    folds = L.model_folds(reversed(names))
    assert folds[0] == ("model_00", "model_06", "model_12") and len(folds) == L.FOLDS
    assert sorted(n for f in folds for n in f) == names
    # a held-out model of a fold of three: its two fold-mates answered by the fit
    # without that fold, every other model by the fit without its fold and that one
    inner = L.inner_plan(names, "model_06")
    assert inner[0] == (tuple(n for n in names if n not in folds[0]), ("model_00", "model_12"))
    assert inner[1] == (tuple(n for n in names if n not in folds[0] + folds[1]), folds[1])


@settings(max_examples=60, deadline=None)
@given(st.sets(st.text("abcxyz_019", min_size=1, max_size=5), min_size=2, max_size=26))
def test_a_held_out_model_is_in_none_of_the_fits_that_choose_its_threshold(
    models: set[str],
) -> None:
    names = sorted(models)
    plan = L.slice_plan(names)
    assert plan == L.slice_plan(reversed(names))  # not the order the models come in
    for held in names:
        others = tuple(n for n in names if n != held)
        own = L.outer_train(names, held)  # its own answers: the fit without its fold
        assert held in plan[own] and held not in own
        assert set(own) <= set(others) and (len(names) > L.FOLDS or own == others)
        inner = L.inner_plan(names, held)
        if len(names) - 2 < L.MIN_MODELS:
            assert inner == []  # too few models: the a-priori threshold
            continue
        answered = [a for _, asked in inner for a in asked]
        assert sorted(answered) == list(others)  # every other model, once
        for train, asked in inner:
            assert held not in train and held not in asked
            assert not set(train) & set(asked) and len(train) >= L.MIN_MODELS
            assert set(asked) <= set(plan[train])  # the slice makes that fit


def test_a_model_s_workloads_are_sampled_evenly_within_the_budget() -> None:
    keys = [(ws, t, True, True) for ws in (4, 8) for t in TOKENS]
    assert L.sample_workloads(keys, 100) == sorted(keys)  # all while they fit
    got = L.sample_workloads(list(reversed(keys)), 5)
    assert len(got) == 5 and got[0] == min(keys) and got[-1] == max(keys)
    assert got == sorted(got) and set(got) <= set(keys)
    assert L.sample_workloads(keys, 1) == [min(keys)]


EXTRA = {
    "m_160": S.Shape(160, 6, 5120, 1536),
    "m_512": S.Shape(512, 10, 8192, 2048),
    "m_narrow": S.Shape(256, 4, 4096, 2048),
}


@pytest.mark.slow
def test_seven_models_a_threshold_does_not_move_with_its_own_models_rows() -> None:
    # seven models: m_160 and m_wide share a fold; m_160's threshold is chosen on the
    # other six's answers by fits that saw neither it nor them, so rescoring m_160's own
    # rows (its winner flipped) must leave it where it was (every third token count: a
    # quicker slice)
    shapes = {**SHAPES, **EXTRA}
    assert ("m_160", "m_wide") in L.model_folds(shapes) and len(shapes) == L.FOLDS + 1
    f = frame(tuple(shapes), sizes=(8,), shapes=shapes)
    f = f[f["num_tokens"].isin(TOKENS[::3])].reset_index(drop=True)
    mine = (f["model"] == "m_160").to_numpy()
    flipped = f.copy()
    megamoe = mine & (f["backend"] == "MEGAMOE_CUTEDSL").to_numpy()
    flipped.loc[megamoe, "score_ms"] = f.loc[megamoe, "score_ms"] * 2.5
    flipped.loc[mine & ~megamoe, "score_ms"] = f.loc[mine & ~megamoe, "score_ms"] * 0.6
    want, got = L.validate_models(f), L.validate_models(flipped)
    held = got["model"] == "m_160"
    assert set(got.loc[held, "prefer_tree_below"]) == set(want.loc[held, "prefer_tree_below"])
    assert got.loc[held, "prefer_tree_below"].nunique() == 1
    # the rescoring mattered: m_160's measured regrets are not the same
    assert not np.allclose(
        got.loc[held, "regret_floor_pct"].to_numpy(float),
        want.loc[held, "regret_floor_pct"].to_numpy(float),
    )
    assert set(got["model"]) == set(shapes) and set(got["prefer_tree_below"]) <= set(L.THRESHOLDS)
