"""Turn a tree ``Recommendation`` into something a serving engineer can paste.

``recommended_config_yaml`` emits a trtllm-serve ``--extra_llm_api_options`` YAML with a
provenance comment header; ``env_line`` gives the TRTLLM_FORCE_COMM_METHOD line when the
comm must be forced (TensorRT-LLM reads it from the environment, not from the YAML).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from analysis.tree import Recommendation


@dataclass(frozen=True)
class Provenance:
    """Where a recommendation came from: run ids whose data informed it, the TRT-LLM
    version of those runs, an ISO date, and what produced it (free text)."""

    run_ids: Sequence[int] = ()
    trtllm_version: str | None = None
    date: str | None = None
    produced_by: str = "moedash analysis.tree.recommend (TensorRT-LLM MoE guide tree)"


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def cuda_graph_max_batch_size(rec: Recommendation) -> int:
    """Per-rank tokens per decode step: ceil(num_tokens / world_size) under attention DP,
    num_tokens under attention TP (every rank holds all tokens); at least 1."""
    dep = rec.deployment
    n = math.ceil(dep.num_tokens / dep.world_size) if dep.attention_dp else dep.num_tokens
    return max(int(n), 1)


def config_dict(rec: Recommendation) -> dict[str, object]:
    """The YAML body as a dict. ``cuda_graph_config`` is None (YAML null) for prefill /
    CUDA graph off, else {enable_padding: true, max_batch_size}."""
    dep = rec.deployment
    graph = (
        {"enable_padding": True, "max_batch_size": cuda_graph_max_batch_size(rec)}
        if dep.cuda_graph
        else None
    )
    return {
        "tensor_parallel_size": dep.world_size,
        "moe_expert_parallel_size": rec.moe_ep_size,
        "moe_tensor_parallel_size": rec.moe_tp_size,
        "enable_attention_dp": dep.attention_dp,
        "moe_config": {"backend": rec.backend},
        "cuda_graph_config": graph,
    }


def env_line(rec: Recommendation) -> str | None:
    """``TRTLLM_FORCE_COMM_METHOD=<NAME>`` when the tree forces a comm, else None."""
    return f"TRTLLM_FORCE_COMM_METHOD={rec.comm}" if rec.force_comm else None


def recommended_config_yaml(rec: Recommendation, provenance: Provenance) -> str:
    """YAML text (parses with yaml.safe_load to ``config_dict(rec)``) headed by ``#``
    comments: producer, run ids, TRT-LLM version, date, deployment, phase, comm advice."""
    dep = rec.deployment
    env = env_line(rec)
    header = [
        "moedash recommended MoE configuration",
        f"produced by: {provenance.produced_by}",
        "run ids: " + (", ".join(str(r) for r in provenance.run_ids) or "none"),
        f"TensorRT-LLM version: {provenance.trtllm_version or 'unknown'}",
        f"date: {provenance.date or 'unknown'}",
        f"deployment: {dep.model or 'model'} {dep.quant} on {dep.hardware}, world_size "
        f"{dep.world_size}, attention {'DP' if dep.attention_dp else 'TP'}, "
        f"num_tokens {dep.num_tokens}",
        f"phase: {rec.phase} ({rec.parallel_mode})",
        (
            f"comm: set {env} on every rank"
            if env
            else f"comm: leave AUTO (expected {rec.expected_comm})"
        ),
    ]
    header += [f"note: {n}" for n in rec.notes]
    text = "".join(f"# {_one_line(h)}\n" for h in header)
    body = str(yaml.safe_dump(config_dict(rec), sort_keys=False, default_flow_style=False))
    return text + body
