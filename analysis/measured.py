"""The data-driven recommendation: the measured best candidate for the stored workload
nearest to a requested deployment, turned into a ``Recommendation`` so it exports the
same way as the tree's pick.

Nearest workload (the one rule; the API, the export and the Recommend page all use it):

* same attention family (DP/TP) and CUDA-graph setting (phase) as the deployment, among
  rankable rows (``derived.rankable_mask``) of a frame already scoped to the model,
  hardware, quant and world size;
* then the measured ``num_tokens`` closest to the requested one on a log2 axis (token
  counts are swept in powers of two, so 128 sits as far from 64 as from 256);
* equal log distance goes to the **larger** count. The larger workload loads the MoE at
  least as much as asked, so the pick is never a configuration that only wins at a
  lighter load than the one requested (small-batch winners such as TRTLLM fall behind
  as tokens grow, the guide's own crossovers); and it is the rule the API has always
  answered with. The comparison is exact: ``a`` and ``b`` tie for ``n`` when
  ``a * b == n * n``.

The rows compared are configurations, not raw candidates: repeat runs of the same
workload x configuration x TensorRT-LLM version are collapsed first
(``analysis.identity.configuration_frame``; median over repeats, or the latest run),
so a runner-up is always another configuration. The frame is scoped to one routing
pattern by the caller; should it hold several, the nearest workload keeps
``identity.default_dispatch`` of them (balanced where present).

Inside that workload the order is score_ms ascending, then :data:`PICK_ORDER`'s recipe
columns, run_id and candidate_index (missing values last): the first row is the pick,
the rows after it the runners-up. ``exact`` says whether the requested count itself
was measured.

Communication of a measured pick (:func:`measured_comm`): a MEGAMOE backend runs NONE
(fused; nothing to set). Otherwise the measured (actual) comm is reproduced: when the
run asked for AUTO and recorded what it got, AUTO is left alone (it picked that);
when the run forced a method, or recorded none (NVIDIA's published rows) and the guide's
AUTO flow (``tree.auto_comm``) would pick something else, ``TRTLLM_FORCE_COMM_METHOD``
is set to the measured method -- provided the AUTO flow reads the variable for this
layout (attention DP, dp > 1, MoE TP 1); otherwise AUTO is left and a note says why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import capabilities as cap
from analysis import columns as C
from analysis.derived import rankable_mask
from analysis.identity import (
    N_REPEATS,
    REPEAT_RUN_IDS,
    SCORE_SPREAD,
    SPREAD_SOURCE,
    Repeats,
    configuration_frame,
    default_dispatch,
)
from analysis.tables import plain_value
from analysis.tree import (
    FORCEABLE_COMMS,
    Deployment,
    PathStep,
    Recommendation,
    auto_comm,
    recommend,
)

PICK_ORDER: tuple[str, ...] = (
    C.SCORE_MS,
    C.BACKEND,
    C.COMM,
    C.PARALLEL_MODE,
    C.RUN_ID,
    C.CANDIDATE_INDEX,
)
RANK = "rank"  # 1-based position in the nearest workload (measured_top)


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
    dispatch: str | None = None
    n_repeats: int = 1
    repeat_run_ids: str | None = None
    spread_pct: float | None = None
    spread_source: str = "unknown"


def nearest_num_tokens(measured: Iterable[float], requested: int) -> int | None:
    """The measured token count nearest ``requested`` in log2 distance; equal distance
    goes to the larger count (see module docstring). Values that are missing, not
    finite or below 1 are ignored; ``requested`` below 1 counts as 1. None when
    nothing is left."""
    want = max(int(requested), 1)
    counts = {int(v) for v in measured if v is not None and math.isfinite(v) and v >= 1}
    if not counts:
        return None
    below = max((c for c in counts if c <= want), default=None)
    above = min((c for c in counts if c >= want), default=None)
    if below is None or above is None:
        return above if below is None else below
    # log2(above / want) vs log2(want / below)  <=>  above * below vs want ** 2
    return below if below * above > want * want else above


def _same_workload_family(df: pd.DataFrame, dep: Deployment) -> pd.DataFrame:
    """Rankable rows with the deployment's attention family and CUDA-graph setting."""
    attn = df[C.ATTN].astype("string").fillna("?").to_numpy()
    mask = rankable_mask(df)
    mask &= np.asarray(attn == "D") == dep.attention_dp
    mask &= df[C.CUDA_GRAPH].astype("boolean").fillna(False).to_numpy() == dep.cuda_graph
    return df.loc[mask]


def nearest_workload(
    df: pd.DataFrame, dep: Deployment, repeats: Repeats = "median"
) -> tuple[pd.DataFrame, int | None]:
    """(configurations of the nearest measured workload in pick order, its num_tokens);
    an empty frame and None when nothing comparable was measured. ``df`` is scoped to
    the deployment's model, hardware, quant, world size and routing pattern by the
    caller; repeats are collapsed per ``repeats``."""
    if df.empty:
        return df.iloc[0:0], None
    sub = configuration_frame(_same_workload_family(df, dep), repeats)
    tokens = pd.to_numeric(sub[C.NUM_TOKENS]).to_numpy(dtype=float)
    measured = nearest_num_tokens(np.unique(tokens[np.isfinite(tokens)]), dep.num_tokens)
    if measured is None:
        return sub.iloc[0:0], None
    group = sub.loc[tokens == measured]
    if C.DISPATCH in group and group[C.DISPATCH].nunique(dropna=True) > 1:
        group = group[group[C.DISPATCH] == default_dispatch(group[C.DISPATCH])]
    order = [c for c in PICK_ORDER if c in group]
    return group.sort_values(order, kind="mergesort", na_position="last"), measured


def measured_top(
    df: pd.DataFrame, dep: Deployment, n: int = 3, repeats: Repeats = "median"
) -> pd.DataFrame:
    """The ``n`` first configurations of :func:`nearest_workload` with ``rank`` (1 = the
    pick); index reset. Empty when nothing comparable was measured."""
    group, _ = nearest_workload(df, dep, repeats)
    top = group.head(n).reset_index(drop=True)
    return top.assign(**{RANK: np.arange(1, len(top) + 1)})


def nearest_measured_best(
    df: pd.DataFrame, dep: Deployment, repeats: Repeats = "median"
) -> MeasuredPick | None:
    """Best configuration of ``df`` (already scoped to the model, hardware, quant, world
    size and routing pattern) for the workload nearest ``dep``; None when nothing
    comparable exists. ``score_ms`` is the configuration's aggregate (median over
    repeats unless ``repeats="latest"``); ``margin_pct`` is (runner-up - best) / best *
    100 against the next *configuration*, None without one. ``run_ids`` are the runs
    behind the workload's configurations."""
    group, measured = nearest_workload(df, dep, repeats)
    if measured is None or group.empty:
        return None
    top = group.iloc[0]
    runner = float(group.iloc[1][C.SCORE_MS]) if len(group) > 1 else None
    score = float(top[C.SCORE_MS])
    margin = (runner - score) / score * 100.0 if runner is not None else None
    exact = measured == dep.num_tokens
    rec = recommendation_from_candidate(dep, top.to_dict(), measured, exact)
    versions = sorted({str(v) for v in group[C.TRTLLM_VERSION].dropna()})
    ids = group[REPEAT_RUN_IDS] if REPEAT_RUN_IDS in group else group[C.RUN_ID].astype(str)
    runs = sorted({int(r) for text in ids.astype(str) for r in text.split(",") if r})
    spread = top.get(SCORE_SPREAD)
    return MeasuredPick(
        recommendation=rec,
        measured_num_tokens=measured,
        exact=exact,
        score_ms=score,
        runner_up_score_ms=runner,
        margin_pct=margin,
        n_candidates=len(group),
        run_ids=tuple(runs),
        trtllm_versions=tuple(versions),
        candidate={k: plain_value(v) for k, v in top.to_dict().items()},
        dispatch=_text(top.get(C.DISPATCH)),
        n_repeats=_int(top.get(N_REPEATS), 1),
        repeat_run_ids=_text(top.get(REPEAT_RUN_IDS)),
        spread_pct=None if plain_value(spread) is None else 100.0 * float(spread),
        spread_source=_text(top.get(SPREAD_SOURCE)) or "unknown",
    )


def _text(value: object) -> str | None:
    """A text cell as str; None for every missing marker (None, NaN, NA -- categorical
    frames hand out NaN for a missing value)."""
    if value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value))):
        return None
    return str(value)


@dataclass(frozen=True)
class MeasuredComm:
    """How to reproduce a measured candidate's comm: ``comm`` (canonical, "AUTO" when
    the variable stays unset), ``force`` (set TRTLLM_FORCE_COMM_METHOD=comm),
    ``expected`` (what runs: the measured method, or AUTO's predicted pick when the
    measurement did not record one) and ``note`` (why, in words)."""

    comm: str
    force: bool
    expected: str
    note: str


def measured_comm(
    dep: Deployment, row: Mapping[str, object], ep: int | None = None, tp: int | None = None
) -> MeasuredComm:
    """The comm rule for a measured row (module docstring). ``ep`` / ``tp``: the row's
    MoE layout (default: its moe_ep_size / moe_tp_size, else pure EP)."""
    backend = (_text(row.get(C.BACKEND)) or "").upper()
    ep = _int(row.get(C.MOE_EP_SIZE), dep.world_size) if ep is None else ep
    tp = _int(row.get(C.MOE_TP_SIZE), 1) if tp is None else tp
    if backend in cap.FUSED_COMM_BACKENDS:
        return MeasuredComm("AUTO", False, "NONE", f"{backend} fuses the exchange: comm NONE")
    measured = (_text(row.get(C.COMM)) or "AUTO").upper()
    requested = (_text(row.get(C.COMM_REQUESTED)) or "").upper()
    predicted, why, forceable = auto_comm(dep, backend, max(ep, 1), max(tp, 1))
    if measured == "AUTO":
        return MeasuredComm(
            "AUTO", False, predicted, f"the run did not record the comm AUTO chose ({why})"
        )
    if requested == "AUTO":
        return MeasuredComm("AUTO", False, measured, f"the run left AUTO, which chose {measured}")
    if requested == "" and measured == predicted:
        return MeasuredComm("AUTO", False, measured, f"AUTO picks {measured} here ({why})")
    if not forceable:
        return MeasuredComm(
            "AUTO",
            False,
            measured,
            f"measured {measured}; AUTO decides before reading TRTLLM_FORCE_COMM_METHOD "
            f"here ({why} -> {predicted}), so nothing is forced",
        )
    if measured not in FORCEABLE_COMMS:
        return MeasuredComm(
            "AUTO",
            False,
            measured,
            f"measured {measured}, which TRTLLM_FORCE_COMM_METHOD cannot select; "
            f"AUTO would pick {predicted} ({why})",
        )
    if requested == "":
        note = f"measured {measured} where AUTO would pick {predicted} ({why}): forced"
    else:
        note = f"the run forced {measured}" + (
            "" if predicted == measured else f"; AUTO would pick {predicted}"
        )
    return MeasuredComm(measured, True, measured, note)


def recommendation_from_candidate(
    dep: Deployment, row: Mapping[str, object], measured_tokens: int, exact: bool
) -> Recommendation:
    """A Recommendation that reproduces a measured candidate: its backend, layout and
    comm (forced only when the candidate forced it), with the deployment's derived
    axes and coverage flag from the tree and one DATA step naming the measurement."""
    tree = recommend(dep)  # for the derived axes and coverage flag
    mc = measured_comm(dep, row)
    comm = mc.expected
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
    ) + (f"comm: {mc.note}",)
    return Recommendation(
        deployment=dep,
        parallel_mode=_text(row.get(C.PARALLEL_MODE)) or "unknown",
        moe_ep_size=_int(row.get(C.MOE_EP_SIZE), dep.world_size),
        moe_tp_size=_int(row.get(C.MOE_TP_SIZE), 1),
        backend=_text(row.get(C.BACKEND)) or "unknown",
        comm=mc.comm,
        force_comm=mc.force,
        expected_comm=mc.expected,
        activated_tokens_per_rank=tree.activated_tokens_per_rank,
        dispatch_kb=tree.dispatch_kb,
        path=(step,),
        notes=notes,
        in_guide_coverage=tree.in_guide_coverage,
        low_precision_combine=_flag(row.get(C.LOW_PRECISION_COMBINE)),
    )


def _flag(value: object) -> bool | None:
    """A nullable boolean cell as bool / None (NaN, NA and None are None)."""
    if value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value))):
        return None
    return bool(value)


def _int(value: object, default: int = 0) -> int:
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    return int(f) if math.isfinite(f) else default


def candidate_recommendation(row: Mapping[str, object]) -> Recommendation:
    """A ``Recommendation`` describing one measured candidate ``row`` (a candidate-frame
    row with the derived columns) as it was run: its own deployment, backend, comm and
    layout, an empty decision path and a note that it was measured, not recommended.
    Missing sizes fall back to 0 (shape), 1 (world size, EP, TP, num_tokens)."""
    dep = Deployment(
        hardware=str(row[C.HARDWARE]),
        num_experts=_int(row[C.NUM_EXPERTS]),
        top_k=_int(row[C.TOP_K]),
        hidden_size=_int(row[C.HIDDEN_SIZE]),
        quant=str(row[C.QUANT]),
        world_size=_int(row[C.WORLD_SIZE], 1),
        attention_dp=bool(row[C.ATTENTION_DP]),
        cuda_graph=bool(row[C.CUDA_GRAPH]),
        num_tokens=_int(row[C.NUM_TOKENS], 1),
        model=str(row[C.MODEL]),
    )
    mc = measured_comm(dep, row)
    # coverage: the same answer as the tree's (analysis.capabilities.outside_guide_sweeps)
    outside = cap.outside_guide_sweeps(dep.hardware, dep.world_size)
    return Recommendation(
        deployment=dep,
        in_guide_coverage=outside is None,
        parallel_mode=_text(row.get(C.PARALLEL_MODE)) or "unknown",
        moe_ep_size=_int(row.get(C.MOE_EP_SIZE), 1),
        moe_tp_size=_int(row.get(C.MOE_TP_SIZE), 1),
        backend=_text(row.get(C.BACKEND)) or "unknown",
        comm=mc.comm,
        force_comm=mc.force,
        expected_comm=mc.expected,
        low_precision_combine=_flag(row.get(C.LOW_PRECISION_COMBINE)),
        activated_tokens_per_rank=float(row[C.ACTIVATED_TOKENS_PER_RANK]),  # type: ignore[arg-type]
        dispatch_kb=float(row[C.DISPATCH_KB]),  # type: ignore[arg-type]
        path=(),
        notes=(
            f"measured candidate: run {row[C.RUN_ID]}, candidate "
            f"{row[C.CANDIDATE_INDEX]}, score {float(row[C.SCORE_MS]):.4g} ms",  # type: ignore[arg-type]
            f"comm: {mc.note}",
        )
        + ((outside,) if outside else ()),
    )
