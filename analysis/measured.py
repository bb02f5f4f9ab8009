"""The data-driven recommendation: the measured best candidate for the stored workload
nearest to a requested deployment, turned into a ``Recommendation`` so it exports the
same way as the tree's pick.

Nearest workload: same attention family (DP/TP) and CUDA-graph setting (phase), then
the measured ``num_tokens`` closest to the requested one on a log2 axis (token counts
are swept in powers of two; equal log distance prefers the larger count, whose MoE is
at least as loaded). ``exact`` says whether the requested count itself was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import rankable_mask
from analysis.tables import plain_value
from analysis.tree import Deployment, PathStep, Recommendation, recommend


@dataclass(frozen=True)
class MeasuredPick:
    """The best measured candidate near a deployment."""

    recommendation: Recommendation
    measured_num_tokens: int
    exact: bool
    score_ms: float
    runner_up_score_ms: float | None
    margin_pct: float | None
    n_candidates: int
    run_ids: tuple[int, ...]
    trtllm_versions: tuple[str, ...]
    candidate: dict[str, object]


def _attention_dp(df: pd.DataFrame) -> np.ndarray:
    attn = df[C.ATTN].astype("string").fillna("?").to_numpy()
    return np.asarray(attn == "D")


def nearest_measured_best(df: pd.DataFrame, dep: Deployment) -> MeasuredPick | None:
    """Best rankable candidate of ``df`` (already scoped to the model, hardware, quant and
    world size) for the workload nearest ``dep``; None when nothing comparable exists."""
    if df.empty:
        return None
    mask = rankable_mask(df)
    mask &= _attention_dp(df) == dep.attention_dp
    mask &= df[C.CUDA_GRAPH].astype("boolean").fillna(False).to_numpy() == dep.cuda_graph
    sub = df.loc[mask]
    if sub.empty:
        return None
    tokens = pd.to_numeric(sub[C.NUM_TOKENS]).to_numpy(dtype=float)
    target = math.log2(max(dep.num_tokens, 1))
    distance = np.abs(np.log2(np.maximum(tokens, 1)) - target)
    best_d = distance.min()
    candidates_tokens = tokens[np.isclose(distance, best_d)]
    measured = int(candidates_tokens.max())
    group = sub.loc[tokens == measured].sort_values(
        [C.SCORE_MS, C.BACKEND, C.COMM, C.PARALLEL_MODE, C.RUN_ID, C.CANDIDATE_INDEX],
        kind="mergesort",
    )
    top = group.iloc[0]
    runner = float(group.iloc[1][C.SCORE_MS]) if len(group) > 1 else None
    score = float(top[C.SCORE_MS])
    margin = (runner - score) / score * 100.0 if runner is not None else None
    exact = measured == dep.num_tokens
    rec = recommendation_from_candidate(dep, top.to_dict(), measured, exact)
    versions = sorted({str(v) for v in group[C.TRTLLM_VERSION].dropna()})
    return MeasuredPick(
        recommendation=rec,
        measured_num_tokens=measured,
        exact=exact,
        score_ms=score,
        runner_up_score_ms=runner,
        margin_pct=margin,
        n_candidates=len(group),
        run_ids=tuple(sorted({int(r) for r in group[C.RUN_ID]})),
        trtllm_versions=tuple(versions),
        candidate={k: plain_value(v) for k, v in top.to_dict().items()},
    )


def recommendation_from_candidate(
    dep: Deployment, row: dict[str, object], measured_tokens: int, exact: bool
) -> Recommendation:
    """A Recommendation that reproduces a measured candidate: its backend, layout and
    comm. The comm is forced only when the candidate forced it (requested a specific
    method); an AUTO or fused (NONE) candidate leaves TRTLLM_FORCE_COMM_METHOD unset."""
    tree = recommend(dep)  # for the derived axes and coverage flag
    requested = str(row.get(C.COMM_REQUESTED) or "AUTO").upper()
    comm = str(row.get(C.COMM) or "AUTO")
    forced = requested not in ("AUTO", "NONE") and comm not in ("AUTO", "NONE")
    step = PathStep(
        step="DATA",
        question=(
            f"fastest measured candidate at num_tokens={measured_tokens} "
            f"({'as requested' if exact else f'nearest to {dep.num_tokens}'})"
        ),
        answer=(
            f"{row.get(C.BACKEND)} / {comm} / {row.get(C.PARALLEL_MODE)} at "
            f"{float(row[C.SCORE_MS]):.4f} ms"  # type: ignore[arg-type]
        ),
        threshold_name=None,
        threshold_value=None,
        observed=float(measured_tokens),
    )
    notes = (
        () if exact else (f"num_tokens {dep.num_tokens} was not measured; used {measured_tokens}",)
    )
    return Recommendation(
        deployment=dep,
        parallel_mode=str(row.get(C.PARALLEL_MODE)),
        moe_ep_size=int(row.get(C.MOE_EP_SIZE) or dep.world_size),  # type: ignore[call-overload]
        moe_tp_size=int(row.get(C.MOE_TP_SIZE) or 1),  # type: ignore[call-overload]
        backend=str(row.get(C.BACKEND)),
        comm=comm if forced else "AUTO",
        force_comm=forced,
        expected_comm=comm,
        activated_tokens_per_rank=tree.activated_tokens_per_rank,
        dispatch_kb=tree.dispatch_kb,
        path=(step,),
        notes=notes,
        in_guide_coverage=tree.in_guide_coverage,
    )
