"""Cross-validation of bench_moe rankings against deployed serving configs.

Method (the guide's "Cross Validation of Microbenchmark with End-to-end Performance"):

1. :func:`ledger`: each serving workload (``analysis.serving_map``) is matched to the
   bench_moe candidates of the same shape - model, quant, hardware, world size,
   num_tokens, CUDA graph on/off and attention family (DP/TP) - ranked by ``score_ms``
   (successful candidates only, lower is better). The deployed MoE config (backend, EP
   and TP sizes, and the communication method when the recipe forces one) is compared
   with the best candidate: **Match** or **Mismatch** under the ``exact`` rule, with
   ``differs`` naming each field. The row also carries what the other match rules of
   ``analysis.crossval_rules`` need (the best candidate of the deployed layout family,
   the deployed config's own score), so a rule is applied to the stored ledger without
   re-ranking.
2. Each Mismatch is served end to end with both configs (``analysis.crossval_outcomes``).
3. :func:`summary` builds the guide's table per model and hardware.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.crossval_outcomes import (
    DEFAULT_BAND_PCT,
    E2EOutcome,
    change_pct,
    classify_outcome,
    outcomes_frame,
    summary,
    validate_outcome,
)

__all__ = [
    "DEFAULT_BAND_PCT",
    "DEFAULT_TOKEN_TOLERANCE",
    "E2EOutcome",
    "change_pct",
    "classify_outcome",
    "layout_family",
    "ledger",
    "nearest_tokens",
    "outcomes_frame",
    "summary",
    "validate_outcome",
]

# Nearest-num_tokens tolerance (ratio on a log axis). TRT-LLM pads a decode batch up to
# the next captured CUDA-graph size ([1, 2, 4, 8, 16, 24, ...] requests), and bench_moe
# sweeps num_tokens on (mostly) power-of-two grids, so a serving workload always has a
# sweep point within a factor 2 - the width of one padding / power-of-two bucket. Beyond
# that the kernels' regime (latency- vs bandwidth-bound) may change, so no data is
# claimed.
DEFAULT_TOKEN_TOLERANCE = 2.0

_SHAPE_KEY = (c.MODEL, c.QUANT, c.HARDWARE, c.WORLD_SIZE, c.CUDA_GRAPH, c.ATTENTION_DP)


# --------------------------------------------------------------------------- ledger
def nearest_tokens(
    target: int, measured: Iterable[int], tolerance: float = DEFAULT_TOKEN_TOLERANCE
) -> int | None:
    """The measured num_tokens closest to ``target`` on a log axis, within ``tolerance``.

    Exact match wins; ties go to the larger value (padding rounds up, so the larger
    shape is the one the kernel actually runs). None when nothing is within tolerance.
    """
    vals = sorted({int(v) for v in measured if int(v) > 0})
    if target in vals:
        return target
    best: int | None = None
    best_d = math.inf
    for v in vals:
        d = abs(math.log2(v / target))
        if d <= math.log2(tolerance) + 1e-12 and (d < best_d - 1e-12 or abs(d - best_d) <= 1e-12):
            best, best_d = v, d
    return best


def layout_family(ep: Any, tp: Any) -> str | None:
    """The MoE layout family of (moe_ep_size, moe_tp_size): ``EP`` (tp 1: DEP/TEP, also
    world size 1), ``TP`` (ep 1, tp > 1: DTP/TTP) or ``hybrid`` (both > 1: (D|T)TP<k>EP<m>);
    None when a size is unknown. The guide's tree only ever deploys the EP family."""
    if ep is None or tp is None or pd.isna(ep) or pd.isna(tp):
        return None
    if int(tp) == 1:
        return "EP"
    return "TP" if int(ep) == 1 else "hybrid"


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return False
    return str(a).upper() == str(b).upper() if isinstance(a, str) else int(a) == int(b)


def _deployed_equal(w: Mapping[str, Any], cand: Mapping[str, Any]) -> list[str]:
    """Fields in which a candidate differs from the deployed config ("" list = equal)."""
    diffs: list[str] = []
    for col in (c.BACKEND, c.MOE_EP_SIZE, c.MOE_TP_SIZE):
        if not _same(w[col], cand[col]):
            diffs.append(f"{col}: {w[col]}->{cand[col]}")
    # A deployed AUTO says nothing about which comm ran: compare backend + layout only.
    if bool(w[cc.COMM_FORCED]) and not _same(w[c.COMM], cand[c.COMM]):
        diffs.append(f"{c.COMM}: {w[c.COMM]}->{cand[c.COMM]}")
    return diffs


_CANDIDATE_NEEDS = (*_SHAPE_KEY, c.NUM_TOKENS, c.BACKEND, c.MOE_EP_SIZE, c.MOE_TP_SIZE, c.COMM,
                   c.PARALLEL_MODE, c.STATUS, c.SCORE_MS)  # fmt: skip


def _ok_candidates(candidates: pd.DataFrame) -> pd.DataFrame:
    missing = [col for col in _CANDIDATE_NEEDS if col not in candidates.columns]
    if missing and not candidates.empty:
        raise ValueError(f"candidates: missing columns {missing}")
    if missing:  # an empty frame without columns: nothing measured
        candidates = pd.DataFrame(columns=list(_CANDIDATE_NEEDS))
    ok = candidates[(candidates[c.STATUS] == "success") & candidates[c.SCORE_MS].notna()]
    ok = ok[list(_CANDIDATE_NEEDS)].copy()
    ok[c.HARDWARE] = ok[c.HARDWARE].astype(str).str.upper()
    ok[c.BACKEND] = ok[c.BACKEND].astype(str).str.upper()
    ok[c.COMM] = ok[c.COMM].fillna("AUTO").astype(str).str.upper()
    # Deterministic order for equal scores, independent of input row order.
    return ok.sort_values(
        [c.SCORE_MS, c.BACKEND, c.MOE_EP_SIZE, c.MOE_TP_SIZE, c.COMM], kind="mergesort"
    )


class _Shapes:
    """Successful candidates indexed by shape key, then num_tokens (records in score
    order), built once per ledger so a workload costs dictionary look-ups only."""

    def __init__(self, ok: pd.DataFrame) -> None:
        self.ok = ok
        self.by_key: dict[tuple[Any, ...], dict[int, list[dict[str, Any]]]] = {}
        for rec in ok.to_dict("records"):
            key = tuple(_key_value(col, rec[col]) for col in _SHAPE_KEY)
            self.by_key.setdefault(key, {}).setdefault(int(rec[c.NUM_TOKENS]), []).append(rec)
        self._why: dict[tuple[Any, ...], str] = {}

    def why_missing(self, key: tuple[Any, ...]) -> str:
        """The first shape-key field (in key order) with no successful candidate."""
        if key not in self._why:
            self._why[key] = self._first_missing(key)
        return self._why[key]

    def _first_missing(self, key: tuple[Any, ...]) -> str:
        keys = list(self.by_key)
        for depth, col in enumerate(_SHAPE_KEY):
            keys = [k for k in keys if k[depth] == key[depth]]
            if not keys:
                return (
                    f"no successful candidates with {col}={key[depth]} "
                    "(after matching earlier keys)"
                )
        return "no successful candidates"


def _key_value(col: str, v: Any) -> Any:
    if col == c.HARDWARE:
        return str(v).upper()
    if col in (c.CUDA_GRAPH, c.ATTENTION_DP):
        return bool(v)
    if col == c.WORLD_SIZE:
        return int(v)
    return v


_LEDGER_DTYPES: dict[str, str] = {
    **dict.fromkeys(
        (c.WORLD_SIZE, c.NUM_TOKENS, c.MOE_EP_SIZE, c.MOE_TP_SIZE, cc.CONC, cc.N_CANDIDATES,
         cc.MEASURED_NUM_TOKENS, cc.BEST_MOE_EP_SIZE, cc.BEST_MOE_TP_SIZE, cc.DEPLOYED_RANK,
         cc.LAYOUT_BEST_MOE_EP_SIZE, cc.LAYOUT_BEST_MOE_TP_SIZE),
        "Int64",
    ),
    **dict.fromkeys(
        (c.CUDA_GRAPH, c.ATTENTION_DP, cc.COMM_FORCED, cc.NEAREST_TOKENS_USED,
         c.LOW_PRECISION_COMBINE),
        "boolean",
    ),
    **dict.fromkeys(
        (cc.BEST_SCORE_MS, cc.DEPLOYED_SCORE_MS, cc.DEPLOYED_GAP_PCT, cc.LAYOUT_BEST_SCORE_MS),
        "Float64",
    ),
}  # fmt: skip


def ledger(
    workloads: pd.DataFrame,
    candidates: pd.DataFrame,
    token_tolerance: float = DEFAULT_TOKEN_TOLERANCE,
) -> pd.DataFrame:
    """One row per workload (``crossval_columns.LEDGER_COLUMNS``), in workload order.

    ``candidates`` is a candidate frame (``analysis.columns``). Status is Match /
    Mismatch under the ``exact`` rule, "no data" (no successful candidate of that shape;
    ``reason`` says which key failed) or "not mappable" (the workload's
    ``unmapped_reason``). When the exact num_tokens was not measured, the nearest within
    ``token_tolerance`` is used and ``nearest_tokens_used`` is set. Equal best scores: a
    candidate equal to the deployed config wins the tie (a tie is no evidence against
    the deployment). ``layout_best_*`` is the best candidate whose layout family
    (:func:`layout_family`) is the deployed one, with the same tie rule.
    """
    shapes = _Shapes(_ok_candidates(candidates))
    rows = [_ledger_row(w, shapes, token_tolerance) for w in workloads.to_dict("records")]
    out = pd.DataFrame(rows, columns=list(cc.LEDGER_COLUMNS))
    return out.astype(_LEDGER_DTYPES)


def _ledger_row(w: Mapping[str, Any], shapes: _Shapes, tolerance: float) -> dict[str, Any]:
    row: dict[str, Any] = {col: _na(w.get(col)) for col in cc.LEDGER_COLUMNS}
    row[cc.N_CANDIDATES] = 0
    if not bool(_na(w.get(cc.MAPPABLE))):
        row[cc.STATUS] = cc.NOT_MAPPABLE
        row[cc.REASON] = _na(w.get(cc.UNMAPPED_REASON)) or "not mappable"
        return row
    key = tuple(_key_value(col, w[col]) for col in _SHAPE_KEY)
    group = shapes.by_key.get(key)
    if group is None:
        row[cc.STATUS] = cc.NO_DATA
        row[cc.REASON] = shapes.why_missing(key)
        return row
    target = int(w[c.NUM_TOKENS])
    measured = nearest_tokens(target, group, tolerance)
    if measured is None:
        row[cc.STATUS] = cc.NO_DATA
        row[cc.REASON] = (
            f"num_tokens {target} not measured and none within x{tolerance:g} "
            f"(measured: {sorted(group)})"
        )
        return row
    cands = group[measured]
    row[cc.MEASURED_NUM_TOKENS] = measured
    row[cc.NEAREST_TOKENS_USED] = measured != target
    row[cc.N_CANDIDATES] = len(cands)
    best = _best(w, cands)
    diffs = _deployed_equal(w, best)
    row[cc.STATUS] = cc.MISMATCH if diffs else cc.MATCH
    row[cc.DIFFERS] = "; ".join(diffs) or None
    row[cc.BEST_BACKEND] = best[c.BACKEND]
    row[cc.BEST_MOE_EP_SIZE] = best[c.MOE_EP_SIZE]
    row[cc.BEST_MOE_TP_SIZE] = best[c.MOE_TP_SIZE]
    row[cc.BEST_COMM] = best[c.COMM]
    row[cc.BEST_PARALLEL_MODE] = best.get(c.PARALLEL_MODE)
    row[cc.BEST_SCORE_MS] = float(best[c.SCORE_MS])
    deployed = [x for x in cands if not _deployed_equal(w, x)]
    if deployed:
        dep_score = float(deployed[0][c.SCORE_MS])
        row[cc.DEPLOYED_SCORE_MS] = dep_score
        row[cc.DEPLOYED_RANK] = 1 + sum(1 for x in cands if float(x[c.SCORE_MS]) < dep_score)
        row[cc.DEPLOYED_GAP_PCT] = (dep_score - row[cc.BEST_SCORE_MS]) / row[cc.BEST_SCORE_MS] * 100
        row[cc.FASTER_THAN_DEPLOYED] = " ".join(
            str(x[c.BACKEND]) for x in cands if float(x[c.SCORE_MS]) < dep_score
        )
    family = layout_family(w[c.MOE_EP_SIZE], w[c.MOE_TP_SIZE])
    fam = [x for x in cands if layout_family(x[c.MOE_EP_SIZE], x[c.MOE_TP_SIZE]) == family]
    if fam:
        lbest = _best(w, fam)
        row[cc.LAYOUT_BEST_BACKEND] = lbest[c.BACKEND]
        row[cc.LAYOUT_BEST_MOE_EP_SIZE] = lbest[c.MOE_EP_SIZE]
        row[cc.LAYOUT_BEST_MOE_TP_SIZE] = lbest[c.MOE_TP_SIZE]
        row[cc.LAYOUT_BEST_COMM] = lbest[c.COMM]
        row[cc.LAYOUT_BEST_SCORE_MS] = float(lbest[c.SCORE_MS])
        row[cc.LAYOUT_DIFFERS] = "; ".join(_deployed_equal(w, lbest)) or None
    return row


def _best(w: Mapping[str, Any], cands: list[dict[str, Any]]) -> dict[str, Any]:
    """The first (lowest-score) candidate, or the deployed config when it ties it."""
    top = float(cands[0][c.SCORE_MS])
    for x in cands:
        if float(x[c.SCORE_MS]) != top:
            break
        if not _deployed_equal(w, x):
            return x
    return cands[0]


def _na(v: Any) -> Any:
    if v is None:
        return None
    try:
        return None if pd.isna(v) else v
    except (TypeError, ValueError):
        return v
