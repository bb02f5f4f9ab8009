"""Recommendation, export and threshold answers of the service (no HTTP, no Dash)."""

from __future__ import annotations

import pytest
import yaml

from analysis import columns as C
from analysis.planner import MODELS
from analysis.serving_map import CUSTOM_SHAPES, MODEL_SHAPES
from analysis.tree import Thresholds
from db.store import Store
from ingest.records import UploadMeta
from service.errors import InvalidQuery, NoData
from service.export import candidate_export, export_config, launch_export
from service.frames import DashData
from service.recommend import (
    BUILTIN_SHAPES,
    DeploymentRequest,
    deployment_request,
    known_models,
    model_shape,
    recommendation,
)
from service.thresholds import guide_check, threshold_table, tree_thresholds
from tests.factories import sweeps
from tests.service.stores import PARITY_CELL, seed_tie_sweep


@pytest.fixture
def data(store: Store) -> DashData:
    seed_tie_sweep(store)
    return DashData(store, version_ttl=0.0)


def _req(**kw: object) -> DeploymentRequest:
    values: dict[str, object] = {
        "hardware": "gb300",
        "quant": "NVFP4",
        "world_size": 8,
        "num_tokens": 128,
        "model": PARITY_CELL.model,
    }
    values.update(kw)
    return deployment_request(**values)


def test_builtin_shape_tables_agree_where_they_overlap() -> None:
    for name, spec in MODELS.items():
        shape = {**CUSTOM_SHAPES, **MODEL_SHAPES}.get(name)
        if shape is not None:
            assert shape[:3] == (spec.num_experts, spec.top_k, spec.hidden_size), name
    assert set(MODELS) | set(MODEL_SHAPES) | set(CUSTOM_SHAPES) == set(BUILTIN_SHAPES)


def test_model_shape_explicit_then_stored_then_builtin(data: DashData) -> None:
    assert model_shape(data, _req(num_experts=8, top_k=2, hidden_size=64)) == (8, 2, 64)
    assert model_shape(data, _req()) == (384, 6, 7168)  # the stored run
    assert model_shape(data, _req(model="mixtral_8x22b")) == (8, 2, 6144)
    assert model_shape(data, _req(model="minimaxm2.5")) == (256, 8, 3072)
    # a newer run of the model with another shape wins over the built-in table
    data.store.ingest(
        [sweeps.make_sweep(4, model="glm_5", num_experts=7, top_k=3, hidden_size=11)],
        b"glm",
        UploadMeta(hardware="GB300"),
    )
    assert model_shape(data, _req(model="glm_5")) == (7, 3, 11)
    assert "glm_5" in known_models(data) and "mixtral_8x22b" in known_models(data)


@pytest.mark.parametrize(
    ("kw", "field", "kind"),
    [({"model": "nope"}, "model", "unknown"), ({"model": None}, "model", "missing")],
)
def test_unknown_or_missing_model_names_the_field(
    data: DashData, kw: dict[str, object], field: str, kind: str
) -> None:
    with pytest.raises(InvalidQuery) as err:
        recommendation(data, _req(**kw))
    assert (err.value.field, err.value.type) == (field, kind)


def test_invalid_request_values_name_the_field() -> None:
    with pytest.raises(InvalidQuery) as err:
        deployment_request(hardware="GB300", quant="NVFP4", world_size=0, num_tokens=8)
    assert err.value.field == "world_size"
    with pytest.raises(InvalidQuery) as err:
        _req(num_tokens=10**9)
    assert err.value.field == "num_tokens"


def test_recommendation_has_tree_measured_and_runners_up(data: DashData) -> None:
    ans = recommendation(data, _req())
    assert ans.deployment.hardware == "GB300"
    assert ans.tree.backend == "TRTLLM"  # 128 * 6 / 8 = 96 <= 512
    assert ans.measured is not None and ans.measured.measured_num_tokens == 256
    assert list(ans.top[C.BACKEND]) == ["MEGAMOE_CUTEDSL", "TRTLLM"]
    assert ans.agrees is False
    none = recommendation(data, _req(world_size=16))
    assert none.measured is None and none.top.empty and none.agrees is None
    assert recommendation(data, _req(), with_measured=False).measured is None


def test_export_tree_and_measured(data: DashData) -> None:
    tree = export_config(data, _req(), "tree")
    assert "# produced by: moedash decision tree (published thresholds)" in tree.yaml
    # nothing missing is written as a value (no "nan" / "unknown"): a comment says so
    assert "# run ids: none" in tree.yaml and "# date: not recorded" in tree.yaml
    assert yaml.safe_load(tree.yaml)["moe_config"] == {"backend": "TRTLLM"}
    measured = export_config(data, _req(), "measured")
    assert "# run ids: 1" in measured.yaml and measured.env is None
    assert yaml.safe_load(measured.yaml)["moe_config"] == {"backend": "MEGAMOE_CUTEDSL"}
    with pytest.raises(NoData) as err:
        export_config(data, _req(world_size=16), "measured")
    assert (err.value.field, err.value.type) == ("source", "no_data")
    # a measured export is the same text whatever asks for it: no date in it
    assert export_config(data, _req(), "measured").yaml == measured.yaml


def test_candidate_export_carries_the_candidates_run(data: DashData) -> None:
    row = data.cell_frame(PARITY_CELL).iloc[3].to_dict()
    export = candidate_export(row)
    assert "# run ids: 1" in export.yaml and "TensorRT-LLM version: v1.3.0rc26" in export.yaml
    assert yaml.safe_load(export.yaml)["moe_config"] == {"backend": "MEGAMOE_CUTEDSL"}


def test_thresholds_are_derived_once_per_store_version(data: DashData) -> None:
    first = guide_check(data)
    assert guide_check(data) is first
    assert list(threshold_table(data)["name"]) == list(first.table["name"])
    assert tree_thresholds(data, "published") == Thresholds()
    data.store.ingest([sweeps.make_sweep(6, seed=4)], b"more", UploadMeta(hardware="GB300"))
    assert guide_check(data) is not first  # an upload re-derives


def test_export_writes_the_serving_engineers_worker(data: DashData) -> None:
    # the case: decode at 64 requests per rank with MTP 3 on 8 DP ranks
    ans = export_config(data, _req(num_tokens=None, concurrency=512, mtp=3, isl=8192, osl=1024))
    doc = yaml.safe_load(ans.yaml)
    assert doc["cuda_graph_config"] == {"enable_padding": True, "max_batch_size": 64}
    assert (doc["max_batch_size"], doc["max_num_tokens"], doc["max_seq_len"]) == (64, 256, 9216)
    assert doc["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    assert doc == ans.options
    # 8 GPUs on 4-GPU GB300 trays: two hosts under srun
    assert "srun --mpi=pmix -N 2 --ntasks 8 --ntasks-per-node 4 trtllm-llmapi-launch" in ans.command
    assert "--tp_size 8 --ep_size 8 --max_batch_size 64 --max_num_tokens 256" in ans.command
    with pytest.raises(InvalidQuery) as err:
        export_config(data, _req(), release="0.9")
    assert err.value.field == "release"


def test_disaggregated_launch_has_a_prefill_and_a_decode_document(data: DashData) -> None:
    req = _req(num_tokens=None, concurrency=512, mtp=3, isl=8192, osl=1024)
    launch = launch_export(data, req, prefill_max_num_tokens=16640, prefill_attention="tp")
    pre, dec = launch.workers
    assert (pre.role, dec.role) == ("prefill", "decode") and launch.disaggregated
    p = yaml.safe_load(pre.yaml)
    assert (p["max_batch_size"], p["max_num_tokens"], p["cuda_graph_config"]) == (2, 16640, None)
    assert (
        p["enable_attention_dp"] is False
        and p["speculative_config"]["num_nextn_predict_layers"] == 3
    )
    text = launch.text
    assert "cat > prefill.yaml <<'YAML'" in text and "cat > decode.yaml <<'YAML'" in text
    assert text.count("trtllm-serve ") >= 2 and "trtllm-serve disaggregated" in text
    (alone,) = launch_export(data, req).workers
    assert alone.yaml == export_config(data, req).yaml == dec.yaml
    with pytest.raises(InvalidQuery) as err:
        launch_export(data, _req(phase="prefill", num_tokens=8192), prefill_max_num_tokens=8192)
    assert err.value.field == "prefill_max_num_tokens"
