"""Serving load -> bench_moe ``num_tokens``: the one conversion every surface uses.

The serving-config mapping (``analysis.serving_map``), the Recommend page and the
``concurrency=`` / ``max_num_tokens=`` parameters of the API all call these two
functions. The rules are ``shared/reference/serving_configs.md`` section (d):

decode (concurrency ``conc`` over ``workers`` decode instances of ``world_size`` GPUs,
attention DP or TP, MTP draft tokens ``K``, CUDA-graph batch sizes ``G``)::

    dp         = world_size if attention DP else 1       # attention ranks per instance
    b_rank     = ceil(conc / workers / dp)                # requests per attention rank
                 (capped at max_batch_size when given; at least 1)
    b_pad      = min{g in G : g >= b_rank}                # enable_padding
               = b_rank when no graph fits (the step then runs without CUDA graphs)
    t_rank     = b_pad * (1 + K)                          # MoE tokens per rank per step
    num_tokens = t_rank * dp                              # bench_moe: global under DP,
                                                          # every rank's batch under TP

With attention DP every rank pads its graph batch to the **largest** batch across the
ranks (TensorRT-LLM all-gathers the batch sizes before choosing a graph), so the padded
``b_pad`` is global and ``num_tokens`` is ``b_pad * (1 + K) * dp``.

``G`` defaults to TensorRT-LLM's generated list (:func:`graph_batch_sizes`) for the
CUDA-graph ``max_batch_size`` (128 when not given, TensorRT-LLM's default).

prefill (``max_num_tokens`` per forward, optional ISL and max_batch_size)::

    t_rank     = min(max_num_tokens, max_batch_size * ISL)   # the known terms; ISL alone
    num_tokens = t_rank * world_size if attention DP else t_rank;  CUDA graph off
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

DEFAULT_GRAPH_MAX_BATCH = 128  # TensorRT-LLM's CUDA-graph max_batch_size when none is set


@dataclass(frozen=True)
class TokenCount:
    """A converted workload. ``num_tokens`` is bench_moe's (global under attention DP,
    per rank under TP); ``tokens_per_rank`` the MoE input tokens of one rank per
    forward; ``batch_per_rank`` / ``batch_per_rank_padded`` requests per attention rank
    before / after CUDA-graph padding (decode only); ``cuda_graph`` whether a captured
    graph serves the step (None when the graph set is unknown); ``formula`` the rule
    with the numbers filled in; ``notes`` what the caller should know."""

    num_tokens: int
    tokens_per_rank: int
    dp: int
    phase: str
    batch_per_rank: int | None = None
    batch_per_rank_padded: int | None = None
    cuda_graph: bool | None = None
    formula: str = ""
    notes: tuple[str, ...] = field(default=())


def _scope(attention_dp: bool) -> str:
    return "(attention DP: global)" if attention_dp else "(attention TP: per rank)"


def graph_batch_sizes(max_batch_size: int, enable_padding: bool = True) -> list[int]:
    """TensorRT-LLM 1.x ``CudaGraphConfig._generate_cuda_graph_batch_sizes``: with
    padding 1, 2, 4, then multiples of 8 up to 128; without it 1..31, 32, 64, 128; then
    powers of two from 256 below ``max_batch_size``; capped at and always ending with
    ``max_batch_size``. Newer versions add sizes above 128 in steps of 64."""
    if enable_padding:
        sizes = [1, 2, 4] + [i * 8 for i in range(1, 17)]
    else:
        sizes = list(range(1, 32)) + [32, 64, 128]
    if max_batch_size > 1:
        sizes += [2**i for i in range(8, math.ceil(math.log2(max_batch_size)))]
    sizes = sorted({s for s in sizes if s <= max_batch_size})
    if not sizes or sizes[-1] != max_batch_size:
        sizes.append(max_batch_size)
    return sizes


def decode_tokens(
    concurrency: int,
    world_size: int,
    attention_dp: bool,
    mtp: int = 0,
    workers: int = 1,
    max_batch_size: int | None = None,
    graph_sizes: Sequence[int] | None = None,
    padding: bool = True,
) -> TokenCount:
    """Decode ``num_tokens`` for ``concurrency`` requests in flight (module docstring).

    ``graph_sizes``: the CUDA-graph batch sizes; None = TensorRT-LLM's generated list for
    ``max_batch_size`` (or 128); an empty sequence = no CUDA graphs. ``padding``: graphs
    capture padded batches (``enable_padding``); without it only an exact size fits.
    Raises ValueError on a non-positive concurrency, world size or worker count, or a
    negative MTP count."""
    if concurrency < 1 or world_size < 1 or workers < 1 or mtp < 0:
        raise ValueError("concurrency, world_size and workers must be >= 1, mtp >= 0")
    dp = world_size if attention_dp else 1
    b_rank = max(math.ceil(concurrency / workers / dp), 1)
    notes: list[str] = []
    if max_batch_size is not None and b_rank > max_batch_size:
        notes.append(
            f"{b_rank} requests per rank exceed max_batch_size {max_batch_size}: "
            f"the rest wait in the queue"
        )
        b_rank = max_batch_size
    sizes = (
        graph_batch_sizes(max_batch_size or DEFAULT_GRAPH_MAX_BATCH, padding)
        if graph_sizes is None
        else sorted(int(s) for s in graph_sizes)
    )
    fits = [s for s in sizes if s >= b_rank] if padding else [s for s in sizes if s == b_rank]
    b_pad = min(fits) if fits else b_rank
    if sizes and not fits:
        notes.append(
            f"{b_rank} requests per rank fit no CUDA graph (largest {max(sizes)}): "
            "the step runs without CUDA graphs"
        )
    t_rank = b_pad * (1 + mtp)
    where = (
        f"ceil({concurrency} / {workers} / {dp})" if workers > 1 else f"ceil({concurrency} / {dp})"
    )
    formula = (
        f"requests per rank = {where} = {b_rank}"
        + (f", CUDA-graph padded to {b_pad}" if b_pad != b_rank else "")
        + f"; tokens per rank = {b_pad} x (1 + {mtp} MTP) = {t_rank}"
        + f"; num_tokens = {t_rank} x {dp} {_scope(attention_dp)} = {t_rank * dp}"
    )
    return TokenCount(
        num_tokens=t_rank * dp,
        tokens_per_rank=t_rank,
        dp=dp,
        phase="decode",
        batch_per_rank=b_rank,
        batch_per_rank_padded=b_pad,
        cuda_graph=bool(fits),
        formula=formula,
        notes=tuple(notes),
    )


def prefill_tokens(
    world_size: int,
    attention_dp: bool,
    max_num_tokens: int | None = None,
    isl: int | None = None,
    max_batch_size: int | None = None,
) -> TokenCount:
    """Prefill ``num_tokens`` of a saturated context forward (module docstring): the
    smallest of ``max_num_tokens`` and ``max_batch_size * isl`` that is known, else
    ``isl``; times the world size under attention DP. CUDA graph off. Raises ValueError
    when neither max_num_tokens nor isl is given, or a value is below 1."""
    given = [v for v in (max_num_tokens, isl, max_batch_size, world_size) if v is not None]
    if any(v < 1 for v in given):
        raise ValueError("world_size, max_num_tokens, isl and max_batch_size must be >= 1")
    terms = [max_num_tokens] if max_num_tokens is not None else []
    if max_batch_size is not None and isl is not None:
        terms.append(max_batch_size * isl)
    if not terms and isl is None:
        raise ValueError("give max_num_tokens (or the ISL)")
    t_rank = min(terms) if terms else int(isl)  # type: ignore[arg-type]
    dp = world_size if attention_dp else 1
    parts = [f"max_num_tokens {max_num_tokens}"] if max_num_tokens is not None else []
    if max_batch_size is not None and isl is not None:
        parts.append(f"max_batch_size {max_batch_size} x ISL {isl}")
    what = f"min({', '.join(parts)})" if len(parts) > 1 else (parts[0] if parts else f"ISL {isl}")
    formula = (
        f"tokens per rank = {what} = {t_rank}; "
        f"num_tokens = {t_rank} x {dp} {_scope(attention_dp)} = {t_rank * dp}"
    )
    return TokenCount(
        num_tokens=t_rank * dp,
        tokens_per_rank=t_rank,
        dp=dp,
        phase="prefill",
        batch_per_rank=max_batch_size,
        cuda_graph=False,
        formula=formula,
    )
