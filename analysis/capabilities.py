"""Data tables from the TensorRT-LLM MoE performance guide (v1.3.0rc26 sweeps).

Hardware -> SM and NVLink domain, the backend capability matrix (backend x SM x quant),
the DEEPEPLOWLATENCY support rule and which quantisations keep BF16 activations (the
AUTO comm flow needs them for DeepEP / NCCL-EP). Pure data plus tiny lookups.

Interpretation notes (the guide's wording mapped to bench_moe ``quant_algo`` names):
"unquantized" -> BF16/FP16; "FP8 QDQ" -> FP8; "FP8 block-scale" -> FP8_BLOCK_SCALES;
CUTLASS "MXFP4" -> W4A16_MXFP4 (the only MXFP4 weight-only format; we do not assume
CUTLASS runs the W4A8 MXFP4 variants).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HardwareInfo:
    """``sm``: compute capability x10 (100 = SM100). ``nvlink_domain``: GPUs reachable
    over NVLink (EP crosses the domain when moe_ep_size exceeds it). ``mnnvl``: the
    multi-node NVLink workspace the NVLINK_* comm methods need."""

    sm: int
    nvlink_domain: int
    mnnvl: bool


HARDWARE: dict[str, HardwareInfo] = {
    "GB200": HardwareInfo(100, 72, True),
    "GB300": HardwareInfo(103, 72, True),
    "B200": HardwareInfo(100, 8, False),
    "B300": HardwareInfo(103, 8, False),
    "H100": HardwareInfo(90, 8, False),
    "H200": HardwareInfo(90, 8, False),
    "GH200": HardwareInfo(90, 1, False),
    "RTX_PRO_6000": HardwareInfo(120, 1, False),
    "DGX_SPARK": HardwareInfo(121, 1, False),
}

_SM100_103 = frozenset({100, 103})
_SM100_107 = frozenset({100, 103, 107})
_SM80_PLUS = frozenset({80, 86, 87, 89, 90, 100, 103, 107, 110, 120, 121})

# backend -> list of (SMs, quants) entries; a backend supports (sm, quant) when any
# entry contains both.
BACKEND_MATRIX: dict[str, tuple[tuple[frozenset[int], frozenset[str]], ...]] = {
    "CUTLASS": (
        (
            _SM80_PLUS,
            frozenset(
                {
                    "BF16",
                    "FP16",
                    "FP8",
                    "FP8_BLOCK_SCALES",
                    "NVFP4",
                    "W4A16_NVFP4",
                    "W4A8_AWQ",
                    "W8A16",
                    "W4A16_MXFP4",
                    "MXFP8",
                }
            ),
        ),
    ),
    "TRTLLM": (
        (
            _SM100_103,
            frozenset(
                {
                    "NVFP4",
                    "FP8_BLOCK_SCALES",
                    "W4A8_NVFP4_FP8",
                    "W4A16_MXFP4",
                    "W4A8_MXFP4_FP8",
                    "W4A8_MXFP4_MXFP8",
                    "BF16",
                }
            ),
        ),
    ),
    "CUTEDSL": (
        (_SM100_107, frozenset({"NVFP4"})),
        (frozenset({107}), frozenset({"BF16"})),
        (frozenset({120, 121}), frozenset({"NVFP4", "W4A16_NVFP4"})),
    ),
    "CUTEDSL_FC12": ((frozenset({107}), frozenset({"NVFP4"})),),
    "DEEPGEMM": ((_SM100_107, frozenset({"FP8_BLOCK_SCALES"})),),
    "DENSEGEMM": ((_SM100_103, frozenset({"NVFP4"})),),
    "MEGAMOE_CUTEDSL": ((_SM100_107, frozenset({"NVFP4"})),),
    "MEGAMOE_DEEPGEMM": ((_SM100_103, frozenset({"W4A8_MXFP4_MXFP8"})),),
    "MARLIN": ((frozenset(range(89, 100)), frozenset({"NVFP4", "W4A16_NVFP4"})),),
    "TRITON": (
        (frozenset({90}), frozenset({"BF16", "FP8", "W4A16_MXFP4", "W4A8_MXFP4_FP8"})),
    ),  # deprecated
}
FUSED_COMM_BACKENDS = frozenset({"MEGAMOE_CUTEDSL", "MEGAMOE_DEEPGEMM"})

DEEPEPLOWLATENCY_HIDDEN_SIZES = frozenset({2048, 2560, 3584, 4096, 5120, 6144, 7168})
DEEPEPLOWLATENCY_MAX_TOP_K = 16

# Quantisations whose MoE activations stay BF16 (weight-only); DeepEP/NCCL-EP in the
# AUTO flow need BF16 activations.
BF16_ACTIVATION_QUANTS = frozenset({"BF16", "FP16", "W4A16_NVFP4", "W4A16_MXFP4", "W8A16"})


def hardware_info(hardware: str) -> HardwareInfo | None:
    """Table entry for a hardware label (case-insensitive), None when unknown."""
    return HARDWARE.get(hardware.upper().replace(" ", "_").replace("-", "_"))


def backend_supports(backend: str, sm: int, quant: str) -> bool:
    """True when the guide's matrix lists ``backend`` for (sm, quant)."""
    return any(sm in sms and quant in qs for sms, qs in BACKEND_MATRIX.get(backend, ()))


def supported_backends(sm: int, quant: str) -> list[str]:
    """Backends supporting (sm, quant), in the matrix's order."""
    return [b for b in BACKEND_MATRIX if backend_supports(b, sm, quant)]


def deepep_low_latency_supported(hidden_size: int, top_k: int) -> bool:
    """The guide's DEEPEPLOWLATENCY rule: hidden_size in the supported set, top_k <= 16."""
    return hidden_size in DEEPEPLOWLATENCY_HIDDEN_SIZES and top_k <= DEEPEPLOWLATENCY_MAX_TOP_K
