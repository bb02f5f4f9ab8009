"""How wrong the predictions have been on this very data: leave one token count out.

For every workload group of a cell (world size x routing pattern x family, see
:mod:`analysis.predict`) and every token count it measured, that count is held out from
the fit **and** from the calibration, the group is refitted on the rest and asked at the
held-out count exactly as :func:`analysis.predict.predict_workload` answers a user. Then:

* ``regret_pct``: the pick's measured score there against the measured best, in %;
* ``nearest_regret_pct``: the same for the nearest measured workload's winner (the
  fastest at the nearest token count in log distance, the upper one on a tie -- the
  answer Recommend gives without a prediction);
* ``n_predicted`` / ``n_covered``: configurations measured at the held-out count that
  were predicted, and whose measured score fell inside the interval.

**Censoring.** A source that keeps only its top configurations per workload (NVIDIA's
dashboard keeps 3) does not say how slow the others were: a pick (or a nearest answer)
that is not among the measured ones at the held-out count has an unknown score. Such a
query is not scored as a regret; it is counted (``pick_censored``) with the least regret
it can have (``regret_floor_pct``: the slowest measured score there against the best --
the pick is slower than every kept configuration). The summary reports both.

Pure and deterministic; inputs are not modified.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import predict as P
from analysis.config_labels import config_label
from analysis.derived import as_float
from analysis.identity import configuration_frame

FAMILY_KEYS = (C.WORLD_SIZE, C.DISPATCH, C.ATTENTION_DP, C.CUDA_GRAPH)


def _held_out(
    group: pd.DataFrame, labels: np.ndarray, t: float, conf: float
) -> dict[str, Any] | None:
    """One left-out token count ``t`` of a group (None when the rest cannot be fitted)."""
    tokens = as_float(group[C.NUM_TOKENS])
    at, rest = tokens == t, tokens != t
    rest_frame = group[rest].reset_index(drop=True)
    fit = P.fit_group(rest_frame, int(as_float(group[C.WORLD_SIZE])[0]), None, conf)
    if fit.model is None:
        return None
    got = P.predict_workload(rest_frame, int(t), fit.world_size, fitted=fit)
    if got.pick is None:
        return None
    truth = pd.Series(as_float(group.loc[at, C.SCORE_MS]), index=labels[at])
    truth = truth.groupby(level=0).min()
    best, worst = float(truth.min()), float(truth.max())
    rows = got.rows.set_index(P.CONFIG)
    rows = rows[np.isfinite(rows[P.LO_MS].to_numpy(float))]  # the ones given an interval
    # configurations the label does not tell apart (e.g. bench_moe's num_chunks) share a
    # name: as for ``truth`` (the fastest measured of the name), the fastest predicted
    rows = rows.sort_values(P.PRED_MS, kind="mergesort")
    rows = rows[~rows.index.duplicated(keep="first")]
    known = rows.index.intersection(truth.index)
    log_truth = np.log(truth.loc[known].to_numpy(float))
    lo = np.log(rows.loc[known, P.LO_MS].to_numpy(float)) - 1e-12
    hi = np.log(rows.loc[known, P.HI_MS].to_numpy(float)) + 1e-12
    others = np.unique(as_float(rest_frame[C.NUM_TOKENS]))
    dist = np.abs(np.log(others) - np.log(t))
    near = others[np.flatnonzero(dist == dist.min()).max()]
    at_near = as_float(rest_frame[C.NUM_TOKENS]) == near
    near_label = fit.labels[
        np.flatnonzero(at_near)[np.argmin(as_float(rest_frame.loc[at_near, C.SCORE_MS]))]
    ]

    def regret(label: str) -> float:
        return 100.0 * (float(truth[label]) / best - 1.0) if label in truth.index else np.nan

    return {
        C.NUM_TOKENS: int(t),
        "pick": got.pick,
        "n_predicted": len(known),
        "n_measured": len(truth),
        "regret_pct": regret(got.pick),
        "pick_censored": got.pick not in truth.index,
        "regret_floor_pct": 100.0 * (worst / best - 1.0),
        "fallback": any("neighbour's winner" in n for n in got.notes),
        "neighbours_disagree": got.split is not None,
        "nearest_tokens": int(near),
        "nearest_regret_pct": regret(str(near_label)),
        "n_covered": int(((log_truth >= lo) & (log_truth <= hi)).sum()),
        "edge": bool(t < others.min() or t > others.max()),
    }


def validate(frame: pd.DataFrame, confidence: float = P.CONFIDENCE) -> pd.DataFrame:
    """Leave-one-token-count-out validation of a cell's candidate frame (module
    docstring): one row per (world size, routing pattern, attention DP, CUDA graph,
    held-out token count) that could be predicted."""
    ready = configuration_frame(frame) if len(frame) else frame
    if ready.empty:
        return pd.DataFrame()
    keys = [k for k in FAMILY_KEYS if k in ready]
    out = []
    parts = ready.groupby(keys, sort=True, observed=True, dropna=False)
    for key, group in parts:
        group = group.reset_index(drop=True)
        labels = config_label(group).to_numpy()
        for t in np.unique(as_float(group[C.NUM_TOKENS])):
            got = _held_out(group, labels, float(t), confidence)
            if got is not None:
                named = dict(zip(keys, key, strict=True))
                named[C.WORLD_SIZE] = int(named[C.WORLD_SIZE])
                out.append({**named, **got})
    return pd.DataFrame(out)


def _stats(vals: np.ndarray) -> dict[str, Any]:
    return {
        "n": len(vals),
        "median_regret_pct": float(np.median(vals)) if len(vals) else None,
        "p90_regret_pct": float(np.quantile(vals, 0.9)) if len(vals) else None,
        "worst_regret_pct": float(vals.max()) if len(vals) else None,
        "wrong_picks": int((vals > 0).sum()),
    }


def summarize(table: pd.DataFrame) -> dict[str, Any]:
    """The validation's headline numbers: held-out queries; for the predicted pick and
    the nearest-workload answer the median / p90 / worst regret (%) over the queries
    whose pick was measured there, and how many were censored; coverage (share of
    held-out scores inside their interval)."""
    if table.empty:
        return {"n_queries": 0}
    out: dict[str, Any] = {"n_queries": len(table)}
    for name, col in (("predicted", "regret_pct"), ("nearest", "nearest_regret_pct")):
        vals = table[col].to_numpy(float)
        out[name] = {**_stats(vals[np.isfinite(vals)]), "censored": int((~np.isfinite(vals)).sum())}
    censored = table[table["pick_censored"]]
    out["predicted"]["censored_floor_worst_pct"] = (
        float(censored["regret_floor_pct"].max()) if len(censored) else None
    )
    out["fallback"] = int(table["fallback"].sum())
    out["neighbours_disagree"] = int(table["neighbours_disagree"].sum())
    out["coverage"] = float(table["n_covered"].sum() / max(int(table["n_predicted"].sum()), 1))
    return out
