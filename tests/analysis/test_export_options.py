from __future__ import annotations

import pytest

from analysis.export_launch import decode_shape, env, options, prefill_shape, serve_command
from analysis.export_options import RELEASES, graph_batch_sizes, validate_options


def _doc(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "tensor_parallel_size": 8,
        "moe_expert_parallel_size": 8,
        "moe_tensor_parallel_size": 1,
        "enable_attention_dp": True,
        "max_batch_size": 64,
        "max_num_tokens": 256,
        "cuda_graph_config": {"enable_padding": True, "max_batch_size": 64},
        "moe_config": {"backend": "TRTLLM"},
        "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 3},
    }
    base.update(kw)
    return base


def test_valid_document_has_no_problems() -> None:
    assert validate_options(_doc()) == []


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"cuda_graph_config": {"enable_padding": True, "max_batch_size": 256}}, "requests"),
        ({"moe_tensor_parallel_size": 2}, "must equal tensor_parallel_size"),
        ({"moe_config": {"backend": "TRTLLM", "combine": True}}, "moe_config.combine"),
        ({"max_batch_sizes": 4}, "max_batch_sizes"),
        (
            {"speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 0}},
            "greater",
        ),
        (
            {"cuda_graph_config": {"batch_sizes": [1, 8], "max_batch_size": 16}},
            "max(batch_sizes)",
        ),
    ],
)
def test_refused_fields_are_named(change: dict[str, object], needle: str) -> None:
    problems = validate_options(_doc(**change))
    assert problems and any(needle in p for p in problems), problems


def test_backends_are_versioned() -> None:
    mega = _doc(moe_config={"backend": "MEGAMOE_CUTEDSL"})
    assert validate_options(mega, "1.3.0rc26") == []
    assert "not a backend of main" in validate_options(mega, "main")[0]
    assert (
        "not a backend of 1.0" in validate_options(_doc(moe_config={"backend": "AUTO"}), "1.0")[0]
    )
    assert "unknown TensorRT-LLM release" in validate_options(_doc(), "0.1")[0]


def test_graph_sizes_follow_the_release_rule() -> None:
    assert graph_batch_sizes(32, True, "1.0") == [1, 2, 4, 8, 16, 24, 32]
    assert graph_batch_sizes(300, True, "1.0")[-3:] == [128, 256, 300]
    assert graph_batch_sizes(300, True, "main")[-3:] == [192, 256, 300]
    assert set(RELEASES) == {"1.0", "1.3.0rc26", "main"}


def test_decode_and_prefill_workers() -> None:
    dec = decode_shape(
        world_size=8,
        attention_dp=True,
        moe_ep_size=8,
        backend="TRTLLM",
        requests_per_rank=64,
        mtp=3,
    )
    doc = options(dec)
    assert validate_options(doc) == []
    assert (doc["max_batch_size"], doc["max_num_tokens"]) == (64, 256)
    pre = prefill_shape(
        world_size=8, attention_dp=False, moe_ep_size=8, backend="TRTLLM", max_num_tokens=8192
    )
    assert options(pre)["cuda_graph_config"] is None and options(pre)["max_batch_size"] == 1


def test_command_line_env_and_multi_node_launcher() -> None:
    dec = decode_shape(
        world_size=16,
        attention_dp=True,
        moe_ep_size=16,
        backend="CUTLASS",
        requests_per_rank=32,
        comm="NVLINK_ONE_SIDED",
    )
    assert env(dec) == {"TRTLLM_FORCE_COMM_METHOD": "NVLINK_ONE_SIDED"}
    cmd = serve_command(dec, "deepseek-ai/DeepSeek-R1", "decode.yaml", "GB300")
    assert cmd.startswith("TRTLLM_FORCE_COMM_METHOD=NVLINK_ONE_SIDED srun --mpi=pmix -N 4 ")
    assert "--ntasks-per-node 4 trtllm-llmapi-launch trtllm-serve deepseek-ai/DeepSeek-R1" in cmd
    assert "--tp_size 16 --ep_size 16 --max_batch_size 32 --max_num_tokens 32" in cmd
    assert cmd.endswith("--extra_llm_api_options decode.yaml")
    one_node = serve_command(dec, "m", "d.yaml", "B300")
    assert "srun" in one_node  # 16 GPUs > 8 per B300 node
    assert "srun" not in serve_command(dec, "m", "d.yaml", None)
    mega = decode_shape(
        world_size=8, attention_dp=True, moe_ep_size=8, backend="MEGAMOE_DEEPGEMM",
        requests_per_rank=8, comm="NVLINK_ONE_SIDED",
    )  # fmt: skip
    assert env(mega) == {}
