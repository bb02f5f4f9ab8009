"""A plan as a deployment description: node roles, GPU types and counts, TP per side,
micro-batches, batch and expected time between tokens, as JSON and as readable text.

Built from the plan document of :func:`service.planner.run_plan` (its ``best``,
``model`` and ``workload``), so the API payload, the page and the download all carry the
same description. Units: GPUs, tokens, sequences, ms, tokens/s, normalised cost units.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.planner_serving import serving


def deployment(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The best plan as node groups (None when there is no disaggregated plan).

    ``nodes``: an ``attention`` group (``na`` nodes of ``tpa`` GPUs, data parallel, each
    holding all attention-side weights and its KV cache) and an ``expert`` group (``E/x``
    nodes of ``tpe`` GPUs, each holding ``x`` experts); ``pipeline``: micro-batches,
    global batch, per-node micro-batch sizes; ``expected``: TBT, throughput, cost;
    ``serving``: the stacks that can run it with their per-role settings, the
    co-located alternative on ``trtllm-serve`` and which one is recommended
    (``service.planner_serving``); ``summary``: the same in a few lines of text.
    """
    best = payload.get("best")
    if not best:
        return None
    model = payload.get("model", {})
    wl = payload.get("workload", {})
    nodes = [
        {
            "role": "attention",
            "gpu": best["attention_gpu"],
            "nodes": best["na"],
            "gpus_per_node": best["tpa"],
            "tensor_parallel": best["tpa"],
            "gpus": best["attention_gpus"],
            "holds": "all attention-side weights + KV cache of its sequences (data parallel)",
        },
        {
            "role": "expert",
            "gpu": best["expert_gpu"],
            "nodes": best["expert_nodes"],
            "gpus_per_node": best["tpe"],
            "tensor_parallel": best["tpe"],
            "gpus": best["expert_gpus"],
            "experts_per_node": best["experts_per_node"],
            "holds": f"{best['experts_per_node']} routed expert(s) of every MoE layer",
        },
    ]
    doc: dict[str, Any] = {
        "model": model.get("name"),
        "workload": {"seq_len": wl.get("seq_len"), "slo_tbt_ms": wl.get("slo_tbt_ms")},
        "nodes": nodes,
        "total_gpus": best["gpus"],
        "pipeline": {
            "micro_batches": best["m"],
            "global_batch_sequences": best["batch"],
            "attention_micro_batch_per_node": best["ba"],
            "tokens_per_expert_per_micro_batch": best["be"],
        },
        "expected": {
            "tbt_ms": best["tbt_ms"],
            "throughput_tokens_s": best["throughput"],
            "cost_units": best["cost"],
            "tokens_s_per_cost_unit": best["tput_per_cost"],
            "all_constraints_met": best.get("all_constraints_met"),
        },
    }
    doc["serving"] = serving(best, payload.get("colocated"), payload.get("disaggregation_gain"))
    doc["summary"] = summary_text(doc)
    return doc


def summary_text(doc: Mapping[str, Any]) -> str:
    """Readable lines of a :func:`deployment` document."""
    att, exp = doc["nodes"]
    pipe, exp_out = doc["pipeline"], doc["expected"]
    ok = "meets" if exp_out["all_constraints_met"] else "VIOLATES"
    return "\n".join(
        [
            f"{doc['model']}: {doc['total_gpus']} GPUs, disaggregated (MegaScale-Infer style)",
            f"- attention: {att['nodes']} node(s) x {att['gpus_per_node']} {att['gpu']} "
            f"(TP {att['tensor_parallel']}, data parallel)",
            f"- experts: {exp['nodes']} node(s) x {exp['gpus_per_node']} {exp['gpu']} "
            f"(TP {exp['tensor_parallel']}, {exp['experts_per_node']} expert(s) per node)",
            f"- ping-pong: {pipe['micro_batches']} micro-batches, global batch "
            f"{pipe['global_batch_sequences']} sequences",
            f"- expected: TBT {exp_out['tbt_ms']:.1f} ms "
            f"(SLO {doc['workload']['slo_tbt_ms']:g} ms), "
            f"{exp_out['throughput_tokens_s']:.0f} tokens/s, {ok} the pipeline constraints",
            *serving_lines(doc.get("serving")),
        ]
    )


def serving_lines(serve: Mapping[str, Any] | None) -> list[str]:
    """The serving stacks of a :func:`deployment` as readable lines."""
    if not serve:
        return []
    dis = serve["disaggregated"]
    lines = [
        "- serve with (attention-FFN disaggregation, experimental): "
        + "; ".join(f"{s['stack']} <{s['source']}>" for s in dis["stacks"]),
        f"  attention role: {dis['stacks'][0]['roles']['attention']}",
        f"  ffn role: {dis['stacks'][0]['roles']['ffn']}",
        f"- {dis['not_supported_by']}",
    ]
    colo = serve.get("colocated")
    if colo:
        lines.append(
            f"- co-located alternative: {colo['stack']} on {colo['gpus']} {colo['gpu']}, "
            f"{colo['settings']}"
        )
    lines.append(f"- recommended: {serve['recommended']}")
    return lines
