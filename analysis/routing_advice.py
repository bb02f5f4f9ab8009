"""The guide's advanced techniques, checked against one routing-skew comparison.

The MoE performance guide (Advanced Techniques, and the note on thresholds) gives three
pieces of advice that depend on routing; :func:`skew_advice` states each next to the
numbers that decide it:

* **EPLB** (Expert Parallelism Load Balancer) is recommended "when expert parallelism is
  large (ep_size typically > 8), the MoE is a significant fraction of runtime, and ranks
  are imbalanced", which "usually corresponds to the decode phase". Checked: phase ==
  decode; ep_size (of the best configuration under the skewed pattern, else under the
  balanced one) > 8; imbalance measured (``summary["imbalance_measured"]``: the median
  slowdown under skew exceeds the median noise band). The MoE share of the step time is
  not something bench_moe measures (it times the MoE module alone), so that check is
  left open (``met=None``) and the verdict says so. Plan: offline when the traffic
  pattern is known and stable, online when the mix drifts (costs named, and the per-GPU
  batch shown: "at small per-GPU batches the statistics and update work may not hide").
* **DWDP** (Distributed Weight Data Parallelism) applies to the prefill phase only, when
  the context batch is large enough to hide the weight prefetch (the guide gives no
  number: shown, not judged), and "cannot run on the same MoE path as EPLB".
* **--use_low_precision_moe_combine**: the guide's thresholds were measured with it; it
  "speeds up NVLINK_ONE_SIDED by about 4% while leaving the fused NONE path untouched".
  When the two patterns were measured with different settings, the NVLINK_ONE_SIDED
  slowdowns carry that ~4 % besides the routing effect; when neither used it, those
  configurations ran ~4 % slower than the guide's setting.

Verdicts: "indicated", "not indicated", "not applicable" or "note".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis.routing_skew import SkewComparison

EPLB_MIN_EP = 8  # "ep_size typically > 8"
LOW_PRECISION_GAIN_PCT = 4.0  # "speeds up NVLINK_ONE_SIDED by about 4%"
TRACE_LABELS = frozenset({"pattern_file"})  # a replayed aggregate trace, not synthetic


@dataclass(frozen=True)
class Check:
    """One condition of a technique: what the guide asks, what the data shows, and
    whether it holds (None: the data cannot tell)."""

    condition: str
    observed: str
    met: bool | None


@dataclass(frozen=True)
class Advice:
    technique: str  # "EPLB" | "DWDP" | "low_precision_combine"
    verdict: str  # "indicated" | "not indicated" | "not applicable" | "note"
    summary: str
    checks: tuple[Check, ...]
    details: tuple[str, ...]


@dataclass(frozen=True)
class WorkloadFacts:
    """What the advice needs about the workload: phase ("decode"/"prefill"), world
    size, tokens per rank per step (local batch; None when unknown) and activated
    tokens per rank."""

    phase: str
    world_size: int
    local_batch: float | None
    activated_tokens_per_rank: float | None


def _pct(value: float) -> str:
    return "—" if not math.isfinite(value) else f"{value:+.1f} %"


def _verdict(checks: Sequence[Check]) -> str:
    return "not indicated" if any(c.met is False for c in checks) else "indicated"


def _deployed_ep(summary: dict[str, Any]) -> int | None:
    for side in ("skewed_best", "balanced_best"):
        best = summary.get(side)
        if best and best.get(C.MOE_EP_SIZE) is not None:
            return int(best[C.MOE_EP_SIZE])
    return None


def _imbalance_check(cmp: SkewComparison) -> Check:
    s = cmp.summary
    observed = (
        f"under {cmp.skewed}, the same configurations are {_pct(s['median_slowdown_pct'])} "
        f"slower (median over {s['n_paired']} measured under both; noise band "
        f"{s['median_noise_band_pct']:.1f} %)"
        if s["n_paired"]
        else f"no configuration was measured under both {cmp.balanced} and {cmp.skewed}"
    )
    return Check("ranks imbalanced (measured)", observed, s["imbalance_measured"])


def eplb_advice(cmp: SkewComparison, facts: WorkloadFacts) -> Advice:
    """EPLB's conditions against the comparison (see the module docstring)."""
    ep = _deployed_ep(cmp.summary)
    checks = (
        Check("decode phase (CUDA graph on)", facts.phase, facts.phase == "decode"),
        Check(
            f"expert parallelism large (ep_size > {EPLB_MIN_EP})",
            "unknown" if ep is None else f"ep_size {ep} (best configuration)",
            None if ep is None else ep > EPLB_MIN_EP,
        ),
        Check(
            "MoE a significant share of the step time",
            "not measured: bench_moe times the MoE module alone; read it from a profile",
            None,
        ),
        _imbalance_check(cmp),
    )
    verdict = _verdict(checks)
    summary = (
        "EPLB is indicated here, if the MoE is a large share of your decode step: it "
        "replicates hot experts so the slowest rank stops setting the step time."
        if verdict == "indicated"
        else "EPLB is not indicated by this data: "
        + "; ".join(c.condition for c in checks if c.met is False)
        + " does not hold."
    )
    batch = "unknown" if facts.local_batch is None else f"{facts.local_batch:g} tokens per rank"
    source = (
        "this pattern replays a recorded trace: an offline plan derived from those "
        "statistics fits if production traffic matches it"
        if cmp.skewed in TRACE_LABELS
        else f"{cmp.skewed} is a synthetic pattern: it shows the sensitivity, not your "
        "traffic; derive a plan from your own routing statistics"
    )
    details = (
        "Offline plan: when the traffic pattern is known and stable; " + source + ".",
        "Online plan: when the traffic mix drifts (hot experts differ across datasets and "
        "requests); costs a full host copy of the experts, background weight-update "
        "threads, GDRCopy and huge pages. At small per-GPU batches the statistics and "
        f"update work may not hide behind the MoE GEMMs (here: {batch}).",
        "EPLB and DWDP cannot share one MoE path: in a disaggregated deployment, EPLB on "
        "the generation servers, DWDP on the context servers.",
    )
    return Advice("EPLB", verdict, summary, checks, details)


def dwdp_advice(cmp: SkewComparison, facts: WorkloadFacts, eplb: Advice) -> Advice:
    """DWDP: prefill only, never on the EPLB path (see the module docstring)."""
    if facts.phase != "prefill":
        return Advice(
            "DWDP",
            "not applicable",
            "DWDP applies to the prefill phase only: decode has too little computation to "
            "hide the weight transfers, so generation keeps the normal EP dispatch.",
            (Check("prefill phase (CUDA graph off)", facts.phase, False),),
            (),
        )
    tokens = facts.activated_tokens_per_rank
    checks = (
        Check("prefill phase (CUDA graph off)", facts.phase, True),
        Check(
            "context batch large enough to hide the weight prefetch",
            "unknown"
            if tokens is None
            else f"{tokens:g} activated tokens per rank (the guide gives no threshold)",
            None,
        ),
        Check(
            "not on the same MoE path as EPLB",
            "EPLB indicated on this path" if eplb.verdict == "indicated" else "EPLB off here",
            eplb.verdict != "indicated",
        ),
        _imbalance_check(cmp),
    )
    verdict = _verdict(checks)
    summary = (
        "DWDP is worth testing here: ranks wait for the slowest under this pattern, and "
        "DWDP replaces the synchronized dispatch/combine with weight prefetches that "
        "overlap computation."
        if verdict == "indicated"
        else "DWDP is not indicated by this data: "
        + "; ".join(c.condition for c in checks if c.met is False)
        + " does not hold."
    )
    details = (
        "Costs: a TTFT regression (lower service rate on the context stage) and extra "
        "prefetch memory (a double-buffered region of about two layers of remote experts).",
        "With DWDP enabled, AUTO picks comm NONE.",
    )
    return Advice("DWDP", verdict, summary, checks, details)


def _flag_state(values: pd.Series) -> str:
    known = values.dropna()
    if known.empty:
        return "unknown"
    on = known.astype(bool)
    return "on" if on.all() else ("off" if not on.any() else "mixed")


def low_precision_note(cmp: SkewComparison) -> Advice:
    """The --use_low_precision_moe_combine note, worded for the flags the two patterns
    were measured with (see the module docstring)."""
    t = cmp.table
    states = {
        side: _flag_state(t[f"{side}_{C.LOW_PRECISION_COMBINE}"]) for side in ("balanced", "skewed")
    }
    n_one_sided = int((t[C.COMM].astype(str) == "NVLINK_ONE_SIDED").sum()) if C.COMM in t else 0
    checks = tuple(
        Check(f"--use_low_precision_moe_combine under {label}", states[side], states[side] == "on")
        for side, label in (("balanced", cmp.balanced), ("skewed", cmp.skewed))
    )
    if states["balanced"] != states["skewed"]:
        summary = (
            f"The two patterns were measured with different settings ({cmp.balanced}: "
            f"{states['balanced']}, {cmp.skewed}: {states['skewed']}): the slowdowns of "
            f"the {n_one_sided} NVLINK_ONE_SIDED configurations include the ~"
            f"{LOW_PRECISION_GAIN_PCT:g} % the flag is worth, not only routing; the fused "
            "NONE path is untouched by it."
        )
    elif states["balanced"] == "off":
        summary = (
            f"Neither pattern used the flag: the {n_one_sided} NVLINK_ONE_SIDED "
            f"configurations ran ~{LOW_PRECISION_GAIN_PCT:g} % slower than with it (the "
            "guide's thresholds assume it on); the fused NONE path is untouched by it."
        )
    else:
        summary = (
            f"Both patterns: flag {states['balanced']}. The guide's thresholds were measured "
            f"with it on; it speeds up NVLINK_ONE_SIDED by about {LOW_PRECISION_GAIN_PCT:g} % "
            "and leaves the fused NONE path untouched."
        )
    return Advice("low_precision_combine", "note", summary, checks, ())


def skew_advice(cmp: SkewComparison, facts: WorkloadFacts) -> tuple[Advice, ...]:
    """EPLB, DWDP and the low-precision note for one comparison, in that order."""
    eplb = eplb_advice(cmp, facts)
    return (eplb, dwdp_advice(cmp, facts, eplb), low_precision_note(cmp))
