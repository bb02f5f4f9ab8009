"""analysis.predict_shape / predict_shape_validate: a model or world size the store has
not measured, answered by one model across shapes on physical features, and the
leave-one-model-out validation against the guide's tree."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge

from analysis import predict_shape as S
from analysis import predict_shape_validate as L
from analysis.kind_ridge import KindRidge
from service.frames import prepare_frame
from tests import factories

SHAPES = {
    "m_small": S.Shape(128, 4, 4096, 1536),
    "m_mid": S.Shape(256, 8, 6144, 2048),
    "m_big": S.Shape(384, 8, 7168, 2048),
    "m_wide": S.Shape(384, 6, 7168, 3072),
}
TOKENS = tuple(2**i for i in range(0, 14, 1))


def law(kind: str, shape: S.Shape, ws: int, tokens: int) -> float:
    """A kernel model: a launch floor, weight bytes read at a bandwidth, FLOPs at a rate
    (per rank, attention DP, pure EP); the fused kernel has the lower floor, the other
    the faster math -- their crossover moves with the shape."""
    rank = tokens * shape.top_k / ws
    flops = rank * 6 * shape.hidden_size * shape.intermediate_size
    touched = -np.expm1(-tokens * shape.top_k / shape.num_experts)
    weights = (
        shape.num_experts / ws * touched * 3 * shape.hidden_size * shape.intermediate_size * 0.5
    )
    floor, rate = {"MEGAMOE_CUTEDSL": (0.02, 1.0e15), "TRTLLM": (0.05, 2.5e15)}[kind]
    return floor + 1000 * (weights / 4e12 + flops / rate)


def frame(
    models: tuple[str, ...] = tuple(SHAPES),
    sizes: tuple[int, ...] = (4, 8),
    patterns: tuple[tuple[str, float], ...] = (("balanced", 1.0),),
    shapes: Mapping[str, S.Shape] = SHAPES,
) -> pd.DataFrame:
    """``patterns``: (routing pattern, factor on the law's score) measured per workload;
    ``shapes``: each model's (default :data:`SHAPES`)."""
    rows = []
    combos = itertools.product(models, sizes, TOKENS, patterns)
    for m, ws, t, (pattern, slower) in combos:
        shape = shapes[m]
        for backend, comm in (("MEGAMOE_CUTEDSL", "NONE"), ("TRTLLM", "NVLINK_ONE_SIDED")):
            rows.append({
                "model": m, "hardware": "GB300", "quant": "NVFP4", "world_size": ws,
                "num_tokens": t, "backend": backend, "comm": comm, "parallel_mode": "DEP",
                "moe_ep_size": ws, "moe_tp_size": 1, "attention_dp": True,
                "cuda_graph": True, "num_experts": shape.num_experts,
                "top_k": shape.top_k, "hidden_size": shape.hidden_size,
                "intermediate_size": shape.intermediate_size,
                "score_ms": slower * law(backend, shape, ws, t), "dispatch": pattern,
            })  # fmt: skip
    out = factories.make_candidates(rows)
    out["candidate_index"] = np.arange(len(out))
    out["run_id"] = pd.factorize(out["model"].astype(str) + out["world_size"].astype(str))[0] + 1
    return prepare_frame(out)


def _truth_pick(shape: S.Shape, ws: int, t: int) -> str:
    return min(("MEGAMOE_CUTEDSL", "TRTLLM"), key=lambda k: law(k, shape, ws, t))


def test_features_are_per_rank_physics() -> None:
    f = frame(models=("m_mid",), sizes=(8,))
    row = f[(f["num_tokens"] == 64) & (f["backend"] == "TRTLLM")]
    got = S.features(row).iloc[0]
    assert np.exp(got["log_tokens_rank"]) == pytest.approx(64 * 8 / 8)
    assert np.exp(got["log_flops_rank"]) == pytest.approx(64 * 6 * 6144 * 2048)
    bytes_ = 256 / 8 * -np.expm1(-64 * 8 / 256) * 3 * 6144 * 2048 * 0.5
    assert np.exp(got["log_weight_bytes_rank"]) == pytest.approx(bytes_)


def test_a_model_given_by_its_shape_gets_the_right_pick_with_intervals() -> None:
    shape = SHAPES["m_mid"]
    # the model's own pick (the tree breaks no tie: its thresholds are not this law's)
    fit = replace(S.fit_shapes(frame(models=("m_small", "m_big", "m_wide"))), prefer_tree_below=0.0)
    right = 0
    for t in (3, 48, 700, 5000):
        got = S.predict_shape(fit, shape, "NVFP4", 8, t)
        truth = law(str(got["backend"].iat[0]), shape, 8, t)
        assert (got["lo_ms"] <= got["score_ms"]).all() and (got["score_ms"] <= got["hi_ms"]).all()
        best = min(law(k, shape, 8, t) for k in ("MEGAMOE_CUTEDSL", "TRTLLM"))
        assert truth / best - 1 < 0.05
        right += got["backend"].iat[0] == _truth_pick(shape, 8, t)
    assert right >= 3


def test_a_world_size_not_stored_is_predicted_from_the_others() -> None:
    # m_big measured at 4 and 8 only (the others at 16 too): asked at 16
    f = pd.concat([frame(models=("m_big",)), frame(models=("m_small", "m_mid"), sizes=(4, 8, 16))])
    fit = S.fit_shapes(f.reset_index(drop=True))
    for t in (16, 1024, 8192):
        got = S.predict_shape(fit, SHAPES["m_big"], "NVFP4", 16, t)
        assert int(got["moe_ep_size"].iat[0]) == 16 and got["parallel_mode"].iat[0] == "DEP"
        pick = str(got["backend"].iat[0])
        best = min(law(k, SHAPES["m_big"], 16, t) for k in ("MEGAMOE_CUTEDSL", "TRTLLM"))
        assert law(pick, SHAPES["m_big"], 16, t) / best - 1 < 0.05


def test_the_mean_ridge_is_the_conformal_model_s_point_prediction() -> None:
    # the local correction predicts every fitted model in one product of the mean
    # coefficients; it must equal MAPIE's own (mean-aggregated) point prediction, and
    # the answers must not change when the fit lacks it
    fit = S.fit_shapes(frame())
    assert fit.point is not None
    rows = S.candidates(fit, 8, True, True)
    asked = pd.concat([S._with_shape(rows, shape, "NVFP4", t) for shape in SHAPES.values()
                       for t in (1, 100, 5000)], ignore_index=True)  # fmt: skip
    code = pd.Categorical(asked[S.KIND], categories=fit.kinds).codes
    want = fit.model.predict(np.c_[code, S.features(asked).to_numpy(float)])
    np.testing.assert_allclose(S._point(fit, asked), want, rtol=1e-9, atol=1e-9)
    without = replace(fit, point=None, families={})
    for t in (3, 700):
        pd.testing.assert_frame_equal(
            S.predict_shape(fit, SHAPES["m_wide"], "NVFP4", 8, t),
            S.predict_shape(without, SHAPES["m_wide"], "NVFP4", 8, t),
            rtol=1e-9,
        )


def test_a_slice_over_the_row_cap_is_fitted_on_an_even_sample_with_the_same_picks() -> None:
    f = frame()
    rows = S.slice_rows(f)
    cap = len(rows) // 3
    pos = S.fit_sample(rows, cap)
    assert len(pos) <= cap and len(np.unique(pos)) == len(pos)
    picked = rows.iloc[pos]
    # every model keeps its share, every kind and world size is still there
    share = picked["model"].astype(str).value_counts() / rows["model"].astype(str).value_counts()
    assert share.between(0.25, 0.34).all()
    assert set(picked[S.KIND]) == set(rows[S.KIND])
    assert set(picked["world_size"]) == set(rows["world_size"])
    np.testing.assert_array_equal(S.fit_sample(rows, len(rows)), np.arange(len(rows)))
    full, capped = S.fit_shapes(f), S.fit_shapes(f, max_rows=cap)
    assert len(capped.model._mapie_regressor.conformity_scores_) == len(pos)
    assert len(capped.seen) == len(full.seen)  # the local correction reads every row
    for t in (4, 300, 4096):
        a = S.predict_shape(full, SHAPES["m_wide"], "NVFP4", 8, t)
        b = S.predict_shape(capped, SHAPES["m_wide"], "NVFP4", 8, t)
        assert a["config"].iat[0] == b["config"].iat[0]


def test_leave_one_model_out_scores_the_pick_the_tree_and_the_nearest_model() -> None:
    f = frame()
    before = f.copy()
    table = L.validate_models(f)
    pd.testing.assert_frame_equal(f, before)
    assert set(table["model"]) == set(SHAPES)
    summary = L.summarize_models(table)
    assert summary["n_workloads"] == len(SHAPES) * 2 * len(TOKENS)
    assert summary["predicted"]["censored"] == 0  # every configuration measured
    assert summary["predicted"]["p90_regret_pct"] < 5.0
    assert 0.5 <= summary["coverage"] <= 1.0
    assert {"predicted", "tree"} <= set(summary["paired"])
    # four models: each held-out model's threshold chosen inside its three training models
    per_model = table.groupby("model")["prefer_tree_below"]
    assert (per_model.nunique() == 1).all() and set(per_model.first()) <= set(L.THRESHOLDS)
    by_tree = table["picked_by"] == "decision tree"
    assert (table.loc[by_tree, "p_fastest"] < table.loc[by_tree, "prefer_tree_below"]).all()


def test_a_second_routing_pattern_leaves_the_shape_answers_unchanged() -> None:
    # a cell holding skewed routing beside balanced (a workload key of the tree's view):
    # each model is fitted and scored under its default pattern, as its predictions are
    # (it failed with "truth value of a Series is ambiguous" on such a store)
    models = ("m_small", "m_mid", "m_big")
    both = frame(models, sizes=(8,), patterns=(("balanced", 1.0), ("recv_hotspot", 1.4)))
    want = L.validate_models(frame(models, sizes=(8,)))
    got = L.validate_models(both)
    assert len(got) == len(want) > 0
    pd.testing.assert_frame_equal(got, want)
    fit_both, fit_one = S.fit_shapes(both), S.fit_shapes(frame(models, sizes=(8,)))
    pd.testing.assert_frame_equal(
        S.predict_shape(fit_both, SHAPES["m_wide"], "NVFP4", 8, 700),
        S.predict_shape(fit_one, SHAPES["m_wide"], "NVFP4", 8, 700),
    )


def test_the_tree_breaks_what_the_model_cannot_tell_apart() -> None:
    from analysis.tree import Deployment, recommend

    fit = S.fit_shapes(frame(models=("m_small", "m_big", "m_wide")))
    for t in (16, 700, 5000):
        got = S.predict_shape(fit, SHAPES["m_mid"], "NVFP4", 8, t)
        assert got["p_fastest"].sum() == pytest.approx(1.0)
        rec = recommend(Deployment("GB300", 256, 8, 6144, "NVFP4", 8, True, True, t))
        comm = rec.comm if rec.force_comm else rec.expected_comm
        is_tree = (got["backend"] == rec.backend) & (got["comm"] == comm) & got["contender"]
        first = got.iloc[0]
        if first["picked_by"] == "shape model":  # sure enough, or the tree agrees / is absent
            assert first["p_fastest"] >= S.PREFER_TREE_BELOW or is_tree.iat[0] or not is_tree.any()
        else:
            assert first["picked_by"].startswith("decision tree") and is_tree.iat[0]
            assert first["p_fastest"] < got["p_fastest"].max()  # the model preferred another
        assert (got["picked_by"].iloc[1:] == "").all()


def _answers(p: list[float], model: list[float], tree: list[float]) -> pd.DataFrame:
    return pd.DataFrame({
        "model": [f"m{i % 3}" for i in range(len(p))], "p_fastest": p,
        "model_regret_pct": model, "tree_pick": ["tree"] * len(p),
        "tree_pick_regret_pct": tree, "regret_floor_pct": [20.0] * len(p),
    })  # fmt: skip


def test_the_tie_break_threshold_is_the_one_with_the_least_p90_regret() -> None:
    # unsure picks (P 0.3) were wrong and the tree right; sure ones (P 0.9) the opposite:
    # any threshold in (0.3, 0.9] takes the right one everywhere; ties: the highest
    table = _answers([0.3] * 5 + [0.9] * 5, [10.0] * 5 + [0.0] * 5, [0.0] * 5 + [10.0] * 5)
    assert L.choose_threshold(table) == 0.9
    # a tree pick the source did not keep counts at its floor (20 %): the model's stays
    censored = _answers([0.3] * 10, [1.0] * 10, [float("nan")] * 10)
    assert L.choose_threshold(censored) == 0.3
    # three models: each leave-one-model-out fit kept two, the threshold is chosen
    assert L.answer_threshold(table) == 0.9
    # two models: a fit of one calibrates on world sizes, not models -- the a-priori one
    two = table.assign(model=[f"m{i % 2}" for i in range(len(table))])
    assert L.answer_threshold(two) == S.PREFER_TREE_BELOW
    assert L.choose_threshold(table.iloc[:0]) == S.PREFER_TREE_BELOW


def test_the_kind_design_is_the_kind_by_feature_product() -> None:
    # written in place (no intermediate of the design's size): each row's own kind's
    # block holds 1 and its features, every other block 0; a code past the fitted kinds
    # (a kind the fit has not seen) has no block, a missing code (-1) the first kind's
    rng = np.random.default_rng(3)
    n_kinds, n = 5, 400
    x = np.c_[rng.integers(-1, n_kinds + 2, n), rng.normal(size=(n, 4))]
    code, f = x[:, 0].astype(int), x[:, 1:]
    onehot = np.zeros((n, n_kinds))
    onehot[np.arange(n), np.clip(code, 0, n_kinds - 1)] = code < n_kinds
    blocks = (onehot[:, :, None] * np.c_[np.ones(n), f][:, None, :]).reshape(n, -1)
    want = np.c_[f * 10.0, blocks]
    got = KindRidge(n_kinds=n_kinds)._design(x)
    np.testing.assert_array_equal(got, want)
    # fitted in place, the design's centring leaves the caller's X as it was
    kept = x.copy()
    KindRidge(n_kinds=n_kinds).fit(x, rng.normal(size=n))
    np.testing.assert_array_equal(x, kept)


def test_the_kind_ridge_is_ridge_on_the_design_without_making_it() -> None:
    # fitted from the Gram matrix of the dense common part and the sparse kind blocks:
    # sklearn's Ridge on the whole design to rounding, with kinds absent from the fit
    # (a fold without them), codes past the fitted kinds, and features far from zero
    rng = np.random.default_rng(11)
    n_kinds, n = 7, 3000
    code = rng.integers(-1, n_kinds - 2, n)  # kinds 5 and 6 never seen
    code[:40] = n_kinds + 1
    f = np.c_[rng.normal(8.0, 0.3, n), rng.normal(size=(n, 3)), np.log(rng.integers(4, 9, n))]
    x = np.c_[code, f]
    y = f @ rng.normal(size=5) + 0.3 * code + rng.normal(scale=0.1, size=n)
    ours = KindRidge(n_kinds=n_kinds).fit(x, y)
    dense = Ridge(alpha=ours.alpha).fit(ours._design(x), y)
    np.testing.assert_allclose(ours.coef_, dense.coef_, rtol=1e-7, atol=1e-9)
    assert ours.intercept_ == pytest.approx(dense.intercept_, rel=1e-9)
    np.testing.assert_allclose(ours.predict(x), dense.predict(ours._design(x)), atol=1e-9)
    # sample weights: Ridge on the design itself
    w = rng.uniform(0.5, 2.0, n)
    weighted = KindRidge(n_kinds=n_kinds).fit(x, y, sample_weight=w)
    want = Ridge(alpha=1.0).fit(ours._design(x), y, sample_weight=w)
    np.testing.assert_array_equal(weighted.coef_, want.coef_)
