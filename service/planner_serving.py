"""Which serving stack can run a planned deployment, and its settings per role.

A MegaScale-Infer plan separates attention nodes from expert (FFN) nodes. As of this
writing TensorRT-LLM, the stack whose sweeps moedash stores, does not run that split
(NVIDIA/TensorRT-LLM#6577, "no timeline"); it disaggregates prefill from decode only.
Two open stacks carry experimental attention-FFN disaggregation (AFD): SGLang
(sgl-project/sglang#36258: ``--afd-role``, ``--afd-transfer-backend``,
``--afd-ffn-addr``, StepMesh transport, Qwen3-MoE only when merged) and vLLM (RFC
vllm-project/vllm#22799, the ``vllm-project/afd-plugin``: an FFN server started with
``--afd-config '{"afd_role": "ffn", ...}'``). Neither lists the bench_moe models, so the
plan is named with the caveat. The co-located baseline, in contrast, is what
``trtllm-serve`` runs today (attention TP x DP, experts spread by expert parallelism).
The per-role settings are the plan's numbers under each stack's own names where known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

AFD_STACKS: tuple[dict[str, str], ...] = (
    {
        "stack": "SGLang (attention-FFN disaggregation, experimental)",
        "status": "experimental; merged for Qwen3-MoE with the StepMesh transport",
        "source": "https://github.com/sgl-project/sglang/pull/36258",
        "attention_flags": "--afd-role attention --afd-transfer-backend stepmesh "
        "--afd-ffn-addr <ffn host:port>",
        "ffn_flags": "--afd-role ffn --afd-transfer-backend stepmesh",
    },
    {
        "stack": "vLLM AFD (afd-plugin, experimental)",
        "status": "RFC and plugin; FFN servers started apart from attention workers",
        "source": "https://github.com/vllm-project/vllm/issues/22799",
        "attention_flags": '--afd-config \'{"afd_role": "attention", ...}\'',
        "ffn_flags": '--afd-config \'{"afd_role": "ffn", ...}\'',
    },
)
TRTLLM_NO_AFD = (
    "TensorRT-LLM does not run attention and experts on separate GPUs "
    "(https://github.com/NVIDIA/TensorRT-LLM/issues/6577); it can serve the co-located "
    "baseline"
)


def serving(
    best: Mapping[str, Any], colocated: Mapping[str, Any] | None, gain: float | None
) -> dict[str, Any]:
    """The stacks that can run ``best`` (a plan record) with per-role settings, the
    co-located alternative on ``trtllm-serve`` when there is one, and which of the two
    the planner recommends (``gain`` < 1: co-located)."""
    roles = {
        "attention": {
            "nodes": best["na"],
            "gpu": best["attention_gpu"],
            "tensor_parallel_size": best["tpa"],
            "data_parallel_replicas": best["na"],
            "micro_batches": best["m"],
            "max_running_requests_per_replica": best["ba"] * best["m"],
            "micro_batch_per_replica": best["ba"],
        },
        "ffn": {
            "nodes": best["expert_nodes"],
            "gpu": best["expert_gpu"],
            "tensor_parallel_size": best["tpe"],
            "expert_parallel_nodes": best["expert_nodes"],
            "experts_per_node": best["experts_per_node"],
            "tokens_per_expert_per_micro_batch": best["be"],
        },
    }
    stacks = [
        {
            **s,
            "roles": {
                "attention": {**roles["attention"], "flags": s["attention_flags"]},
                "ffn": {**roles["ffn"], "flags": s["ffn_flags"]},
            },
        }
        for s in AFD_STACKS
    ]
    out: dict[str, Any] = {
        "disaggregated": {"stacks": stacks, "not_supported_by": TRTLLM_NO_AFD},
        "colocated": trtllm_colocated(colocated) if colocated else None,
        "recommended": "colocated"
        if colocated and gain is not None and gain < 1
        else "disaggregated",
    }
    return out


def trtllm_colocated(colo: Mapping[str, Any]) -> dict[str, Any]:
    """The co-located baseline as ``trtllm-serve`` settings: one instance over all its
    GPUs, attention DP across the replicas (TP inside each), experts by EP."""
    gpus = int(colo["gpus"])
    return {
        "stack": "TensorRT-LLM (trtllm-serve)",
        "gpu": colo["gpu"],
        "gpus": gpus,
        "settings": {
            "tensor_parallel_size": gpus,
            "moe_expert_parallel_size": gpus,
            "enable_attention_dp": int(colo["replicas"]) > 1,
            "attention_tensor_parallel_per_replica": colo["tp_attention"],
            "max_batch_size": int(colo["batch"]) // max(1, int(colo["replicas"])),
        },
        "expected": {"tbt_ms": colo["tbt_ms"], "throughput_tokens_s": colo["throughput"]},
    }
