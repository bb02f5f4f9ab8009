"""Leave one model out: how the shape model's pick fares on a model it has not seen,
against the published decision tree and the nearest measured model's winner.

For each (hardware, quant) slice with two or more models, each model is held out in
turn; the shape model (:mod:`analysis.predict_shape`) is fitted on the others and asked,
for every workload the held-out model measured (world size, num_tokens, attention DP,
CUDA graph; the default routing pattern), which configuration kind is fastest. Scored
per workload (``regret_pct``: the pick's measured score there against the measured
best, %):

* ``predicted``: the shape model's pick;
* ``tree``: the guide's decision tree (``analysis.agreement.agreement_detail``, the
  lowest score among configurations that follow it);
* ``nearest``: the winner of the same workload on the measured model nearest in shape
  (log distance over experts, top-k, hidden and intermediate size).

A pick the source did not keep at that workload (top-3 data) has no score: it is
counted as censored, not scored (as in :mod:`analysis.predict_validate`). ``n_covered``
/ ``n_predicted``: measured scores inside their conformal interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import predict_shape as S
from analysis.agreement import agreement_detail
from analysis.derived import as_float

WORKLOAD = (C.WORLD_SIZE, C.NUM_TOKENS, C.ATTENTION_DP, C.CUDA_GRAPH)


def _shape(rows: pd.DataFrame) -> S.Shape:
    first = rows.iloc[0]
    return S.Shape(*(int(first[c]) for c in S.SHAPE))


def _nearest_model(shapes: dict[str, S.Shape], held: str) -> str:
    def dist(a: S.Shape, b: S.Shape) -> float:
        va, vb = (
            np.log(np.array(list(vars(a).values()), float)),
            np.log(np.array(list(vars(b).values()), float)),
        )
        return float(np.abs(va - vb).sum())

    return min((m for m in shapes if m != held), key=lambda m: (dist(shapes[m], shapes[held]), m))


def _regret(measured: pd.Series, kind: str | None) -> float:
    """A kind's measured score against the best of ``measured`` (kind -> score), in %;
    NaN when the kind was not kept there."""
    if kind is None or kind not in measured.index:
        return float("nan")
    return 100.0 * (float(measured[kind]) / float(measured.min()) - 1.0)


def _slice(frame: pd.DataFrame, confidence: float) -> list[dict[str, Any]]:
    rows = S.slice_rows(frame)
    if rows.empty or rows[C.MODEL].nunique() < 2:
        return []
    tree = agreement_detail(frame)
    tree = (
        tree.set_index([C.MODEL, *WORKLOAD])["regret_pct"] if len(tree) else pd.Series(dtype=float)
    )
    shapes = {str(m): _shape(g) for m, g in rows.groupby(C.MODEL, observed=True)}
    quant = str(rows[C.QUANT].iloc[0])
    out = []
    for held in sorted(shapes):
        fit = S.fit_shapes(frame[frame[C.MODEL].astype(str) != held], confidence)
        mine = rows[rows[C.MODEL].astype(str) == held]
        near = _nearest_model(shapes, held)
        theirs = rows[rows[C.MODEL].astype(str) == near]
        for key, truth in mine.groupby(list(WORKLOAD), observed=True):
            ws, t, adp, graph = int(key[0]), int(key[1]), bool(key[2]), bool(key[3])
            got = S.predict_shape(fit, shapes[held], quant, ws, t, adp, graph)
            if got.empty:
                continue
            measured = (
                pd.Series(as_float(truth[C.SCORE_MS]), index=truth[S.KIND]).groupby(level=0).min()
            )
            there = theirs[
                (as_float(theirs[C.WORLD_SIZE]) == ws)
                & (as_float(theirs[C.NUM_TOKENS]) == t)
                & (theirs[C.ATTENTION_DP].astype(object) == adp)
                & (theirs[C.CUDA_GRAPH].astype(object) == graph)
            ]
            near_kind = (
                str(there[S.KIND].iloc[int(np.argmin(as_float(there[C.SCORE_MS])))])
                if len(there)
                else None
            )
            known = got[got[S.KIND].isin(measured.index)]
            log_truth = np.log(measured.loc[known[S.KIND]].to_numpy(float))
            inside = (log_truth >= np.log(known["lo_ms"].to_numpy(float)) - 1e-12) & (
                log_truth <= np.log(known["hi_ms"].to_numpy(float)) + 1e-12
            )
            tree_regret = tree.get((held, ws, t, adp, graph), np.nan) if len(tree) else np.nan
            out.append({
                C.HARDWARE: str(rows[C.HARDWARE].iloc[0]), C.QUANT: quant, C.MODEL: held,
                C.WORLD_SIZE: ws, C.NUM_TOKENS: t, C.ATTENTION_DP: adp, C.CUDA_GRAPH: graph,
                "pick": str(got["config"].iat[0]),
                "regret_pct": _regret(measured, str(got[S.KIND].iat[0])),
                "tree_regret_pct": float(tree_regret) if pd.notna(tree_regret) else np.nan,
                "nearest_model": near,
                "nearest_regret_pct": _regret(measured, near_kind),
                "n_predicted": len(known),
                "n_covered": int(inside.sum()),
            })  # fmt: skip
    return out


def validate_models(frame: pd.DataFrame, confidence: float = S.CONFIDENCE) -> pd.DataFrame:
    """Leave-one-model-out table of a candidate frame (module docstring): one row per
    (hardware, quant, held-out model, workload)."""
    out: list[dict[str, Any]] = []
    if frame.empty:
        return pd.DataFrame()
    for _, part in frame.groupby([C.HARDWARE, C.QUANT], observed=True, sort=True):
        out += _slice(part.reset_index(drop=True), confidence)
    return pd.DataFrame(out)


def _stats(vals: np.ndarray, n: int) -> dict[str, Any]:
    ok = vals[np.isfinite(vals)]
    return {
        "n": len(ok),
        "censored": n - len(ok),
        "median_regret_pct": float(np.median(ok)) if len(ok) else None,
        "p90_regret_pct": float(np.quantile(ok, 0.9)) if len(ok) else None,
        "worst_regret_pct": float(ok.max()) if len(ok) else None,
        "wrong_picks": int((ok > 0).sum()),
    }


def summarize_models(table: pd.DataFrame) -> dict[str, Any]:
    """Headline numbers of :func:`validate_models`: per answer (predicted, tree,
    nearest) over every workload it could be scored on, and over the workloads where
    the predicted pick and the tree's both could (``paired``); coverage."""
    if table.empty:
        return {"n_workloads": 0}
    out: dict[str, Any] = {"n_workloads": len(table)}
    for name, col in (("predicted", "regret_pct"), ("tree", "tree_regret_pct"),
                      ("nearest", "nearest_regret_pct")):  # fmt: skip
        out[name] = _stats(table[col].to_numpy(float), len(table))
    both = table[table["regret_pct"].notna() & table["tree_regret_pct"].notna()]
    out["paired"] = {
        "n": len(both),
        "predicted": _stats(both["regret_pct"].to_numpy(float), len(both)),
        "tree": _stats(both["tree_regret_pct"].to_numpy(float), len(both)),
    }
    out["coverage"] = float(table["n_covered"].sum() / max(int(table["n_predicted"].sum()), 1))
    return out
