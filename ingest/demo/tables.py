"""Static tables of the synthetic bench_moe generator: models, GPUs, quantisation
formats, the backend capability matrix, comm strategies and parallel layouts."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

INF = float("inf")

_MODEL_KEYS = (
    "name",
    "num_experts",
    "top_k",
    "hidden_size",
    "intermediate_size",
    "quant_algo",
    "routing_method",
    "n_group",
    "topk_group",
    "n_shared_experts",
    "shared_expert_mode",
    "swiglu_alpha",
    "swiglu_beta",
    "swiglu_limit",
    "activation_type",
    "situ_beta",
    "situ_linear_beta",
    "routing_method_class",
)

_ROUTING_CLASS = {
    "RENORMALIZE": "RenormalizeMoeRoutingMethod",
    "DEEPSEEK_V3": "DeepSeekV3MoeRoutingMethod",
}

# The perf guide's covered models (bench_moe specs.py names and shapes).
MODELS: dict[str, dict[str, Any]] = {
    "deepseek_v4_pro": dict(
        num_experts=384,
        top_k=6,
        hidden_size=7168,
        intermediate_size=3072,
        routing_method="RENORMALIZE",
    ),
    "glm_5": dict(
        num_experts=256,
        top_k=8,
        hidden_size=6144,
        intermediate_size=2048,
        routing_method="DEEPSEEK_V3",
        n_group=1,
        topk_group=1,
    ),
    "kimi_k2": dict(
        num_experts=384,
        top_k=8,
        hidden_size=7168,
        intermediate_size=2048,
        routing_method="DEEPSEEK_V3",
        n_group=1,
        topk_group=1,
    ),
    "qwen3_8": dict(
        num_experts=512,
        top_k=10,
        hidden_size=8192,
        intermediate_size=2048,
        routing_method="RENORMALIZE",
    ),
    "kimi_k3": dict(
        num_experts=896,
        top_k=16,
        hidden_size=3584,
        intermediate_size=3072,
        routing_method="DEEPSEEK_V3",
        n_group=1,
        topk_group=1,
        situ_beta=4.0,
        situ_linear_beta=25.0,
    ),
}


@dataclasses.dataclass(frozen=True)
class _Hw:
    label: str
    device_name: str
    sm: int
    arch: str  # "blackwell" | "hopper"
    nvl_domain: int  # GPUs per NVLink domain
    gpus_per_node: int  # visible GPUs per host (environment.world_size_per_node)
    nvl_gbps: float  # NVLink GB/s per GPU per direction
    net_gbps: float  # network GB/s per GPU
    hbm_gbps: float
    mem_gib: float
    tflops: dict[str, float]  # dense rate by compute precision
    hostname: str
    platform: str
    cuda_version: str
    driver_version: str


HARDWARE: dict[str, _Hw] = {
    "GB300": _Hw(
        "GB300",
        "NVIDIA GB300",
        103,
        "blackwell",
        72,
        4,
        900.0,
        45.0,
        8000.0,
        279.0,
        {"fp4": 15000.0, "fp8": 5000.0, "bf16": 2500.0},
        "gb300-nvl72-c{n:02d}",
        "Linux-6.8.0-1031-nvidia-64k-aarch64-with-glibc2.39",
        "13.0",
        "580.95.05",
    ),
    "B300": _Hw(
        "B300",
        "NVIDIA B300 SXM6 AC",
        103,
        "blackwell",
        8,
        8,
        900.0,
        45.0,
        8000.0,
        268.0,
        {"fp4": 14000.0, "fp8": 4500.0, "bf16": 2250.0},
        "b300-hgx-{n:02d}",
        "Linux-6.8.0-85-generic-x86_64-with-glibc2.39",
        "13.0",
        "580.95.05",
    ),
    "H200": _Hw(
        "H200",
        "NVIDIA H200",
        90,
        "hopper",
        8,
        8,
        450.0,
        45.0,
        4800.0,
        140.0,
        {"fp8": 1979.0, "bf16": 989.0},
        "h200-hgx-{n:02d}",
        "Linux-6.8.0-85-generic-x86_64-with-glibc2.39",
        "12.9",
        "575.57.08",
    ),
}

# quant -> (weight bytes/elem incl. scales, dispatch bytes/elem incl. scales, compute precision)
_QUANT = {
    "NVFP4": (0.5625, 0.5625, "fp4"),
    "W4A8_MXFP4_MXFP8": (0.53125, 1.03125, "fp8"),
    "FP8_BLOCK_SCALES": (1.03125, 1.03125, "fp8"),
    "FP8": (1.0, 1.0, "fp8"),
    None: (2.0, 2.0, "bf16"),
}

# Backend capability matrix (perf guide): backend -> {arch: quants}.
BACKEND_QUANTS: dict[str, dict[str, tuple[Any, ...]]] = {
    "CUTLASS": {
        "blackwell": ("NVFP4", "W4A8_MXFP4_MXFP8", "FP8_BLOCK_SCALES", "FP8", None),
        "hopper": ("FP8_BLOCK_SCALES", "FP8", None),
    },
    "TRTLLM": {"blackwell": ("NVFP4", "W4A8_MXFP4_MXFP8", "FP8_BLOCK_SCALES", None)},
    "CUTEDSL": {"blackwell": ("NVFP4",)},
    "DEEPGEMM": {"blackwell": ("FP8_BLOCK_SCALES",)},
    "MEGAMOE_CUTEDSL": {"blackwell": ("NVFP4",)},
    "MEGAMOE_DEEPGEMM": {"blackwell": ("W4A8_MXFP4_MXFP8",)},
}
_BACKEND_ORDER = ("TRTLLM", "CUTEDSL", "CUTLASS", "DEEPGEMM", "MEGAMOE_CUTEDSL", "MEGAMOE_DEEPGEMM")
_FUSED = ("MEGAMOE_CUTEDSL", "MEGAMOE_DEEPGEMM")
_NO_MOE_TP = ("CUTEDSL", "DEEPGEMM", "MEGAMOE_CUTEDSL", "MEGAMOE_DEEPGEMM")

_COMM_ORDER = ("NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED", "DEEPEP", "DEEPEPLOWLATENCY", "ALLGATHER")
_COMM_CLASS = {
    "NVLINK_ONE_SIDED": "NVLinkOneSided",
    "NVLINK_TWO_SIDED": "NVLinkTwoSided",
    "DEEPEP": "DeepEP",
    "DEEPEPLOWLATENCY": "DeepEPLowLatency",
    "ALLGATHER": "AllGatherReduceScatter",
    "NONE": "NONE",
}
_DEEPEP_LL_HIDDEN = (2048, 2560, 3584, 4096, 5120, 6144, 7168)

# Default hybrid layouts added to DEP/TEP (a subset of bench_moe's default parallel axis).
_HYBRIDS = {
    4: ("DTP2EP2", "TTP2EP2"),
    8: ("TTP2EP4",),
    16: ("TTP4EP4",),
    32: ("TTP4EP8",),
    64: ("TTP8EP8",),
}
_HYBRID_RE = re.compile(r"^([DT])TP(\d+)EP(\d+)$")

_NATIVE_WARNING = "observed_* numbers re-materialise the plan; native-mode kernel top-k may differ"


def parallel_layout(mode: str, world_size: int) -> tuple[int, int, bool]:
    """(moe_ep_size, moe_tp_size, attention_dp) of a named parallel mode (schema 2.11)."""
    if mode == "DEP":
        return world_size, 1, True
    if mode == "TEP":
        return world_size, 1, False
    if mode == "DTP":
        return 1, world_size, True
    if mode == "TTP":
        return 1, world_size, False
    m = _HYBRID_RE.match(mode)
    if not m:
        raise ValueError(f"Unknown parallel_mode={mode!r}")
    return int(m.group(3)), int(m.group(2)), m.group(1) == "D"
