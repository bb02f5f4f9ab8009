"""The ``extra_llm_api_options`` fields moedash writes, as a typed model per TensorRT-LLM release.

Only the options we emit are modelled, with TensorRT-LLM's own names, types and rules as
read in ``tensorrt_llm/llmapi/llm_args.py`` (``TorchLlmArgs``, ``CudaGraphConfig`` /
``BaseCudaGraphConfig``, ``MoeConfig``, ``MTPDecodingConfig``). Unknown keys are refused
(``extra="forbid"``, as TensorRT-LLM's ``StrictBaseModel`` does), so a misspelt option
fails here instead of at engine start.

What differs between releases is kept in :data:`RELEASES`:

* ``moe_backends``: the values ``MoeConfig.backend`` accepts (1.0: CUTLASS, CUTEDSL, WIDEEP,
  TRTLLM, DEEPGEMM, VANILLA, TRITON; the guide's 1.3.0rc26 adds AUTO, DENSEGEMM, MARLIN,
  MEGAMOE_DEEPGEMM, MEGAMOE_CUTEDSL and CUTEDSL_FC12; the main snapshot read lists
  MEGAMOE_DEEPGEMM but not MEGAMOE_CUTEDSL);
* ``graph_rule``: how ``cuda_graph_config.max_batch_size`` alone expands to batch sizes
  (1.0: multiples of 8 to 128 then powers of two; main: multiples of 8 to 128 then steps
  of 64 -- ``_generate_cuda_graph_batch_sizes``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


@dataclass(frozen=True)
class Release:
    """One TensorRT-LLM release's rules for the fields we emit."""

    name: str
    source: str  # where the rules were read
    moe_backends: frozenset[str]
    graph_rule: Literal["pow2", "step64"]


_BACKENDS_1_0 = frozenset(
    {"CUTLASS", "CUTEDSL", "WIDEEP", "TRTLLM", "DEEPGEMM", "VANILLA", "TRITON"}
)
RELEASES: dict[str, Release] = {
    "1.0": Release(
        "1.0",
        "llm_args.py MoeConfig without AUTO; CudaGraphConfig powers-of-two rule",
        _BACKENDS_1_0,
        "pow2",
    ),
    "1.3.0rc26": Release(
        "1.3.0rc26",
        "the MoE performance guide's release: its backend matrix (MEGAMOE_CUTEDSL, "
        "CUTEDSL_FC12 included); sliding-64 graph sizes",
        _BACKENDS_1_0
        | {"AUTO", "DENSEGEMM", "MARLIN", "MEGAMOE_DEEPGEMM", "MEGAMOE_CUTEDSL", "CUTEDSL_FC12"},
        "step64",
    ),
    "main": Release(
        "main",
        "llm_args.py @ 00043967 (MoeConfig with MEGAMOE_DEEPGEMM; sliding-64 graph sizes)",
        _BACKENDS_1_0 | {"AUTO", "DENSEGEMM", "MARLIN", "MEGAMOE_DEEPGEMM"},
        "step64",
    ),
}
# the release NVIDIA's published sweeps and the guide ran
DEFAULT_RELEASE = "1.3.0rc26"


def graph_batch_sizes(max_batch_size: int, enable_padding: bool, release: str) -> list[int]:
    """The CUDA-graph batch sizes (requests) TensorRT-LLM ``release`` generates from
    ``cuda_graph_config.max_batch_size`` alone; always ends with ``max_batch_size``."""
    rule = RELEASES[release].graph_rule
    if enable_padding:
        sizes = [1, 2, 4] + [i * 8 for i in range(1, 17)]
        if rule == "step64":
            while sizes[-1] + 64 <= max_batch_size:
                sizes.append(sizes[-1] + 64)
    else:
        sizes = list(range(1, 32)) + [32, 64, 128]
    if (rule == "pow2" or not enable_padding) and max_batch_size > 1:
        sizes += [2**i for i in range(8, math.ceil(math.log2(max_batch_size)))]
    out = sorted({s for s in sizes if s <= max_batch_size})
    if not out or out[-1] != max_batch_size:
        out.append(max_batch_size)
    return out


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CudaGraphConfig(_Strict):
    """``cuda_graph_config``: batch sizes count **requests** per rank, not tokens."""

    batch_sizes: list[int] | None = None
    max_batch_size: int = Field(0, ge=0)
    enable_padding: bool = False

    @model_validator(mode="after")
    def _max_matches(self) -> CudaGraphConfig:
        # TensorRT-LLM refuses both when they disagree (BaseCudaGraphConfig validator)
        if (
            self.batch_sizes
            and self.max_batch_size
            and max(self.batch_sizes) != self.max_batch_size
        ):
            raise ValueError("max_batch_size must equal max(batch_sizes) when both are given")
        if self.batch_sizes and min(self.batch_sizes) < 1:
            raise ValueError("batch_sizes must be positive")
        return self


class MoeConfig(_Strict):
    backend: str
    use_low_precision_moe_combine: bool | None = None


class MTPDecodingConfig(_Strict):
    decoding_type: Literal["MTP"] = "MTP"
    num_nextn_predict_layers: int = Field(..., ge=1)


class LlmApiOptions(_Strict):
    """The ``extra_llm_api_options`` document of one trtllm-serve worker (prefill or
    decode), the subset moedash writes."""

    tensor_parallel_size: int = Field(..., ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)
    moe_expert_parallel_size: int = Field(..., ge=1)
    moe_tensor_parallel_size: int = Field(..., ge=1)
    enable_attention_dp: bool
    max_batch_size: int = Field(..., ge=1)
    max_num_tokens: int = Field(..., ge=1)
    max_seq_len: int | None = Field(None, ge=1)
    disable_overlap_scheduler: bool | None = None
    cuda_graph_config: CudaGraphConfig | None
    moe_config: MoeConfig
    speculative_config: MTPDecodingConfig | None = None

    @model_validator(mode="after")
    def _consistent(self) -> LlmApiOptions:
        if self.moe_expert_parallel_size * self.moe_tensor_parallel_size != (
            self.tensor_parallel_size
        ):
            raise ValueError(
                "moe_expert_parallel_size x moe_tensor_parallel_size must equal "
                "tensor_parallel_size"
            )
        graph = self.cuda_graph_config
        if graph is not None and graph.max_batch_size > self.max_batch_size:
            raise ValueError(
                f"cuda_graph_config.max_batch_size {graph.max_batch_size} (requests) exceeds "
                f"max_batch_size {self.max_batch_size}: graph batch sizes count requests"
            )
        return self


def validate_options(doc: dict[str, Any], release: str = DEFAULT_RELEASE) -> list[str]:
    """Every problem of ``doc`` as an ``extra_llm_api_options`` document of TensorRT-LLM
    ``release`` (empty when valid): unknown or mistyped fields, inconsistent sizes, a MoE
    backend that release does not accept, an unknown release."""
    if release not in RELEASES:
        return [f"unknown TensorRT-LLM release {release!r} (known: {', '.join(RELEASES)})"]
    try:
        opts = LlmApiOptions.model_validate(doc)
    except ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in exc.errors()
        ]
    if opts.moe_config.backend not in RELEASES[release].moe_backends:
        return [f"moe_config.backend: {opts.moe_config.backend} is not a backend of {release}"]
    return []
