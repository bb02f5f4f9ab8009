"""Te (expert FFN time) fitted from stored bench_moe sweeps, the way the paper means Te.

The paper's Te is the expert GEMM time of one micro-batch on one expert node, without
the M2N/N2M transfer (that is Tc). bench_moe's score_ms is the whole MoE module of the
slowest rank, dispatch and combine included, for one backend/comm/parallel layout. So:

Which rows feed it is one stated rule (:mod:`analysis.planner.fit_rule`): decode (CUDA
graph), balanced routing, attention DP, MoE TP 1, the model's expert quant, tokens per
expert >= 4, a TensorRT-LLM MoE backend (:data:`TRTLLM_BACKENDS`; reference/unknown
backends such as VANILLA are not what TensorRT-LLM would run). Then:

1. **One cell** = (quant, attention mode, moe_ep_size, moe_tp_size, num_tokens). The fit
   uses one (quant, attention mode, EP size) **group**: the one asked for, else the group
   with the most cells (ties: the faster median time). Within it, one backend: the one
   asked for, else the **measured best backend family** (fastest in the most cells; ties
   to the name). Per cell the fastest row (comm method, combine precision) is kept.
2. **score_ms -> Te**: under attention DP with EP > 1 a rank dispatches its
   ``num_tokens/ep * K`` token copies and combines them back, ``(ep-1)/ep`` of them off
   the GPU. :func:`dispatch_combine_ms` estimates that over the GPU's intra-node link at
   80 % of its datasheet bandwidth (dispatch at the quant's activation bytes, combine at
   BF16) and it is subtracted, floored at half of score_ms (a row whose estimate exceeds
   that is counted in ``comm_capped``). Attention-TP rows have no dispatch.
3. **Per expert-equivalent**: a rank holds ``E/ep`` experts each sliced ``1/tp``, so one
   GPU's time for one whole expert is ``Te_rank * ep * tp / E`` at ``be = num_tokens*K/E``.
4. **Range**: only points with ``be`` inside the rule's ``[be_min, be_max]``; the fit
   records the range it saw (plans may go 2x beyond it, no further).
5. Ordinary least squares ``t = k3*be + k4``; R², residual spread. A fit with R² below
   :data:`MIN_R2` (0.8) or fewer than ``min_points`` points is **not used** unless
   ``force``; a physically impossible one (non-positive, faster than the GPU's peak
   FLOPs or bandwidth: :func:`~analysis.planner.fit_rule.implausible`) never is. The
   roofline is then returned with the reason.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.planner.catalog import GPUSpec, ModelSpec
from analysis.planner.fit_rule import FitRule, implausible, rule_for
from analysis.planner.perf_model import DEFAULT_EFFICIENCY, Efficiency, Fit, expert_time_roofline

# MoeBackendType of TensorRT-LLM (bench_moe_schema.md) plus the guide's CUTEDSL_FC12.
TRTLLM_BACKENDS: frozenset[str] = frozenset(
    {
        "CUTLASS",
        "TRTLLM",
        "CUTEDSL",
        "CUTEDSL_FC12",
        "DEEPGEMM",
        "DENSEGEMM",
        "MEGAMOE_DEEPGEMM",
        "MEGAMOE_CUTEDSL",
    }
)
MIN_R2 = 0.8  # below this a fitted Te is not used by default
LINK_EFFICIENCY = 0.8  # achieved fraction of the intra-node link for dispatch/combine
POINT_COLUMNS: tuple[str, ...] = (
    "num_tokens",
    "ep",
    "tp",
    "backend",
    "score_ms",
    "comm_ms",
    "be",
    "t_ms",
)


@dataclass(frozen=True)
class TeFit:
    """A Te fit with its provenance: the fit used, the points, and why.

    ``fit`` is what the planner uses (the least-squares fit, or the roofline when the fit
    was refused); ``candidate`` is the least-squares fit even when refused (None when
    there were too few points). ``points`` has :data:`POINT_COLUMNS` plus ``predicted_ms``
    and ``residual_ms`` (of ``candidate``). ``group`` names quant, attention mode, EP size
    and backend; ``warning`` is empty when the fit is used without reservation.
    """

    fit: Fit
    candidate: Fit | None
    points: pd.DataFrame
    group: dict[str, object] = field(default_factory=dict)
    used: bool = False
    warning: str = ""
    comm_capped: int = 0
    rule: FitRule | None = None


def dispatch_combine_ms(
    num_tokens: float, ep: int, model: ModelSpec, link_gb_s: float, dispatch_bytes: float
) -> float:
    """Estimated dispatch + combine time (ms) of one rank under attention DP.

    A rank sends ``num_tokens/ep * K * h`` elements at ``dispatch_bytes`` and receives the
    same at 2 bytes (BF16 combine); ``(ep-1)/ep`` of them cross the intra-node link of
    ``link_gb_s`` GB/s at :data:`LINK_EFFICIENCY`. 0 when ep <= 1.
    """
    if ep <= 1:
        return 0.0
    elems = num_tokens / ep * model.top_k * model.hidden_size * (ep - 1) / ep
    return 1e3 * elems * (dispatch_bytes + 2.0) / (link_gb_s * 1e9 * LINK_EFFICIENCY)


def _base_rows(candidates: pd.DataFrame, model: ModelSpec, hardware: str) -> pd.DataFrame:
    df = candidates
    mask = (
        (df[C.STATUS] == "success")
        & (df[C.NUM_EXPERTS] == model.num_experts)
        & (df[C.TOP_K] == model.top_k)
        & (df[C.HIDDEN_SIZE] == model.hidden_size)
        & (df[C.INTERMEDIATE_SIZE] == model.intermediate_size)
        & (df[C.HARDWARE] == hardware)
    )
    if C.CUDA_GRAPH in df:
        mask &= df[C.CUDA_GRAPH] == True  # noqa: E712 - nullable boolean column
    if C.DISPATCH in df:
        mask &= df[C.DISPATCH] == "balanced"
    if C.BACKEND in df:
        mask &= df[C.BACKEND].astype("string").str.upper().isin(TRTLLM_BACKENDS)
    sub = df.loc[mask.fillna(False).astype(bool)].copy()
    sub["_quant"] = sub[C.QUANT].astype("string") if C.QUANT in sub else "BF16"
    sub["_adp"] = sub[C.ATTENTION_DP].astype("boolean") if C.ATTENTION_DP in sub else True
    sub["_backend"] = sub[C.BACKEND].astype("string").str.upper() if C.BACKEND in sub else "-"
    for src, dst in ((C.MOE_EP_SIZE, "_ep"), (C.MOE_TP_SIZE, "_tp"), (C.NUM_TOKENS, "_n")):
        sub[dst] = pd.to_numeric(sub[src], errors="coerce").astype("float64")
    sub["_score"] = pd.to_numeric(sub[C.SCORE_MS], errors="coerce").astype("float64")
    ok = np.isfinite(sub[["_ep", "_tp", "_n", "_score"]]).all(axis=1) & (sub["_score"] > 0)
    return sub.loc[ok]


def _pick_group(
    sub: pd.DataFrame,
    quant: str | None,
    attention_dp: bool | None,
    ep_size: int | None,
    tp_size: int | None = None,
) -> pd.DataFrame:
    if tp_size is not None:
        sub = sub.loc[sub["_tp"] == tp_size]
    if quant is not None:
        sub = sub.loc[sub["_quant"] == quant]
    if attention_dp is not None:
        sub = sub.loc[sub["_adp"] == attention_dp]
    if ep_size is not None:
        sub = sub.loc[sub["_ep"] == ep_size]
    if sub.empty:
        return sub
    keys = ["_quant", "_adp", "_ep"]
    stats = sub.groupby(keys, dropna=False).agg(
        cells=("_n", lambda s: s.nunique()), median=("_score", "median")
    )
    stats = stats.reset_index().sort_values(["cells", "median"], ascending=[False, True])
    top = stats.iloc[0]
    return sub.loc[
        (sub["_quant"] == top["_quant"]) & (sub["_adp"] == top["_adp"]) & (sub["_ep"] == top["_ep"])
    ]


def _best_backend(sub: pd.DataFrame) -> str:
    cell = ["_n", "_tp"]
    fastest = sub.loc[sub.groupby(cell)["_score"].idxmin(), "_backend"]
    wins = fastest.value_counts()
    return str(sorted(wins.index, key=lambda b: (-wins[b], str(b)))[0])


def expert_points_for_fit(
    candidates: pd.DataFrame,
    model: ModelSpec,
    gpu: GPUSpec,
    *,
    hardware: str | None = None,
    quant: str | None = None,
    attention_dp: bool | None = None,
    ep_size: int | None = None,
    backend: str | None = None,
    be_min: float | None = None,
    be_max: float | None = None,
    tp_size: int | None = None,
) -> tuple[pd.DataFrame, dict[str, object], int]:
    """The (be, t) points of steps 1-4 of the module docstring, the group they come from,
    and how many rows had their dispatch/combine estimate capped. ``None`` filters
    nothing (this is the raw selector; :func:`fit_te` applies the rule's defaults)."""
    sub = _base_rows(candidates, model, hardware or gpu.name)
    sub = _pick_group(sub, quant, attention_dp, ep_size, tp_size)
    group: dict[str, object] = {}
    if sub.empty:
        return pd.DataFrame(columns=list(POINT_COLUMNS)), group, 0
    chosen = backend.upper() if backend else _best_backend(sub)
    sub = sub.loc[sub["_backend"] == chosen]
    if sub.empty:
        return pd.DataFrame(columns=list(POINT_COLUMNS)), group, 0
    sub = sub.loc[sub.groupby(["_n", "_tp"])["_score"].idxmin()]
    q = str(sub["_quant"].iloc[0])
    adp = bool(sub["_adp"].iloc[0])
    group = {
        "quant": q,
        "attention_dp": adp,
        "ep_size": int(sub["_ep"].iloc[0]),
        "moe_tp_size": tp_size,
        "backend": chosen,
    }
    d_bytes = C.BYTES_PER_ELEM.get(q, 2.0)
    comm = [
        dispatch_combine_ms(n, int(ep), model, gpu.intra_node_gb_s, d_bytes) if adp else 0.0
        for n, ep in zip(sub["_n"], sub["_ep"], strict=True)
    ]
    pts = pd.DataFrame(
        {
            "num_tokens": sub["_n"].to_numpy(),
            "ep": sub["_ep"].to_numpy(),
            "tp": sub["_tp"].to_numpy(),
            "backend": chosen,
            "score_ms": sub["_score"].to_numpy(),
            "comm_ms": comm,
        }
    )
    capped = int((pts["comm_ms"] > 0.5 * pts["score_ms"]).sum())
    te_rank = np.maximum(pts["score_ms"] - pts["comm_ms"], 0.5 * pts["score_ms"])
    pts["be"] = pts["num_tokens"] * model.top_k / model.num_experts
    pts["t_ms"] = te_rank * pts["ep"] * pts["tp"] / model.num_experts
    lo = -math.inf if be_min is None else be_min
    hi = math.inf if be_max is None else be_max
    pts = pts.loc[(pts["be"] >= lo) & (pts["be"] <= hi)]
    return pts.sort_values(["be", "tp"]).reset_index(drop=True), group, capped


def fit_te(
    candidates: pd.DataFrame,
    model: ModelSpec,
    gpu: GPUSpec,
    *,
    hardware: str | None = None,
    quant: str | None = None,
    attention_dp: bool | None = None,
    ep_size: int | None = None,
    backend: str | None = None,
    be_min: float | None = None,
    be_max: float | None = None,
    moe_tp_size: int | None = 1,
    min_points: int = 3,
    min_r2: float = MIN_R2,
    force: bool = False,
    efficiency: Efficiency = DEFAULT_EFFICIENCY,
) -> TeFit:
    """Te per expert-equivalent from stored sweeps, with provenance (module docstring).

    The rows follow :func:`~analysis.planner.fit_rule.rule_for` (``None`` arguments take
    the rule's defaults: attention DP, the model's expert quant, be >= 4; ``moe_tp_size``
    1). Refused (roofline used, ``used`` False, ``warning`` says why) when fewer than
    ``min_points`` points or < 2 distinct be, or when the fit is physically impossible
    (non-positive, above the GPU's peak FLOPs or bandwidth); unless ``force``, also when
    R² < ``min_r2``.
    """
    label = hardware or gpu.name
    rule = rule_for(
        model,
        quant=quant,
        attention_dp=attention_dp,
        ep_size=ep_size,
        backend=backend,
        be_min=be_min,
        be_max=be_max,
    )
    rule = dataclasses.replace(rule, moe_tp_size=moe_tp_size)
    pts, group, capped = expert_points_for_fit(
        candidates,
        model,
        gpu,
        hardware=label,
        quant=rule.quant,
        attention_dp=rule.attention_dp,
        ep_size=rule.ep_size,
        backend=rule.backend,
        be_min=rule.be_min,
        be_max=rule.be_max,
        tp_size=rule.moe_tp_size,
    )
    roof = expert_time_roofline(model, gpu, efficiency)
    n = len(pts)
    if n < min_points or pts["be"].nunique() < 2:
        why = f"{n} usable sweep point(s) for {model.name} on {label} (< {min_points})"
        fit = Fit(roof.slope_ms, roof.intercept_ms, "roofline", n_points=n, note=why + "; roofline",
                  overhead_ms=roof.overhead_ms)  # fmt: skip
        return TeFit(fit, None, pts, group, False, why + "; roofline used", capped, rule)
    x = pts["be"].to_numpy(dtype=float)
    y = pts["t_ms"].to_numpy(dtype=float)
    (k3, k4), *_ = np.linalg.lstsq(np.column_stack([x, np.ones_like(x)]), y, rcond=None)
    resid = y - (k3 * x + k4)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    where = ", ".join(f"{k}={v}" for k, v in group.items())
    note = f"least squares on {n} points ({model.name}, {label}, {where})"
    candidate = Fit(
        float(k3),
        float(k4),
        "fit",
        n_points=n,
        r2=r2,
        residual_std_ms=float(np.std(resid)),
        residual_max_ms=float(np.max(np.abs(resid))),
        note=note,
        x_min=float(x.min()),
        x_max=float(x.max()),
    )
    pts = pts.assign(predicted_ms=k3 * x + k4, residual_ms=resid)
    physics = implausible(float(k3), float(k4), model, gpu)
    problems = ([f"R² = {r2:.3f} < {min_r2:g}"] if r2 < min_r2 else []) + physics
    if not problems:
        return TeFit(candidate, candidate, pts, group, True, "", capped, rule)
    why = "; ".join(problems)
    if force and not physics:
        return TeFit(candidate, candidate, pts, group, True, f"forced despite {why}", capped, rule)
    fit = dataclasses.replace(roof, note=f"fit refused ({why}); roofline used", n_points=n)
    return TeFit(fit, candidate, pts, group, False, f"fit not used: {why}", capped, rule)


def fit_expert_time(
    candidates: pd.DataFrame, model: ModelSpec, gpu: GPUSpec, **kwargs: object
) -> Fit:
    """The Fit :func:`fit_te` would use (same keyword arguments)."""
    return fit_te(candidates, model, gpu, **kwargs).fit  # type: ignore[arg-type]
