"""analysis.predict_shape / predict_shape_validate: a model or world size the store has
not measured, answered by one model across shapes on physical features, and the
leave-one-model-out validation against the guide's tree."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import predict_shape as S
from analysis import predict_shape_validate as L
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


def frame(models: tuple[str, ...] = tuple(SHAPES), sizes: tuple[int, ...] = (4, 8)) -> pd.DataFrame:
    rows = []
    for m in models:
        shape = SHAPES[m]
        for ws in sizes:
            for t in TOKENS:
                for backend, comm in (("MEGAMOE_CUTEDSL", "NONE"), ("TRTLLM", "NVLINK_ONE_SIDED")):
                    rows.append({
                        "model": m, "hardware": "GB300", "quant": "NVFP4", "world_size": ws,
                        "num_tokens": t, "backend": backend, "comm": comm, "parallel_mode": "DEP",
                        "moe_ep_size": ws, "moe_tp_size": 1, "attention_dp": True,
                        "cuda_graph": True, "num_experts": shape.num_experts,
                        "top_k": shape.top_k, "hidden_size": shape.hidden_size,
                        "intermediate_size": shape.intermediate_size,
                        "score_ms": law(backend, shape, ws, t),
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
    fit = S.fit_shapes(frame(models=("m_small", "m_big", "m_wide")))
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
