"""Which stored measurements feed the Te fit, and which fits are physically possible.

**The rule** (:class:`FitRule`, defaults chosen to match what one expert node of a
disaggregated plan does: it receives tokens from many attention nodes, runs its experts'
GEMMs and sends the results back):

* **phase**: decode, i.e. CUDA-graph rows (the planner plans decode); balanced routing.
* **attention mode**: attention **DP**. Each rank's experts then receive tokens
  dispatched from every rank, as an expert node receives them over M2N (the estimated
  dispatch/combine is subtracted: Tc is modelled on its own). Under attention TP every
  rank holds all tokens, adds a TP all-reduce and its normalisation differs (issue 27:
  a TP-group fit had a 9x steeper slope and gave 265 GPUs where the DP fit gave 24).
* **MoE TP size 1**: the planner adds the cost of ``tpe > 1`` itself (``tp_cost``); a
  TP-sharded measurement would count it twice.
* **quant**: the model's expert quant in the catalogue (``ModelSpec.expert_quant``, the
  format its expert bytes assume); ``fit.quant`` overrides.
* **EP size and backend**: the EP group with the most token counts (ties: the faster
  median), the measured best TensorRT-LLM backend in it (``te_fit``).
* **token range**: tokens per expert ``be >= MIN_BE`` (4). Below that a rank's experts
  are not all busy (a share ``exp(-be)`` of them gets no token), so the per-expert time
  reads too low and drags the intercept under the weight-read floor. No upper cut.

**Extrapolation**: a plan may use ``be`` up to :data:`EXTRAPOLATION_FACTOR` (2x) beyond
the fitted range (``x_min/2 .. 2*x_max``); inside that but outside the range it is
marked ``extrapolated``; beyond it the search refuses the batch.

**Plausibility** (:func:`implausible`): a fit is refused when its slope implies more
expert FLOPs per second than :data:`FLOPS_CEILING` x the GPU's dense BF16 peak (the
fastest tensor-core format, FP4 on Blackwell Ultra, is about 6.7x BF16), or its
intercept implies reading one expert's weights faster than :data:`BANDWIDTH_CEILING` x
the GPU's peak memory bandwidth (10 % for measurement noise and byte-count estimates).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from analysis.planner.catalog import GPUSpec, ModelSpec

MIN_BE = 4.0  # tokens per expert: below, exp(-be) > 2 % of a rank's experts idle
EXTRAPOLATION_FACTOR = 2.0
FLOPS_CEILING = 8.0  # x dense BF16 TFLOPS
BANDWIDTH_CEILING = 1.1  # x peak memory bandwidth


@dataclass(frozen=True)
class FitRule:
    """The stored rows one Te fit reads (module docstring). ``None`` = any (the group
    with the most token counts decides)."""

    quant: str | None
    attention_dp: bool | None = True
    moe_tp_size: int | None = 1
    ep_size: int | None = None
    backend: str | None = None
    be_min: float = MIN_BE
    be_max: float | None = None
    phase: str = "decode"  # CUDA-graph rows
    routing: str = "balanced"
    extrapolation_factor: float = EXTRAPOLATION_FACTOR

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> str:
        """One sentence naming every choice."""
        adp = {True: "attention DP", False: "attention TP", None: "any attention mode"}
        parts = [
            f"{self.phase} (CUDA graph) rows",
            f"{self.routing} routing",
            adp[self.attention_dp],
            f"MoE TP {self.moe_tp_size}" if self.moe_tp_size else "any MoE TP",
            f"quant {self.quant}" if self.quant else "the most-covered quant",
            f"EP {self.ep_size}" if self.ep_size else "the EP size with most token counts",
            f"backend {self.backend}" if self.backend else "the measured best backend",
            f"tokens per expert {self.be_min:g}–{self.be_max:g}"
            if self.be_max is not None
            else f"tokens per expert >= {self.be_min:g}",
        ]
        return (
            ", ".join(parts)
            + f"; plans may use up to {self.extrapolation_factor:g}x beyond the fitted range"
        )


def rule_for(
    model: ModelSpec,
    *,
    quant: str | None = None,
    attention_dp: bool | None = None,
    ep_size: int | None = None,
    backend: str | None = None,
    be_min: float | None = None,
    be_max: float | None = None,
) -> FitRule:
    """The rule for ``model`` with the request's choices (None: the rule's default)."""
    return FitRule(
        quant=quant or model.expert_quant,
        attention_dp=True if attention_dp is None else attention_dp,
        ep_size=ep_size,
        backend=backend.upper() if backend else None,
        be_min=MIN_BE if be_min is None else be_min,
        be_max=be_max,
    )


def deviations(rule: FitRule) -> list[str]:
    """Where ``rule`` departs from what matches a disaggregated expert node."""
    out = []
    if rule.attention_dp is not True:
        out.append(
            "attention TP rows replicate every token on every rank and add a TP "
            "all-reduce: not how an expert node is fed"
            if rule.attention_dp is False
            else "rows of both attention modes"
        )
    if rule.be_min < MIN_BE:
        out.append(f"points below {MIN_BE:g} tokens per expert (not every expert busy)")
    return out


def implausible(slope_ms: float, intercept_ms: float, model: ModelSpec, gpu: GPUSpec) -> list[str]:
    """Why a per-expert-equivalent Te law ``slope_ms*be + intercept_ms`` on one ``gpu``
    is physically impossible (empty: plausible). Non-positive coefficients, a slope
    implying more than :data:`FLOPS_CEILING` x dense BF16 FLOPs, an intercept implying
    more than :data:`BANDWIDTH_CEILING` x peak bandwidth for one expert's weights."""
    out = []
    if not slope_ms > 0:
        out.append(f"slope k3 = {slope_ms:.3g} ms/token is not positive")
    else:
        tflops = model.expert_flops_per_token_layer / (slope_ms * 1e-3) / 1e12
        ceiling = FLOPS_CEILING * gpu.bf16_tflops
        if not tflops <= ceiling:
            out.append(
                f"slope k3 = {slope_ms:.3g} ms/token implies {_big(tflops)} TFLOPS per GPU, "
                f"over {ceiling:,.0f} ({FLOPS_CEILING:g}x the {gpu.name} dense BF16 peak)"
            )
    if not intercept_ms > 0:
        out.append(f"intercept k4 = {intercept_ms:.3g} ms is not positive")
    else:
        gb_s = model.expert_bytes_per_layer / (intercept_ms * 1e-3) / 1e9
        ceiling = BANDWIDTH_CEILING * gpu.bandwidth_gb_s
        if not gb_s <= ceiling:
            out.append(
                f"intercept k4 = {intercept_ms:.3g} ms implies reading one expert's "
                f"{model.expert_bytes_per_layer / 1e6:.1f} MB of weights at {_big(gb_s)} GB/s, "
                f"over {BANDWIDTH_CEILING:g}x the {gpu.name} peak {gpu.bandwidth_gb_s:,.0f} GB/s"
            )
    return out


def implausible_attention(
    slope_ms: float, intercept_ms: float, model: ModelSpec, gpu: GPUSpec, tpa: int, seq_len: float
) -> list[str]:
    """Why an attention law ``Ta = slope_ms*ba + intercept_ms`` for one node of ``tpa``
    ``gpu`` at ``seq_len`` tokens of KV is impossible (empty: plausible): per token it
    must at least read that token's KV cache, and per layer the attention-side weights,
    at :data:`BANDWIDTH_CEILING` x the node's peak bandwidth."""
    bw = BANDWIDTH_CEILING * gpu.bandwidth_gb_s * 1e9 * tpa  # bytes/s
    kv = seq_len * model.kv_bytes_per_token_layer * model.kv_layers / model.num_layers
    floor_slope = 1e3 * kv / bw
    floor_icpt = 1e3 * model.attention_param_bytes / model.num_layers / bw
    out = []
    if not slope_ms >= floor_slope:
        out.append(
            f"slope k1 = {slope_ms:.3g} ms/sequence is below the KV read of one sequence "
            f"({kv / 1e6:.2f} MB at {BANDWIDTH_CEILING:g}x the peak of {tpa} {gpu.name}: "
            f"{floor_slope:.3g} ms)"
        )
    if not intercept_ms >= floor_icpt:
        out.append(
            f"intercept k2 = {intercept_ms:.3g} ms is below the attention weights' read "
            f"({floor_icpt:.3g} ms per layer on {tpa} {gpu.name})"
        )
    return out


def _big(x: float) -> str:
    return f"{x:,.0f}" if x < 1e9 else f"{x:.3g}"


def be_limits(x_min: float, x_max: float, factor: float) -> tuple[float, float]:
    """Tokens per expert a plan may use with a fit over ``[x_min, x_max]``: a factor
    beyond either end; (0, inf) when the range is unknown (roofline, user fits)."""
    if not (math.isfinite(x_min) and math.isfinite(x_max)) or factor <= 0:
        return 0.0, math.inf
    return x_min / factor, x_max * factor
