"""The bench_moe command that would measure a workload of a model given only by its shape
(``GET /api/v1/predictions/shape``): what to run so the prediction becomes a measurement.

bench_moe describes the model either by a built-in preset (``--model KEY``: shape,
routing method and its grouping, bench_moe_schema.md 5.2) or by the shape flags
``--num_experts --top_k --hidden_size --intermediate_size`` (``model.name`` "custom").
A custom shape **requires** an explicit ``--routing_method``: we pass ``RENORMALIZE``
(softmax top-k, no expert groups -- ``DEEPSEEK_V3`` would also need ``--n_group`` and
``--topk_group``, which a shape does not give). The routing method is not part of a
shape: the stored sweeps ran under bench_moe's default routing control (a balanced
plan over ranks and experts); a model that has its own method should pass it instead.
A shape equal to a preset's uses the preset (its own routing method).

The rest follows the stored sweeps' command (``analysis.crossval_sweeps``): the GPU's
launcher, ``--quant``, every parallel mode of the attention family, ``--search backend
comm``, the asked token count, ``--no_cuda_graph`` for prefill and
``--use_low_precision_moe_combine`` (NVIDIA's published sweeps -- the data the shape
model learnt from -- all used it).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from analysis import columns as C
from analysis.crossval_sweeps import bench_command, family_modes

# bench_moe's built-in models by shape (bench_moe_schema.md 5.2, specs.py@07f9fcc6: the
# newest preset of a shape; deepseek_v3 and deepseek_r1 share one, deepseek_v3 is in
# every version)
PRESETS: dict[tuple[int, int, int, int], str] = {
    (60, 4, 2048, 1408): "qwen1.5_moe",
    (64, 6, 2048, 1408): "deepseek_v2_lite",
    (256, 8, 7168, 2048): "deepseek_v3",
    (384, 8, 7168, 2048): "kimi_k2",
    (256, 8, 6144, 2048): "glm_5",
    (384, 6, 7168, 3072): "deepseek_v4_pro",
    (256, 6, 4096, 2048): "deepseek_v4_flash",
    (128, 4, 2880, 2880): "gpt_oss_120b",
    (512, 10, 8192, 2048): "qwen3_8",
    (896, 16, 3584, 3072): "kimi_k3",
}
CUSTOM_ROUTING = "RENORMALIZE"


@dataclass(frozen=True)
class ShapeCommand:
    """The command line and how it names the model: ``preset`` (the bench_moe
    ``--model`` key, None for a custom shape) and ``model_args`` (the arguments that
    describe the model, as passed)."""

    command: str
    preset: str | None
    model_args: str


def shape_command(
    hardware: str,
    quant: str,
    dims: tuple[int, int, int, int],
    world_size: int,
    num_tokens: int,
    attention_dp: bool,
    cuda_graph: bool,
) -> ShapeCommand:
    """The bench_moe command measuring ``num_tokens`` on ``world_size`` GPUs of
    ``hardware`` for the model of shape ``dims`` (num_experts, top_k, hidden_size,
    intermediate_size) in one attention family and phase (module docstring)."""
    e, k, h, i = (int(d) for d in dims)
    preset = PRESETS.get((e, k, h, i))
    name = preset or f"custom_e{e}_k{k}_h{h}_i{i}"
    key = {C.HARDWARE: hardware, C.MODEL: name, C.QUANT: quant, C.WORLD_SIZE: world_size,
           C.ATTENTION_DP: attention_dp, C.CUDA_GRAPH: cuda_graph,
           C.LOW_PRECISION_COMBINE: True}  # fmt: skip
    command = bench_command(key, [int(num_tokens)], family_modes(world_size, attention_dp))
    if preset is not None:
        return ShapeCommand(command, preset, f"--model {preset}")
    args = (f"--num_experts {e} --top_k {k} --hidden_size {h} --intermediate_size {i} "
            f"--routing_method {CUSTOM_ROUTING}")  # fmt: skip
    command = command.replace(f"--model {shlex.quote(name)}", args, 1)
    return ShapeCommand(command, None, args)
