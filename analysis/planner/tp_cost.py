"""What tensor parallelism costs: the all-reduce and narrower GEMM shards.

Without these terms a TP=8 node is exactly 8x faster than TP=1 for 8x the price, so TP
never costs anything and the search picks TP=8 even over PCIe (issue 16). Two effects
are modelled, per MoE layer and per module (attention node or expert node):

* **All-reduce** of the module output (``tokens * h * activation bytes``; Megatron-style
  row-parallel output projection / FFN down projection, one all-reduce per module per
  layer, the paper's "TP synchronisation time O(ba*h*(tpa-1)/tpa)"). Ring algorithm:
  each GPU moves ``2*(tp-1)/tp`` of the buffer over its intra-node link
  (``GPUSpec.intra_node_gb_s``: NVLink per GPU per direction, or PCIe Gen4 x16 = 32 GB/s
  for the PCIe cards L40S / L20) at ``link_efficiency`` of the datasheet figure, plus
  ``2*(tp-1)`` steps of ``step_latency_ms`` each (NCCL ring latency per hop is a few
  microseconds on NVLink, more over PCIe; 5 us is the assumption).
* **Narrow shards**: a GEMM whose per-GPU output width ``w`` is small keeps fewer tensor
  cores / memory channels busy (tile quantisation with 128-256 wide tiles; a decode GEMM
  of a few dozen rows is already launch-dominated). The achieved fraction is modelled as
  ``w / (w + half_width)`` relative to the unsharded width, so a shard 1/tp wide runs at
  ``eff(w/tp) / eff(w)`` of the per-GPU speed the roofline assumes. half_width = 256
  columns is an assumption (it makes a 2048-wide shard 11 % slower, a 768-wide one 25 %).

Both are ASSUMPTIONS with the sources named above; replace them with profiled numbers
when you have them (they only apply to roofline and sweep-fitted expert times; a
user-given attention fit for a given tpa is taken as measured and gets nothing added).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TPCost:
    """Knobs of the TP cost model (see module docstring for sources)."""

    link_efficiency: float = 0.8  # achieved fraction of the intra-node link bandwidth
    step_latency_ms: float = 0.005  # per ring step
    half_width: float = 256.0  # GEMM output columns per GPU at which efficiency halves
    free: bool = False  # True: the paper's bare formulas (TP costs nothing)


DEFAULT_TP_COST = TPCost()
NO_TP_COST = TPCost(free=True)


def allreduce_ms(nbytes: float, tp: int, link_gb_s: float, cost: TPCost = DEFAULT_TP_COST) -> float:
    """Ring all-reduce of ``nbytes`` over ``tp`` GPUs linked at ``link_gb_s`` GB/s (ms).

    0 for tp = 1. ``2*(tp-1)/tp * nbytes / (link * efficiency) + 2*(tp-1) * step``.
    """
    if tp <= 1 or nbytes <= 0 or cost.free:
        return 0.0
    bw = link_gb_s * 1e9 * cost.link_efficiency
    return 1e3 * 2.0 * (tp - 1) / tp * nbytes / bw + 2.0 * (tp - 1) * cost.step_latency_ms


def allreduce_slope_ms(
    bytes_per_token: float, tp: int, link_gb_s: float, cost: TPCost = DEFAULT_TP_COST
) -> tuple[float, float]:
    """The all-reduce as a linear law in tokens: ``(ms per token, fixed ms)``."""
    if tp <= 1 or cost.free:
        return 0.0, 0.0
    per_token = allreduce_ms(bytes_per_token, tp, link_gb_s, cost) - 2.0 * (tp - 1) * (
        cost.step_latency_ms
    )
    return per_token, 2.0 * (tp - 1) * cost.step_latency_ms


def shard_slowdown(width: float, tp: int, cost: TPCost = DEFAULT_TP_COST) -> float:
    """How much slower per GPU a GEMM runs when its ``width`` columns are split ``tp`` ways.

    ``eff(width) / eff(width/tp)`` with ``eff(w) = w / (w + half_width)``; 1.0 for tp = 1
    or half_width = 0; always >= 1.
    """
    if tp <= 1 or cost.free or cost.half_width <= 0 or width <= 0:
        return 1.0
    shard = width / tp
    return (width / (width + cost.half_width)) / (shard / (shard + cost.half_width))
