from __future__ import annotations

import pytest

from analysis.capabilities import (
    backend_supports,
    deepep_low_latency_supported,
    hardware_info,
    supported_backends,
)
from analysis.tree import Deployment, Thresholds, recommend


def dep(**kw: object) -> Deployment:
    base = dict(
        hardware="GB300",
        num_experts=384,
        top_k=6,
        hidden_size=7168,
        quant="NVFP4",
        world_size=8,
        attention_dp=True,
        cuda_graph=True,
        num_tokens=256,
    )
    base.update(kw)
    return Deployment(**base)  # type: ignore[arg-type]


def test_decode_small_world_small_tokens_is_trtllm() -> None:
    rec = recommend(dep(num_tokens=512))  # 512*6/8 = 384 <= 512, ws 8 <= 8
    assert (rec.backend, rec.comm, rec.force_comm) == ("TRTLLM", "AUTO", False)
    assert (rec.moe_ep_size, rec.moe_tp_size, rec.parallel_mode) == (8, 1, "DEP")
    step = next(s for s in rec.path if s.threshold_name == "decode_megamoe_tokens_per_rank")
    assert (step.threshold_value, step.observed) == (512, 384.0)
    assert rec.expected_comm == "NVLINK_ONE_SIDED"


def test_decode_large_world_is_cutedsl_and_large_tokens_megamoe() -> None:
    assert recommend(dep(world_size=16, num_tokens=512)).backend == "CUTEDSL"
    rec = recommend(dep(num_tokens=1024))  # 768 > 512
    assert rec.backend == "MEGAMOE_CUTEDSL" and rec.expected_comm == "NONE"


def test_threshold_boundary_is_inclusive() -> None:
    # activated = 4096 * 6 / 48 = 512 exactly -> "<= 512" branch.
    assert recommend(dep(world_size=48, num_tokens=4096)).backend == "CUTEDSL"
    assert recommend(dep(world_size=48, num_tokens=4104)).backend == "MEGAMOE_CUTEDSL"


def test_prefill_uses_16384() -> None:
    small = recommend(dep(cuda_graph=False, num_tokens=16384 * 8 // 6))
    big = recommend(dep(cuda_graph=False, num_tokens=32768 * 8 // 6))
    assert (small.backend, big.backend) == ("TRTLLM", "MEGAMOE_CUTEDSL")
    assert small.phase == "prefill"


def test_thresholds_are_parameters() -> None:
    d = dep(num_tokens=1024)
    assert recommend(d).backend == "MEGAMOE_CUTEDSL"
    assert recommend(d, Thresholds(decode_megamoe_tokens_per_rank=1000)).backend == "TRTLLM"


def test_mxfp4_and_attention_tp() -> None:
    assert recommend(dep(quant="W4A8_MXFP4_MXFP8")).backend == "MEGAMOE_DEEPGEMM"
    rec = recommend(dep(attention_dp=False, num_tokens=8))
    assert (rec.backend, rec.parallel_mode, rec.expected_comm) == ("TRTLLM", "TEP", "NONE")
    big = dep(attention_dp=False, num_tokens=40000)
    assert recommend(big).backend == "TRTLLM"
    assert recommend(big, Thresholds(use_attention_tp_crossover=True)).backend == "CUTEDSL"


def test_cross_domain_b300_comm() -> None:
    # B300 ws 16: 256*6/16 = 96 tokens, dispatch 96*7168*0.5/1024 = 336 KiB.
    rec = recommend(dep(hardware="B300", world_size=16))
    assert (rec.backend, rec.comm, rec.force_comm) == ("CUTEDSL", "DEEPEPLOWLATENCY", True)
    assert rec.dispatch_kb == pytest.approx(336.0)
    big = recommend(dep(hardware="B300", world_size=16, num_tokens=65536))
    assert (big.comm, big.force_comm) == ("ALLGATHER", True)  # 43008 KiB > 8192
    qwen = recommend(dep(hardware="B300", world_size=16, hidden_size=8192, top_k=10))
    assert (qwen.comm, qwen.force_comm) == ("AUTO", False)  # 8192 unsupported by DeepEP LL
    assert (
        recommend(dep(hardware="B300", world_size=16, quant="W4A8_MXFP4_MXFP8")).backend == "TRTLLM"
    )


def test_within_domain_b300_and_gb300_72() -> None:
    assert recommend(dep(hardware="B300", world_size=8)).comm == "AUTO"
    rec = recommend(dep(hardware="GB300", world_size=72, num_tokens=64))
    assert rec.backend == "CUTEDSL" and rec.in_guide_coverage


def test_hopper_sm120_and_fallbacks() -> None:
    assert recommend(dep(hardware="H200", quant="FP8_BLOCK_SCALES")).backend == "CUTLASS"
    spark = recommend(
        dep(hardware="DGX_SPARK", world_size=1, attention_dp=False, num_tokens=8, top_k=4)
    )
    assert spark.backend == "CUTEDSL"  # 32 tokens per rank < 64
    assert (
        recommend(
            dep(hardware="DGX_SPARK", world_size=1, attention_dp=False, num_tokens=64)
        ).backend
        == "CUTLASS"
    )
    fp8 = recommend(dep(quant="FP8_BLOCK_SCALES"))
    assert fp8.backend == "TRTLLM" and not fp8.in_guide_coverage and fp8.notes
    unknown = recommend(dep(hardware="MI300X"))
    assert not unknown.in_guide_coverage


def test_path_is_ordered_and_readable() -> None:
    rec = recommend(dep(hardware="B300", world_size=16))
    steps = [s.step for s in rec.path]
    assert steps[0] == "STEP1" and "STEP3" in steps
    assert steps.index("STEP3") > max(i for i, s in enumerate(steps) if s == "STEP2")
    assert all(s.question and s.answer for s in rec.path)


def test_capabilities() -> None:
    gb300 = hardware_info("gb300")
    assert gb300 is not None and (gb300.sm, gb300.nvlink_domain) == (103, 72)
    assert hardware_info("B300").nvlink_domain == 8  # type: ignore[union-attr]
    assert backend_supports("MEGAMOE_CUTEDSL", 103, "NVFP4")
    assert not backend_supports("MEGAMOE_CUTEDSL", 90, "NVFP4")
    assert not backend_supports("CUTEDSL", 100, "BF16") and backend_supports("CUTEDSL", 107, "BF16")
    assert supported_backends(90, "FP8_BLOCK_SCALES") == ["CUTLASS"]
    assert deepep_low_latency_supported(7168, 16)
    assert not deepep_low_latency_supported(7168, 17)
    assert not deepep_low_latency_supported(8192, 8)
