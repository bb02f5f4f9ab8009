"""Turn a ``Recommendation`` into something a serving engineer can paste.

``recommended_config_yaml`` emits a trtllm-serve ``--extra_llm_api_options`` YAML with a
provenance comment header; ``env_line`` gives the TRTLLM_FORCE_COMM_METHOD line when the
comm must be forced (TensorRT-LLM reads it from the environment, not from the YAML).

Nothing missing is written as a value: a field the source did not record (version,
date, a run id) is left out and a ``# <field>: not recorded`` comment says so, so no
``nan`` / ``None`` ever reaches the text. :func:`export_check` runs the capability
check (``analysis.capabilities.check_export``); its warnings become ``# warning:``
comments and its errors ``# error:`` comments (the service refuses to offer such a
config; the comments keep a text that is shown anyway honest).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import yaml

from analysis import capabilities as cap
from analysis.tree import Recommendation


@dataclass(frozen=True)
class Provenance:
    """Where a recommendation came from: run ids whose data informed it, the TRT-LLM
    version of those runs, an ISO date, and what produced it (free text). Missing
    markers (None, NaN, empty text) mean "not recorded"."""

    run_ids: Sequence[int] = ()
    trtllm_version: str | None = None
    date: str | None = None
    produced_by: str = "moedash analysis.tree.recommend (TensorRT-LLM MoE guide tree)"


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def present_text(value: object) -> str | None:
    """``value`` as text, None for every missing marker (None, NaN, NA, NaT, blank,
    the strings "nan" / "None" a careless str() produces)."""
    if value is None:
        return None
    if pd.api.types.is_scalar(value) and bool(pd.isna(value)):
        return None
    text = str(value).strip()
    return None if text.lower() in ("", "nan", "none", "<na>", "nat") else text


def cuda_graph_max_batch_size(rec: Recommendation) -> int:
    """Per-rank tokens per decode step: ceil(num_tokens / world_size) under attention DP,
    num_tokens under attention TP (every rank holds all tokens); at least 1."""
    dep = rec.deployment
    n = math.ceil(dep.num_tokens / dep.world_size) if dep.attention_dp else dep.num_tokens
    return max(int(n), 1)


def config_dict(rec: Recommendation) -> dict[str, object]:
    """The YAML body as a dict. ``cuda_graph_config`` is None (YAML null) for prefill /
    CUDA graph off, else {enable_padding: true, max_batch_size}. ``moe_config`` carries
    ``use_low_precision_moe_combine: true`` when the recommendation sets it (a measured
    candidate that ran with it) and the backend is not a fused MEGAMOE one."""
    dep = rec.deployment
    graph = (
        {"enable_padding": True, "max_batch_size": cuda_graph_max_batch_size(rec)}
        if dep.cuda_graph
        else None
    )
    moe: dict[str, object] = {"backend": rec.backend}
    # the flag changes the combine of the comm paths only; the fused MEGAMOE path
    # ignores it (the guide), so it is written where it matters
    if rec.low_precision_combine and rec.backend not in cap.FUSED_COMM_BACKENDS:
        moe["use_low_precision_moe_combine"] = True
    return {
        "tensor_parallel_size": dep.world_size,
        "moe_expert_parallel_size": rec.moe_ep_size,
        "moe_tensor_parallel_size": rec.moe_tp_size,
        "enable_attention_dp": dep.attention_dp,
        "moe_config": moe,
        "cuda_graph_config": graph,
    }


def env_line(rec: Recommendation) -> str | None:
    """``TRTLLM_FORCE_COMM_METHOD=<NAME>`` when the comm must be forced, else None."""
    return f"TRTLLM_FORCE_COMM_METHOD={rec.comm}" if rec.force_comm else None


def comm_advice(rec: Recommendation) -> str:
    """One line on the comm: what to set, or why nothing is set."""
    env = env_line(rec)
    if rec.backend in cap.FUSED_COMM_BACKENDS:
        return (
            f"comm: NONE ({rec.backend} fuses dispatch and combine into the GEMM; "
            "TRTLLM_FORCE_COMM_METHOD stays unset)"
        )
    if env:
        why = "" if rec.expected_comm == rec.comm else f" (AUTO would pick {rec.expected_comm})"
        return f"comm: set {env} on every rank{why}"
    return f"comm: leave AUTO (expected {rec.expected_comm})"


def export_check(rec: Recommendation) -> cap.ExportCheck:
    """``capabilities.check_export`` of the recommendation's backend x comm x quant x GPU,
    plus a warning when the tree walked outside the guide's coverage."""
    dep = rec.deployment
    check = cap.check_export(
        rec.backend,
        rec.comm if rec.force_comm else rec.expected_comm,
        dep.quant,
        dep.hardware,
        forced=rec.force_comm,
        hidden_size=dep.hidden_size,
        top_k=dep.top_k,
        world_size=dep.world_size,
    )
    said = any(w.startswith("outside the guide's coverage") for w in check.warnings)
    extra: tuple[str, ...] = ()
    if not rec.in_guide_coverage and not said:
        extra = ("outside the guide's coverage: " + "; ".join(rec.notes or ("see the path",)),)
    return cap.ExportCheck(check.errors, check.warnings + extra)


def recommended_config_yaml(
    rec: Recommendation, provenance: Provenance, check: cap.ExportCheck | None = None
) -> str:
    """YAML text (parses with yaml.safe_load to ``config_dict(rec)``) headed by ``#``
    comments: producer, run ids, TRT-LLM version, date, deployment, phase, comm advice,
    notes, then ``check``'s errors and warnings (default: :func:`export_check`)."""
    dep = rec.deployment
    check = export_check(rec) if check is None else check
    version = present_text(provenance.trtllm_version)
    date = present_text(provenance.date)
    header = [
        "moedash recommended MoE configuration",
        f"produced by: {provenance.produced_by}",
        "run ids: " + (", ".join(str(r) for r in provenance.run_ids) or "none"),
        f"TensorRT-LLM version: {version or 'not recorded'}",
        f"date: {date or 'not recorded'}",
        f"deployment: {present_text(dep.model) or 'model'} {dep.quant} on {dep.hardware}, "
        f"world_size {dep.world_size}, attention {'DP' if dep.attention_dp else 'TP'}, "
        f"num_tokens {dep.num_tokens}",
        f"phase: {rec.phase} ({rec.parallel_mode})",
        comm_advice(rec),
    ]
    header += [f"note: {n}" for n in rec.notes]
    header += [f"error: {e}" for e in check.errors]
    header += [f"warning: {w}" for w in check.warnings]
    text = "".join(f"# {_one_line(h)}\n" for h in header)
    body = str(yaml.safe_dump(config_dict(rec), sort_keys=False, default_flow_style=False))
    return text + body
