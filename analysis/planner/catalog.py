"""Model and GPU catalogues for the disaggregated-MoE deployment planner.

Everything here is a plain frozen dataclass: edit a figure with ``dataclasses.replace``
and pass the result to the planner. Nothing is read from disk or the network.

Models
------
``ModelSpec`` carries what MegaScale-Infer's plan search needs: experts ``E``, top-k
``K``, hidden size ``h``, expert intermediate size ``h'``, MoE layers ``L``, the GQA group
count ``g`` (KV cache per token per layer is ``4*h/g`` bytes: BF16 K and V), the bytes of
the attention-side parameters (everything that is not a routed expert) and the bytes of
one routed expert summed over all MoE layers.

* Mixtral 8x22B, DBRX and Scaled-MoE take E, K, h, h', L and total parameters from the
  MegaScale-Infer paper's evaluation setup; head counts (g) of Mixtral and DBRX are their
  public configs; Scaled-MoE's g = 8 is an estimate (the paper only says "similar
  structure"), and its attention bytes are what remains of the quoted 317B total after
  32 experts.
* E, K, h, h' of deepseek_v4_pro, glm_5, kimi_k2, kimi_k3 and qwen3_8 are the bench_moe
  "Covered Models" table. deepseek_r1 and kimi_k2 layer counts and attention layouts are
  their public configs. Layer counts, attention layouts and non-expert parameter counts of
  deepseek_v4_pro, glm_5, kimi_k3 and qwen3_8 are ESTIMATES (see each ``source``).
* MLA models (DeepSeek, Kimi, GLM-5 estimate) cache one 576-element latent per token per
  layer (512 + 64 RoPE); we express that as the effective ``g = 4*h / 1152``.
* Routed-expert bytes use the quantisation bench_moe sweeps (NVFP4: 4.5 bits per weight
  with the FP8 block scale) except the paper's BF16 models and FP8 deepseek_r1.

GPUs
----
``GPUSpec`` prices are in *normalised cost units* where an L20 costs 1.0, the unit of the
paper's GPU table. The paper's five GPUs get the price its per-dollar figures imply
(price = datasheet figure / figure-per-dollar; both quotients agree to 3 digits):

====== ========================================= ===========================================
GPU    quoted per-dollar figure                   price
====== ========================================= ===========================================
H20    2214.1 GB/s/$, 80.0 TFLOPS/$, 51.9 GB/$    4096/2214.1 = 148/80.0 = 96/51.9 = 1.85
L40S   800.0 GB/s/$, 335.2 TFLOPS/$               864/800.0 = 362/335.2 = 1.08
A800   902.2 GB/s/$, 138.1 TFLOPS/$               2039/902.2 = 2.260, 312/138.1 = 2.259 -> 2.26
H800   187.3 TFLOPS/$                             989/187.3 = 5.28
L20    (reference of the normalisation)           1.00
====== ========================================= ===========================================

H20 and L40S bandwidth, TFLOPS and power are the paper's; A800/H800/L20 figures are
public datasheets (dense BF16). H100, H200, B200, B300 and GB300 use datasheet figures;
their prices are ESTIMATES in the same unit (H100 priced like H800; the others scaled by
rough street-price ratios) and should be edited to your own prices. NIC bandwidth of the
paper's GPUs is the 200 Gb/s link of the paper's M2N benchmark; Hopper/Blackwell HGX use
400 Gb/s ConnectX-7 and B300/GB300 800 Gb/s ConnectX-8 per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9

# NVFP4: 4-bit weights plus one FP8 scale per 16 weights -> 4.5 bits.
NVFP4_BYTES = 4.5 / 8
MLA_KV_BYTES = (512 + 64) * 2  # BF16 latent + RoPE key per token per layer


@dataclass(frozen=True)
class ModelSpec:
    """One MoE model as the planner sees it (all byte counts are bytes, not params)."""

    name: str
    num_experts: int  # E, routed experts per MoE layer
    top_k: int  # K
    hidden_size: int  # h
    intermediate_size: int  # h', one expert's FFN width
    num_layers: int  # L, MoE layers (the ping-pong pipeline's layers)
    gqa_groups: float  # g: KV cache per token per layer = 4*h/g bytes
    attention_param_bytes: float  # Pa: all non-routed weights (attention, shared, embeddings)
    expert_param_bytes: float  # Pe: one routed expert over all MoE layers
    dense_layers: int = 0  # leading dense layers: their KV counts, their FFN is in Pa
    activation_bytes: float = 2.0  # bytes per activation element sent M2N / N2M
    attention_weight_bytes_per_param: float = 2.0  # turns Pa into a parameter count
    source: str = ""
    expert_quant: str = "BF16"  # format Pe assumes; the stored sweeps' quant the Te fit reads

    @property
    def kv_bytes_per_token_layer(self) -> float:
        """Bytes of KV cache per token per layer: 2 (K, V) x 2 bytes x h/g (paper Eq. 8)."""
        return 4.0 * self.hidden_size / self.gqa_groups

    @property
    def kv_layers(self) -> int:
        """Layers that hold a KV cache (MoE layers plus leading dense layers)."""
        return self.num_layers + self.dense_layers

    @property
    def expert_flops_per_token_layer(self) -> float:
        """FLOPs one token costs in one expert of one layer: 3 GEMMs of h x h' (SwiGLU)."""
        return 2.0 * 3.0 * self.hidden_size * self.intermediate_size

    @property
    def expert_bytes_per_layer(self) -> float:
        """One expert's weights in one layer (bytes)."""
        return self.expert_param_bytes / self.num_layers

    @property
    def attention_flops_per_token_layer(self) -> float:
        """Attention-side GEMM FLOPs per token per MoE layer (2 x params / L)."""
        params = self.attention_param_bytes / self.attention_weight_bytes_per_param
        return 2.0 * params / self.num_layers


def _swiglu_expert_params(h: int, h_ff: int, layers: int) -> float:
    return 3.0 * h * h_ff * layers


def _gqa_attention_params(h: int, g: float, layers: int) -> float:
    """QKV (h x h(1+2/g)) plus output (h x h) per layer, the paper's Table 2 shapes."""
    return (h * h * (1.0 + 2.0 / g) + h * h) * layers


def _mla_g(h: int) -> float:
    return 4.0 * h / MLA_KV_BYTES


def _paper_models() -> dict[str, ModelSpec]:
    mixtral_exp = _swiglu_expert_params(6144, 16384, 56)
    mixtral_attn = _gqa_attention_params(6144, 6, 56) + 2 * 32768 * 6144
    dbrx_exp = _swiglu_expert_params(6144, 10752, 40)
    dbrx_attn = _gqa_attention_params(6144, 6, 40) + 2 * 100352 * 6144
    scaled_exp = _swiglu_expert_params(8192, 8192, 48)
    scaled_attn = 317e9 - 32 * scaled_exp
    # fmt: off
    return {
        "mixtral_8x22b": ModelSpec(
            "mixtral_8x22b", 8, 2, 6144, 16384, 56, 6.0, 2 * mixtral_attn, 2 * mixtral_exp,
            source="paper (E,K,h,h',L, 141B); g=48/8 heads public config; BF16",
        ),
        "dbrx": ModelSpec(
            "dbrx", 16, 4, 6144, 10752, 40, 6.0, 2 * dbrx_attn, 2 * dbrx_exp,
            source="paper (E,K,h,h',L, 132B); g=48/8 heads public config; BF16",
        ),
        "scaled_moe": ModelSpec(
            "scaled_moe", 32, 4, 8192, 8192, 48, 8.0, 2 * scaled_attn, 2 * scaled_exp,
            source="paper (E,K,h,h',L, 317B total); g=8 ESTIMATE; Pa = 317B - 32 experts; BF16",
        ),
    }
    # fmt: on


def _bench_models() -> dict[str, ModelSpec]:
    def mk(  # fmt: skip
        name: str,
        e: int,
        k: int,
        h: int,
        hff: int,
        layers: int,
        dense: int,
        g: float,
        nonrouted_params: float,
        expert_bytes: float,
        source: str,
    ) -> ModelSpec:
        quant = "NVFP4" if expert_bytes == NVFP4_BYTES else "FP8" if expert_bytes == 1.0 else "BF16"
        return ModelSpec(
            name,
            e,
            k,
            h,
            hff,
            layers,
            g,
            attention_param_bytes=nonrouted_params * 1.0,  # FP8 attention/shared weights
            expert_param_bytes=_swiglu_expert_params(h, hff, layers) * expert_bytes,
            dense_layers=dense,
            attention_weight_bytes_per_param=1.0,
            source=source,
            expert_quant=quant,
        )

    # fmt: off
    return {
        "deepseek_r1": mk(
            "deepseek_r1", 256, 8, 7168, 2048, 58, 3, _mla_g(7168), 17.1e9, 1.0,
            "public config: 61 layers (3 dense), MLA, 671B total of which 17.1B non-routed; "
            "FP8 weights",
        ),
        "deepseek_v4_pro": mk(
            "deepseek_v4_pro", 384, 6, 7168, 3072, 58, 3, _mla_g(7168), 17.1e9, NVFP4_BYTES,
            "E,K,h,h' bench_moe table; layers, MLA and 17.1B non-routed ESTIMATED from the "
            "DeepSeek-V3 layout; NVFP4 experts",
        ),
        "glm_5": mk(
            "glm_5", 256, 8, 6144, 2048, 75, 3, _mla_g(6144), 20e9, NVFP4_BYTES,
            "E,K,h,h' bench_moe table; 78 layers (3 dense), MLA-style KV and 20B non-routed "
            "are ESTIMATES; NVFP4 experts",
        ),
        "kimi_k2": mk(
            "kimi_k2", 384, 8, 7168, 2048, 60, 1, _mla_g(7168), 11.6e9, NVFP4_BYTES,
            "public config: 61 layers (1 dense), MLA 64 heads, ~11.6B non-routed "
            "(32B active - 8 experts); NVFP4 experts",
        ),
        "kimi_k3": mk(
            "kimi_k3", 896, 16, 3584, 3072, 60, 1, _mla_g(3584), 8e9, NVFP4_BYTES,
            "E,K,h,h' bench_moe table; 61 layers, MLA KV and 8B non-routed are ESTIMATES; "
            "NVFP4 experts",
        ),
        "qwen3_8": mk(
            "qwen3_8", 512, 10, 8192, 2048, 60, 0, 64.0, 15e9, NVFP4_BYTES,
            "E,K,h,h' bench_moe table; 60 layers, KV of 512 B/token/layer (hybrid linear "
            "attention, g=64) and 15B non-routed are ESTIMATES; NVFP4 experts",
        ),
    }
    # fmt: on


MODELS: dict[str, ModelSpec] = {**_paper_models(), **_bench_models()}


@dataclass(frozen=True)
class GPUSpec:
    """One GPU type. ``price`` is in normalised cost units (L20 = 1.0)."""

    name: str  # matches the candidate frame's ``hardware`` label where one exists
    memory_gb: float  # HBM/GDDR capacity, GB (1e9 bytes)
    bandwidth_gb_s: float  # memory bandwidth, GB/s
    bf16_tflops: float  # dense BF16 tensor TFLOPS
    price: float  # normalised cost units per GPU
    power_w: float  # TDP, watts
    nic_gbps: float  # scale-out NIC bandwidth per GPU, Gbit/s
    intra_node_gb_s: float  # NVLink (or PCIe) bandwidth per GPU per direction, GB/s
    gpus_per_node: int = 8  # largest TP degree the planner tries
    source: str = ""

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * GB

    @property
    def nic_bytes_s(self) -> float:
        return self.nic_gbps * 1e9 / 8.0


_PAPER = "MegaScale-Infer GPU table; price derived from its per-dollar figures"
_EST = "datasheet figures; price is an editable ESTIMATE in L20=1 units"

# A data table: one GPU per line reads better than the formatter's one value per line.
# fmt: off
GPUS: dict[str, GPUSpec] = {
    g.name: g
    for g in (
        GPUSpec("H20", 96, 4096, 148, 1.85, 500, 200, 450, source=_PAPER),
        GPUSpec("L40S", 48, 864, 362, 1.08, 350, 200, 32, source=_PAPER + "; PCIe Gen4"),
        GPUSpec("A800", 80, 2039, 312, 2.26, 400, 200, 200, source=_PAPER + "; SXM datasheet"),
        GPUSpec("H800", 80, 3350, 989, 5.28, 700, 200, 200, source=_PAPER + "; SXM datasheet"),
        GPUSpec("L20", 48, 864, 119.5, 1.00, 275, 200, 32, source=_PAPER + "; PCIe Gen4"),
        GPUSpec("H100", 80, 3350, 989, 5.28, 700, 400, 450, source=_EST),
        GPUSpec("H200", 141, 4800, 989, 6.1, 700, 400, 450, source=_EST),
        GPUSpec("B200", 180, 8000, 2250, 7.9, 1000, 400, 900, source=_EST),
        GPUSpec("B300", 288, 8000, 2250, 9.0, 1100, 800, 900, source=_EST + "; TDP estimate"),
        GPUSpec(
            "GB300", 288, 8000, 2500, 10.6, 1400, 800, 900, gpus_per_node=4,
            source=_EST + "; 4 GPUs per compute tray (NVL72 TP domain not modelled); "
            "TFLOPS and TDP estimates",
        ),
    )
}

# fmt: on

PAPER_GPUS: tuple[str, ...] = ("H20", "L40S", "A800", "H800", "L20")


def bandwidth_per_cost(gpu: GPUSpec) -> float:
    """GB/s per normalised cost unit (the paper's GB/s/$ column)."""
    return gpu.bandwidth_gb_s / gpu.price


def tflops_per_cost(gpu: GPUSpec) -> float:
    """Dense BF16 TFLOPS per normalised cost unit (the paper's TFLOPS/$ column)."""
    return gpu.bf16_tflops / gpu.price


def capacity_per_cost(gpu: GPUSpec) -> float:
    """GB of memory per normalised cost unit (the paper's GB/$ column)."""
    return gpu.memory_gb / gpu.price
