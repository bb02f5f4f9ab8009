"""End-to-end outcomes of cross-validation Mismatches and the guide's summary table.

An outcome pairs the deployed config and the bench_moe candidate served at the same
serving point (tokens/s/user), each optionally re-measured under perfect routing
(balanced expert load). :func:`classify_outcome` labels the change Improvement
(> +band), Flat (within ±band, bounds included) or Regression (< -band); a Regression
is "Regression after perfect routing" only when both perfect-routing runs are given and
the candidate is still below -band of the deployed config *under perfect routing* (the
pair is compared like for like; without the deployed perfect-routing run it stays a
plain Regression).
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
OPTIONAL_TPS = (cc.TPS_DEPLOYED_PR, cc.TPS_CANDIDATE_PR)


@dataclass(frozen=True)
class E2EOutcome:
    """Serving the bench_moe candidate instead of the deployed config, end to end.

    tps_per_user values are tokens/s/user (InferenceX ``median_intvty``) at the same
    serving point; the two perfect-routing figures are optional.
    """

    workload_id: str
    tps_per_user_deployed: float
    tps_per_user_candidate: float
    tps_per_user_candidate_perfect_routing: float | None = None
    tps_per_user_deployed_perfect_routing: float | None = None


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
        optional = name in OPTIONAL_TPS
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
    deployed_perfect_routing: float | None = None,
) -> str:
    """Improvement (> +band), Flat (within ±band, inclusive), Regression (< -band).

    A Regression becomes "Regression after perfect routing" (counted as a Regression too
    in :func:`summary`) when both perfect-routing runs are given and the candidate's is
    still below -band of the deployed config's; with either missing it stays Regression.
    """
    ch = change_pct(deployed, candidate)
    if ch > band_pct:
        return cc.IMPROVEMENT
    if ch >= -band_pct:
        return cc.FLAT
    if (
        candidate_perfect_routing is not None
        and deployed_perfect_routing is not None
        and change_pct(deployed_perfect_routing, candidate_perfect_routing) < -band_pct
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
                cc.TPS_DEPLOYED_PR: o.tps_per_user_deployed_perfect_routing,
                cc.CHANGE_PCT: change_pct(o.tps_per_user_deployed, o.tps_per_user_candidate),
                cc.OUTCOME: classify_outcome(
                    o.tps_per_user_deployed,
                    o.tps_per_user_candidate,
                    o.tps_per_user_candidate_perfect_routing,
                    band_pct,
                    o.tps_per_user_deployed_perfect_routing,
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
