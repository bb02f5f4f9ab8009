"""A launchable trtllm-serve worker: the whole ``extra_llm_api_options`` document, the
command line and the environment, from the serving inputs.

The serving inputs are those a serving engineer types (phase, concurrency or
max_num_tokens, MTP draft tokens, attention DP/TP, world size, ISL/OSL), plus the MoE
choice (backend, comm, low-precision combine) the recommendation made. Units:

* ``max_batch_size`` and every CUDA-graph batch size count **requests** per attention
  rank, never tokens: under MTP K one request is 1 + K tokens per decode step, so 64
  requests with MTP 3 are 256 MoE tokens but a CUDA-graph batch of 64 (the srt-slurm
  recipes: ``max_batch_size: 32``, ``max_num_tokens: 128`` for 32 requests x (3 + 1));
* ``max_num_tokens`` counts tokens per forward per rank: decode ``max_batch_size x (1 +
  K)`` unless given; prefill the tokens one context forward takes.

Decode documents capture CUDA graphs with padding up to ``max_batch_size``; prefill runs
eager (``cuda_graph_config: null``) with the overlap scheduler off, as every srt-slurm
prefill worker does. Every document is checked by ``analysis.export_options`` for the
TensorRT-LLM release asked for.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, replace
from typing import Any, Literal

import yaml

from analysis import capabilities as cap
from analysis.export_options import DEFAULT_RELEASE, graph_batch_sizes, validate_options

Role = Literal["decode", "prefill"]  # the order of every phase Literal (one cached type)


@dataclass(frozen=True)
class WorkerShape:
    """One trtllm-serve worker (an instance of ``world_size`` GPUs). ``max_batch_size``:
    requests per attention rank; ``max_num_tokens``: tokens per forward per rank;
    ``graph_max_batch_size``: the largest CUDA-graph batch (requests; None = the
    decode ``max_batch_size``); ``comm``: TRTLLM_FORCE_COMM_METHOD when forced."""

    role: Role
    world_size: int
    attention_dp: bool
    moe_ep_size: int
    moe_tp_size: int
    backend: str
    max_batch_size: int
    max_num_tokens: int
    mtp: int = 0
    graph_max_batch_size: int | None = None
    graph_padding: bool = True
    low_precision_combine: bool | None = None
    comm: str | None = None
    max_seq_len: int | None = None


def decode_shape(
    *,
    world_size: int,
    attention_dp: bool,
    moe_ep_size: int,
    backend: str,
    requests_per_rank: int,
    mtp: int = 0,
    max_batch_size: int | None = None,
    max_num_tokens: int | None = None,
    isl: int | None = None,
    osl: int | None = None,
    low_precision_combine: bool | None = None,
    comm: str | None = None,
) -> WorkerShape:
    """The decode worker for ``requests_per_rank`` requests per attention rank (the
    CUDA-graph padded batch the load converts to): ``max_batch_size`` defaults to it and
    ``max_num_tokens`` to ``max_batch_size x (1 + mtp)``."""
    batch = max(int(max_batch_size or requests_per_rank), 1)
    return WorkerShape(
        role="decode",
        world_size=world_size,
        attention_dp=attention_dp,
        moe_ep_size=moe_ep_size,
        moe_tp_size=max(world_size // max(moe_ep_size, 1), 1),
        backend=backend,
        max_batch_size=batch,
        max_num_tokens=int(max_num_tokens or batch * (1 + mtp)),
        mtp=mtp,
        low_precision_combine=low_precision_combine,
        comm=comm,
        max_seq_len=isl + osl if isl and osl else None,
    )


def prefill_shape(
    *,
    world_size: int,
    attention_dp: bool,
    moe_ep_size: int,
    backend: str,
    max_num_tokens: int,
    mtp: int = 0,
    isl: int | None = None,
    osl: int | None = None,
    max_batch_size: int | None = None,
    low_precision_combine: bool | None = None,
    comm: str | None = None,
) -> WorkerShape:
    """The prefill worker taking ``max_num_tokens`` tokens per forward per rank:
    ``max_batch_size`` defaults to the whole prompts that fit (``max_num_tokens // isl``,
    at least 1; 1 without ISL)."""
    batch = max_batch_size or (max(max_num_tokens // isl, 1) if isl else 1)
    return WorkerShape(
        role="prefill",
        world_size=world_size,
        attention_dp=attention_dp,
        moe_ep_size=moe_ep_size,
        moe_tp_size=max(world_size // max(moe_ep_size, 1), 1),
        backend=backend,
        max_batch_size=int(batch),
        max_num_tokens=int(max_num_tokens),
        mtp=mtp,
        low_precision_combine=low_precision_combine,
        comm=comm,
        max_seq_len=isl + osl if isl and osl else None,
    )


def requests_per_rank(num_tokens: int, world_size: int, attention_dp: bool, mtp: int) -> int:
    """Requests per attention rank behind a decode ``num_tokens`` (bench_moe's: global
    under attention DP, per rank under TP): ceil(num_tokens / dp / (1 + mtp))."""
    dp = world_size if attention_dp else 1
    return max(math.ceil(num_tokens / dp / (1 + mtp)), 1)


def options(shape: WorkerShape) -> dict[str, Any]:
    """The worker's ``extra_llm_api_options`` as a dict, in the order written."""
    graph: dict[str, Any] | None = None
    if shape.role == "decode":
        graph = {
            "enable_padding": shape.graph_padding,
            "max_batch_size": int(shape.graph_max_batch_size or shape.max_batch_size),
        }
    moe: dict[str, Any] = {"backend": shape.backend}
    # the flag changes the combine of the comm paths only; the fused MEGAMOE path
    # ignores it (the guide), so it is written where it matters
    if shape.low_precision_combine and shape.backend not in cap.FUSED_COMM_BACKENDS:
        moe["use_low_precision_moe_combine"] = True
    out: dict[str, Any] = {
        "tensor_parallel_size": shape.world_size,
        "pipeline_parallel_size": 1,
        "moe_expert_parallel_size": shape.moe_ep_size,
        "moe_tensor_parallel_size": shape.moe_tp_size,
        "enable_attention_dp": shape.attention_dp,
        "max_batch_size": shape.max_batch_size,
        "max_num_tokens": shape.max_num_tokens,
    }
    if shape.max_seq_len:
        out["max_seq_len"] = shape.max_seq_len
    if shape.role == "prefill":
        out["disable_overlap_scheduler"] = True
    out["cuda_graph_config"] = graph
    out["moe_config"] = moe
    if shape.mtp > 0:
        out["speculative_config"] = {
            "decoding_type": "MTP",
            "num_nextn_predict_layers": shape.mtp,
        }
    return out


def graph_sizes_note(shape: WorkerShape, release: str = DEFAULT_RELEASE) -> str | None:
    """One comment line: the CUDA-graph batch sizes TensorRT-LLM generates (requests)."""
    if shape.role != "decode":
        return None
    top = int(shape.graph_max_batch_size or shape.max_batch_size)
    sizes = graph_batch_sizes(top, shape.graph_padding, release)
    return (
        f"cuda graphs (TensorRT-LLM {release}) capture batches of "
        f"{', '.join(str(s) for s in sizes)} requests"
    )


def env(shape: WorkerShape) -> dict[str, str]:
    """The worker's environment: TRTLLM_FORCE_COMM_METHOD when the comm is forced (the
    fused MEGAMOE backends have no comm to force)."""
    if shape.comm and shape.backend not in cap.FUSED_COMM_BACKENDS:
        return {"TRTLLM_FORCE_COMM_METHOD": shape.comm}
    return {}


def serve_command(
    shape: WorkerShape, model: str, config_path: str, hardware: str | None = None
) -> str:
    """The trtllm-serve command line of one worker. A worker larger than one node
    (the hardware's GPUs per node, ``capabilities.gpus_per_node``) starts under
    ``srun`` with ``trtllm-llmapi-launch`` (one MPI rank per GPU); the environment is
    exported on the same line."""
    envs = " ".join(f"{k}={v}" for k, v in env(shape).items())
    serve = " ".join(
        [
            "trtllm-serve",
            shlex.quote(model),
            "--backend pytorch",
            f"--tp_size {shape.world_size}",
            f"--ep_size {shape.moe_ep_size}",
            f"--max_batch_size {shape.max_batch_size}",
            f"--max_num_tokens {shape.max_num_tokens}",
            f"--extra_llm_api_options {shlex.quote(config_path)}",
        ]
    )
    per_node = cap.gpus_per_node(hardware) if hardware else None
    if per_node and shape.world_size > per_node:
        nodes = math.ceil(shape.world_size / per_node)
        serve = (
            f"srun --mpi=pmix -N {nodes} --ntasks {shape.world_size} "
            f"--ntasks-per-node {per_node} trtllm-llmapi-launch {serve}"
        )
    return f"{envs} {serve}" if envs else serve


def options_yaml(shape: WorkerShape, header: list[str], release: str = DEFAULT_RELEASE) -> str:
    """``# header`` lines, the graph-size note, any validation problem of ``release`` as
    ``# error:`` lines, then the YAML document (``yaml.safe_load`` gives :func:`options`)."""
    doc = options(shape)
    lines = list(header)
    note = graph_sizes_note(shape, release)
    if note:
        lines.append(note)
    lines += [f"error: {p}" for p in validate_options(doc, release)]
    text = "".join(f"# {' '.join(str(h).split())}\n" for h in lines)
    return text + str(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))


def with_role(shape: WorkerShape, role: Role) -> WorkerShape:
    """The same worker in another role (CUDA graphs follow the role)."""
    return replace(shape, role=role)
