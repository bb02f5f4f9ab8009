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
from analysis.export_launch import (
    WorkerShape,
    decode_shape,
    graph_sizes_note,
    options,
    prefill_shape,
    requests_per_rank,
)
from analysis.export_options import DEFAULT_RELEASE, validate_options
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
    # the confidence panel in one line (analysis.confidence: deploy / tie: either /
    # measure first and why), the same words as the page and the API; None: not given
    confidence: str | None = None


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


@dataclass(frozen=True)
class ServingInputs:
    """What the serving engineer typed beside the deployment: MTP draft tokens,
    ``requests_per_rank`` (decode: the CUDA-graph padded requests per attention rank the
    concurrency converts to; None = derived from num_tokens), ``max_batch_size``
    (requests per rank) and ``max_num_tokens`` (tokens per forward per rank) when given,
    ISL / OSL, and the TensorRT-LLM release whose option rules the YAML is checked
    against."""

    mtp: int = 0
    requests_per_rank: int | None = None
    max_batch_size: int | None = None
    max_num_tokens: int | None = None
    isl: int | None = None
    osl: int | None = None
    release: str = DEFAULT_RELEASE


def worker_shape(rec: Recommendation, serving: ServingInputs | None = None) -> WorkerShape:
    """The trtllm-serve worker behind a recommendation. Decode: ``max_batch_size`` in
    requests (given, else the padded requests per rank, else ceil(num_tokens / dp /
    (1 + mtp))) -- never num_tokens / world_size, which counts MTP tokens as requests;
    prefill: ``max_num_tokens`` given, else bench_moe's num_tokens per rank."""
    s = serving or ServingInputs()
    dep = rec.deployment
    comm = rec.comm if rec.force_comm else None
    common: dict[str, object] = dict(
        world_size=dep.world_size,
        attention_dp=dep.attention_dp,
        moe_ep_size=rec.moe_ep_size,
        backend=rec.backend,
        mtp=s.mtp,
        isl=s.isl,
        osl=s.osl,
        max_batch_size=s.max_batch_size,
        low_precision_combine=rec.low_precision_combine,
        comm=comm,
    )
    if dep.cuda_graph:
        requests = s.requests_per_rank or requests_per_rank(
            dep.num_tokens, dep.world_size, dep.attention_dp, s.mtp
        )
        return decode_shape(
            requests_per_rank=requests,
            max_num_tokens=s.max_num_tokens,
            **common,  # type: ignore[arg-type]
        )
    per_rank = math.ceil(dep.num_tokens / dep.world_size) if dep.attention_dp else dep.num_tokens
    return prefill_shape(
        max_num_tokens=s.max_num_tokens or max(int(per_rank), 1),
        **common,  # type: ignore[arg-type]
    )


def config_dict(rec: Recommendation, serving: ServingInputs | None = None) -> dict[str, object]:
    """The whole ``extra_llm_api_options`` document of the recommendation's worker
    (``analysis.export_launch.options``): parallel sizes, attention DP, max_batch_size
    (requests), max_num_tokens, CUDA graphs (decode: padded, up to max_batch_size
    requests; prefill: null), moe_config (backend; ``use_low_precision_moe_combine``
    when a measured candidate ran with it, not for the fused MEGAMOE backends) and the
    MTP ``speculative_config``."""
    return options(worker_shape(rec, serving))


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


def coverage_text(rec: Recommendation) -> str:
    """The one coverage sentence the YAML comment, the JSON's ``coverage`` and the page
    show: from ``rec.in_guide_coverage`` and the tree's notes."""
    if rec.in_guide_coverage:
        return "inside the guide's coverage"
    return "outside the guide's coverage: " + "; ".join(rec.notes or ("see the path",))


def export_check(
    rec: Recommendation, nvlink_ran: dict[str, list[int]] | None = None
) -> cap.ExportCheck:
    """``capabilities.check_export`` of the recommendation's backend x comm x quant x GPU
    (``nvlink_ran``: the NVLINK_* runs stored for its hardware, so a table-vs-data
    conflict is named), plus the coverage warning when the tree walked outside the
    guide's coverage (:func:`coverage_text`, the same sentence everywhere)."""
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
        nvlink_ran=nvlink_ran,
    )
    extra = () if rec.in_guide_coverage else (coverage_text(rec),)
    return cap.ExportCheck(check.errors, check.warnings + extra)


def recommended_config_yaml(
    rec: Recommendation,
    provenance: Provenance,
    check: cap.ExportCheck | None = None,
    serving: ServingInputs | None = None,
) -> str:
    """YAML text (parses with yaml.safe_load to ``config_dict(rec, serving)``) headed by
    ``#`` comments: producer, run ids, TRT-LLM version, date, deployment, phase, comm
    advice, the CUDA-graph batch sizes, notes, then ``check``'s errors and warnings
    (default: :func:`export_check`) and any field the typed options model of the
    release refuses (``error:``)."""
    s = serving or ServingInputs()
    shape = worker_shape(rec, s)
    doc = options(shape)
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
        *([f"confidence: {_one_line(provenance.confidence)}"] if provenance.confidence else []),
        f"deployment: {present_text(dep.model) or 'model'} {dep.quant} on {dep.hardware}, "
        f"world_size {dep.world_size}, attention {'DP' if dep.attention_dp else 'TP'}, "
        f"num_tokens {dep.num_tokens}",
        f"coverage: {coverage_text(rec)}",
        f"phase: {rec.phase} ({rec.parallel_mode})"
        + (f", MTP {s.mtp} draft tokens per request" if s.mtp else ""),
        comm_advice(rec),
        f"options checked against TensorRT-LLM {s.release}",
    ]
    note = graph_sizes_note(shape, s.release)
    header += [note] if note else []
    header += [f"note: {n}" for n in rec.notes]
    header += [f"error: {e}" for e in check.errors]
    header += [f"error: {e}" for e in validate_options(doc, s.release)]
    header += [f"warning: {w}" for w in check.warnings]
    text = "".join(f"# {_one_line(h)}\n" for h in header)
    body = str(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
    return text + body
