"""service.point_export: one stored candidate as the YAML/env the Pareto page and the API
both serve, named for what it holds."""

from __future__ import annotations

import pytest
import yaml

from db.store import Store
from service.errors import InvalidQuery, NoData
from service.filenames import file_part
from service.frames import Cell, DashData
from service.point_export import cell_point_export, point_export
from tests.factories.dashboard import seed_store
from tests.factories.exports import seed_awkward_exports

KNOWN = Cell("deepseek_v4_pro", "GB300", "NVFP4")


@pytest.fixture
def seeded(store: Store) -> tuple[DashData, dict[str, int]]:
    return DashData(store, version_ttl=0.0), seed_store(store)


def test_forced_comm_candidate_exports_yaml_and_env_under_workload_names(seeded: tuple) -> None:
    data, ids = seeded
    known = ids["known"]
    ans = point_export(data, known, 2)  # TRTLLM, NVLINK_ONE_SIDED requested, 1024 tokens
    assert (
        ans.yaml_filename
        == f"moe_config_deepseek_v4_pro_GB300_NVFP4_ws8_1024tok_run{known}_cand2.yaml"
    )
    assert ans.env_filename.endswith("_cand2.env")
    assert ans.env == "TRTLLM_FORCE_COMM_METHOD=NVLINK_ONE_SIDED\n"
    cfg = yaml.safe_load(ans.yaml)
    assert cfg["moe_config"]["backend"] == "TRTLLM" and cfg["moe_expert_parallel_size"] == 8
    # the page's path (cell + point) gives the same bytes
    same = cell_point_export(data, KNOWN, f"{known}:2")
    assert same is not None and (same.yaml, same.env) == (ans.yaml, ans.env)


def test_auto_comm_candidate_env_file_is_a_comment(seeded: tuple) -> None:
    data, ids = seeded
    ans = point_export(data, ids["known"], 1)  # MEGAMOE_CUTEDSL, comm NONE
    assert ans.env.startswith("# TRTLLM_FORCE_COMM_METHOD stays unset") and "NONE" in ans.env


def test_unknown_run_or_candidate_names_the_field(seeded: tuple) -> None:
    data, ids = seeded
    with pytest.raises(NoData) as err:
        point_export(data, 10**6, 0)
    assert err.value.field == "run_id"
    with pytest.raises(NoData) as err:
        point_export(data, ids["known"], 99)
    assert err.value.field == "candidate_index"
    assert cell_point_export(data, KNOWN, "not-a-point") is None


def test_file_part_keeps_stored_text_out_of_headers() -> None:
    assert file_part('a"b\r\nc/../d') == "a_b_c_.._d"
    assert file_part("") == "x" and file_part("GB300") == "GB300"


def test_a_backend_trtllm_does_not_have_is_refused_with_the_reason(store: Store) -> None:
    run = seed_awkward_exports(store)
    data = DashData(store, version_ttl=0.0)
    with pytest.raises(InvalidQuery) as err:
        point_export(data, run, 0)
    assert err.value.field == "candidate_index" and err.value.type == "not_deployable"
    assert "TORCH_BMM_PADDED is not a TensorRT-LLM MoE backend" in err.value.msg
    loose = point_export(data, run, 0, strict=False)
    assert not loose.deployable and loose.errors
    warned = point_export(data, run, 1)
    assert warned.deployable and any("outside the guide's coverage" in w for w in warned.warnings)
    assert "# warning:" in warned.yaml
