"""Cross-validation of bench_moe rankings against deployed serving configs.

Method (the guide's "Cross Validation of Microbenchmark with End-to-end Performance"):

1. :func:`ledger`: each serving workload (``analysis.serving_map``) is matched to the
   bench_moe candidates of the same shape - model, quant, hardware, world size,
   num_tokens, CUDA graph on/off and attention family (DP/TP) - ranked by ``score_ms``
   (successful candidates only, lower is better). The deployed MoE config (backend, EP
   and TP sizes, and the communication method when the recipe forces one) is compared
   with the best candidate: **Match** or **Mismatch**, with ``differs`` naming each field.
2. Each Mismatch is served end to end with both configs; :func:`classify_outcome`
   labels the tps_per_user change Improvement (> +band), Flat (within ±band, bounds
   included) or Regression (< -band), and "Regression after perfect routing" when the
   perfect-routing run of the candidate is still below -band.
3. :func:`summary` builds the guide's table per model and hardware.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

from analysis import columns as c
from analysis import crossval_columns as cc

DEFAULT_BAND_PCT = 3.0
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
    ok = candidates[(candidates[c.STATUS] == "success") & candidates[c.SCORE_MS].notna()].copy()
    ok[c.HARDWARE] = ok[c.HARDWARE].astype(str).str.upper()
    ok[c.BACKEND] = ok[c.BACKEND].astype(str).str.upper()
    ok[c.COMM] = ok[c.COMM].fillna("AUTO").astype(str).str.upper()
    # Deterministic order for equal scores, independent of input row order.
    return ok.sort_values(
        [c.SCORE_MS, c.BACKEND, c.MOE_EP_SIZE, c.MOE_TP_SIZE, c.COMM], kind="mergesort"
    )


def ledger(
    workloads: pd.DataFrame,
    candidates: pd.DataFrame,
    token_tolerance: float = DEFAULT_TOKEN_TOLERANCE,
) -> pd.DataFrame:
    """One row per workload (``crossval_columns.LEDGER_COLUMNS``), in workload order.

    ``candidates`` is a candidate frame (``analysis.columns``). Status is Match /
    Mismatch / "no data" (no successful candidate of that shape; ``reason`` says which
    key failed) / "not mappable" (the workload's ``unmapped_reason``). When the exact
    num_tokens was not measured, the nearest within ``token_tolerance`` is used and
    ``nearest_tokens_used`` is set. Equal best scores: a candidate equal to the deployed
    config wins the tie (a tie is no evidence against the deployment).
    """
    ok = _ok_candidates(candidates)
    groups = {key: g for key, g in ok.groupby(list(_SHAPE_KEY), sort=False, dropna=False)}
    rows = []
    for w in workloads.to_dict("records"):
        rows.append(_ledger_row(w, ok, groups, token_tolerance))
    out = pd.DataFrame(rows, columns=list(cc.LEDGER_COLUMNS))
    return out.astype(
        {
            c.WORLD_SIZE: "Int64",
            c.NUM_TOKENS: "Int64",
            c.MOE_EP_SIZE: "Int64",
            c.MOE_TP_SIZE: "Int64",
            cc.CONC: "Int64",
            cc.N_CANDIDATES: "Int64",
            cc.MEASURED_NUM_TOKENS: "Int64",
            cc.BEST_MOE_EP_SIZE: "Int64",
            cc.BEST_MOE_TP_SIZE: "Int64",
            cc.DEPLOYED_RANK: "Int64",
            c.CUDA_GRAPH: "boolean",
            c.ATTENTION_DP: "boolean",
            cc.COMM_FORCED: "boolean",
            cc.NEAREST_TOKENS_USED: "boolean",
            cc.BEST_SCORE_MS: "Float64",
            cc.DEPLOYED_SCORE_MS: "Float64",
            cc.DEPLOYED_GAP_PCT: "Float64",
        }  # fmt: skip
    )


def _ledger_row(
    w: Mapping[str, Any],
    ok: pd.DataFrame,
    groups: Mapping[tuple[Any, ...], pd.DataFrame],
    tolerance: float,
) -> dict[str, Any]:
    row: dict[str, Any] = {col: _na(w.get(col)) for col in cc.LEDGER_COLUMNS}
    row[cc.N_CANDIDATES] = 0
    if not bool(_na(w.get(cc.MAPPABLE))):
        row[cc.STATUS] = cc.NOT_MAPPABLE
        row[cc.REASON] = _na(w.get(cc.UNMAPPED_REASON)) or "not mappable"
        return row
    key = (
        w[c.MODEL], w[c.QUANT], str(w[c.HARDWARE]).upper(), int(w[c.WORLD_SIZE]),
        bool(w[c.CUDA_GRAPH]), bool(w[c.ATTENTION_DP]),
    )  # fmt: skip
    group = groups.get(key)
    if group is None:
        row[cc.STATUS] = cc.NO_DATA
        row[cc.REASON] = _why_no_group(w, ok)
        return row
    target = int(w[c.NUM_TOKENS])
    measured = nearest_tokens(target, group[c.NUM_TOKENS].astype(int), tolerance)
    if measured is None:
        row[cc.STATUS] = cc.NO_DATA
        vals = sorted(set(group[c.NUM_TOKENS].astype(int)))
        row[cc.REASON] = (
            f"num_tokens {target} not measured and none within x{tolerance:g} (measured: {vals})"
        )
        return row
    cands = group[group[c.NUM_TOKENS] == measured].to_dict("records")
    row[cc.MEASURED_NUM_TOKENS] = measured
    row[cc.NEAREST_TOKENS_USED] = measured != target
    row[cc.N_CANDIDATES] = len(cands)
    best_score = float(cands[0][c.SCORE_MS])
    deployed_idx = [i for i, cand in enumerate(cands) if not _deployed_equal(w, cand)]
    best = cands[0]
    if deployed_idx and float(cands[deployed_idx[0]][c.SCORE_MS]) == best_score:
        best = cands[deployed_idx[0]]
    diffs = _deployed_equal(w, best)
    row[cc.STATUS] = cc.MISMATCH if diffs else cc.MATCH
    row[cc.DIFFERS] = "; ".join(diffs) or None
    row[cc.BEST_BACKEND] = best[c.BACKEND]
    row[cc.BEST_MOE_EP_SIZE] = best[c.MOE_EP_SIZE]
    row[cc.BEST_MOE_TP_SIZE] = best[c.MOE_TP_SIZE]
    row[cc.BEST_COMM] = best[c.COMM]
    row[cc.BEST_PARALLEL_MODE] = best.get(c.PARALLEL_MODE)
    row[cc.BEST_SCORE_MS] = best_score
    if deployed_idx:
        dep_score = float(cands[deployed_idx[0]][c.SCORE_MS])
        row[cc.DEPLOYED_SCORE_MS] = dep_score
        row[cc.DEPLOYED_RANK] = 1 + sum(1 for x in cands if float(x[c.SCORE_MS]) < dep_score)
        row[cc.DEPLOYED_GAP_PCT] = (dep_score - best_score) / best_score * 100.0
    return row


def _why_no_group(w: Mapping[str, Any], ok: pd.DataFrame) -> str:
    sel = ok
    for col in _SHAPE_KEY:
        want = w[col]
        if col == c.HARDWARE:
            nxt = sel[sel[col] == str(want).upper()]
        elif col in (c.CUDA_GRAPH, c.ATTENTION_DP):
            nxt = sel[sel[col].astype(bool) == bool(want)]
        else:
            nxt = sel[sel[col] == want]
        if nxt.empty:
            return f"no successful candidates with {col}={want} (after matching earlier keys)"
        sel = nxt
    return "no successful candidates"


def _na(v: Any) -> Any:
    if v is None:
        return None
    try:
        return None if pd.isna(v) else v
    except (TypeError, ValueError):
        return v


# --------------------------------------------------------------------------- outcomes
@dataclass(frozen=True)
class E2EOutcome:
    """Serving the bench_moe candidate instead of the deployed config, end to end.

    tps_per_user values are tokens/s/user (InferenceX ``median_intvty``) at the same
    serving point; the perfect-routing figure is optional.
    """

    workload_id: str
    tps_per_user_deployed: float
    tps_per_user_candidate: float
    tps_per_user_candidate_perfect_routing: float | None = None


def validate_outcome(record: Mapping[str, Any]) -> E2EOutcome:
    """Check a raw record and build an :class:`E2EOutcome`.

    Raises ``ValueError`` naming the field: unknown keys, a missing or empty
    ``workload_id``, tps values that are missing, not numbers (bools rejected),
    not finite, or not > 0.
    """
    names = [f.name for f in fields(E2EOutcome)]
    unknown = sorted(set(record) - set(names))
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown field")
    wid = record.get("workload_id")
    if not isinstance(wid, str) or not wid.strip():
        raise ValueError("workload_id: required non-empty string")
    values: dict[str, float | None] = {}
    for name in names[1:]:
        v = record.get(name)
        optional = name == "tps_per_user_candidate_perfect_routing"
        if v is None and optional:
            values[name] = None
            continue
        if v is None:
            raise ValueError(f"{name}: required")
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"{name}: must be a number, got {type(v).__name__}")
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name}: must be a finite number > 0, got {v}")
        values[name] = float(v)
    return E2EOutcome(wid, **values)  # type: ignore[arg-type]


def change_pct(deployed: float, candidate: float) -> float:
    """(candidate / deployed - 1) * 100, rounded to 9 decimals so ±band is exact."""
    return round((candidate / deployed - 1.0) * 100.0, 9)


def classify_outcome(
    deployed: float,
    candidate: float,
    candidate_perfect_routing: float | None = None,
    band_pct: float = DEFAULT_BAND_PCT,
) -> str:
    """Improvement (> +band), Flat (within ±band, inclusive), Regression (< -band).

    A Regression whose perfect-routing candidate run is also below -band becomes
    "Regression after perfect routing" (counted as a Regression too in :func:`summary`).
    """
    ch = change_pct(deployed, candidate)
    if ch > band_pct:
        return cc.IMPROVEMENT
    if ch >= -band_pct:
        return cc.FLAT
    if candidate_perfect_routing is not None and (
        change_pct(deployed, candidate_perfect_routing) < -band_pct
    ):
        return cc.REGRESSION_AFTER_PR
    return cc.REGRESSION


def outcomes_frame(
    records: Iterable[E2EOutcome | Mapping[str, Any]], band_pct: float = DEFAULT_BAND_PCT
) -> pd.DataFrame:
    """Validated, classified outcomes (``crossval_columns.OUTCOME_COLUMNS``).

    A workload_id given twice raises ``ValueError`` (one outcome per workload).
    """
    rows, seen = [], set()
    for r in records:
        o = r if isinstance(r, E2EOutcome) else validate_outcome(r)
        if o.workload_id in seen:
            raise ValueError(f"workload_id: duplicate {o.workload_id!r}")
        seen.add(o.workload_id)
        rows.append(
            {
                cc.WORKLOAD_ID: o.workload_id,
                cc.TPS_DEPLOYED: o.tps_per_user_deployed,
                cc.TPS_CANDIDATE: o.tps_per_user_candidate,
                cc.TPS_CANDIDATE_PR: o.tps_per_user_candidate_perfect_routing,
                cc.CHANGE_PCT: change_pct(o.tps_per_user_deployed, o.tps_per_user_candidate),
                cc.OUTCOME: classify_outcome(
                    o.tps_per_user_deployed,
                    o.tps_per_user_candidate,
                    o.tps_per_user_candidate_perfect_routing,
                    band_pct,
                ),
            }
        )
    return pd.DataFrame(rows, columns=list(cc.OUTCOME_COLUMNS))


# --------------------------------------------------------------------------- summary
def _pct(x: int, y: int) -> str:
    return f"{x / y * 100:.2f}".rstrip("0").rstrip(".") + "%" if y else "n/a"


def summary(
    ledger_df: pd.DataFrame,
    outcomes: pd.DataFrame | Iterable[E2EOutcome | Mapping[str, Any]] = (),
    band_pct: float = DEFAULT_BAND_PCT,
) -> pd.DataFrame:
    """The guide's table, one row per (Model, Hardware), sorted by both.

    Match = Match / (Match + Mismatch) with prefill and decode split; outcome columns are
    x / (number of Mismatches). Outcomes for workloads that are not Mismatches are
    ignored; Mismatches without an outcome are counted in ``n_not_evaluated``.
    "Regression" counts every regression, "Regression after Perfect Routing" the subset.
    """
    out_df = outcomes if isinstance(outcomes, pd.DataFrame) else outcomes_frame(outcomes, band_pct)
    label = dict(zip(out_df[cc.WORKLOAD_ID], out_df[cc.OUTCOME], strict=True))
    lg = ledger_df[ledger_df[cc.STATUS].isin([cc.MATCH, cc.MISMATCH, cc.NO_DATA])]
    rows = []
    for (model, hw), g in lg.groupby([c.MODEL, c.HARDWARE], sort=True):
        comp = g[g[cc.STATUS].isin([cc.MATCH, cc.MISMATCH])]
        is_match = comp[cc.STATUS] == cc.MATCH
        pre = comp[cc.PHASE] == "prefill"
        dec = comp[cc.PHASE] == "decode"
        n, n_match = len(comp), int(is_match.sum())
        mism = comp[~is_match][cc.WORKLOAD_ID].tolist()
        labels = [label.get(w) for w in mism]
        n_imp = labels.count(cc.IMPROVEMENT)
        n_flat = labels.count(cc.FLAT)
        n_rpr = labels.count(cc.REGRESSION_AFTER_PR)
        n_reg = labels.count(cc.REGRESSION) + n_rpr
        m = len(mism)
        rows.append(
            {
                cc.S_MODEL: cc.MODEL_DISPLAY.get(str(model), str(model)),
                cc.S_HARDWARE: hw,
                cc.S_MATCH: f"{n_match}/{n} ({_pct(n_match, n)}, "
                f"prefill {int((is_match & pre).sum())}/{int(pre.sum())}, "
                f"decode {int((is_match & dec).sum())}/{int(dec.sum())})",
                cc.S_MISMATCH: f"{m}/{n}",
                cc.S_IMPROVEMENT: f"{n_imp}/{m}",
                cc.S_FLAT: f"{n_flat}/{m}",
                cc.S_REGRESSION: f"{n_reg}/{m}",
                cc.S_REGRESSION_AFTER_PR: f"{n_rpr}/{m}",
                cc.N_COMPARED: n,
                cc.N_MATCH: n_match,
                cc.MATCH_PCT: n_match / n * 100 if n else float("nan"),
                cc.N_PREFILL: int(pre.sum()),
                cc.N_PREFILL_MATCH: int((is_match & pre).sum()),
                cc.N_DECODE: int(dec.sum()),
                cc.N_DECODE_MATCH: int((is_match & dec).sum()),
                cc.N_MISMATCH: m,
                cc.N_IMPROVEMENT: n_imp,
                cc.N_FLAT: n_flat,
                cc.N_REGRESSION: n_reg,
                cc.N_REGRESSION_AFTER_PR: n_rpr,
                cc.N_NOT_EVALUATED: labels.count(None),
                cc.N_NO_DATA: int((g[cc.STATUS] == cc.NO_DATA).sum()),
            }
        )
    return pd.DataFrame(rows, columns=list(cc.SUMMARY_COLUMNS))
