"""How often the guide's decision tree picks what the measurements say is best.

A *workload* is one (model, hardware, quant, world_size, num_tokens, dispatch,
attention_dp, cuda_graph) -- the dashboard's grouping with attention family and graph
mode -- over rankable rows (see ``derived.rankable_mask``). For each workload we run
``tree.recommend`` and compare with the measured best (lowest score_ms; ties resolved
like ``best.best_by_workload``).

* ``agrees``: best backend == tree backend and, when the tree forces a comm, the best
  row's canonical comm == that comm (AUTO matches any comm). Layout is reported
  separately (``layout_agrees``: best row is pure EP, moe_tp_size == 1).
* ``pick_score_ms``: lowest score among rows with the tree's backend, pure EP
  (moe_tp_size == 1) and matching comm (any comm when AUTO -- an optimistic bound that
  assumes AUTO finds the best measured comm). NaN when no such row was measured.
* ``regret`` = pick_score_ms / best_score_ms - 1 (fraction; NaN when unmeasured, and
  those workloads are counted in ``n_pick_unmeasured``, not in the regret statistics).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.best import best_by_workload
from analysis.derived import add_derived, as_float, rankable_mask
from analysis.tree import Deployment, Thresholds, recommend

WORKLOAD_KEYS: tuple[str, ...] = (
    C.MODEL,
    C.HARDWARE,
    C.QUANT,
    C.WORLD_SIZE,
    C.NUM_TOKENS,
    C.DISPATCH,
    C.ATTENTION_DP,
    C.CUDA_GRAPH,
)
SUMMARY_GROUP_COLS: tuple[str, ...] = (C.MODEL, C.HARDWARE, C.PHASE)
_SHAPE = (C.NUM_EXPERTS, C.TOP_K, C.HIDDEN_SIZE)


def agreement_detail(df: pd.DataFrame, thresholds: Thresholds | None = None) -> pd.DataFrame:
    """One row per workload: WORKLOAD_KEYS, phase, tree_backend, tree_comm, tree_force_comm,
    best_backend, best_comm, best_parallel_mode, best_score_ms, pick_score_ms, agrees,
    layout_agrees, regret, pick_measured, in_guide_coverage. Sorted by WORKLOAD_KEYS.
    Rows with an unknown attention mode or cuda_graph are left out."""
    sub = df.loc[rankable_mask(df)]
    sub = sub[sub[C.ATTENTION_DP].notna() & sub[C.CUDA_GRAPH].notna()]
    keys = list(WORKLOAD_KEYS)
    best = best_by_workload(sub, keys)
    if best.empty:
        return pd.DataFrame(
            columns=[
                *keys,
                C.PHASE,
                "tree_backend",
                "tree_comm",
                "tree_force_comm",
                "best_backend",
                "best_comm",
                "best_parallel_mode",
                "best_score_ms",
                "pick_score_ms",
                "agrees",
                "layout_agrees",
                "regret",
                "pick_measured",
                "in_guide_coverage",
            ]
        )
    shapes = sub.groupby(keys, sort=True, dropna=False, observed=True)[list(_SHAPE)].first()
    best = best.merge(shapes.reset_index(), on=keys, how="left")
    recs = [
        recommend(
            Deployment(
                hardware=str(r[C.HARDWARE]),
                num_experts=int(r[C.NUM_EXPERTS]),
                top_k=int(r[C.TOP_K]),
                hidden_size=int(r[C.HIDDEN_SIZE]),
                quant=str(r[C.QUANT]),
                world_size=int(r[C.WORLD_SIZE]),
                attention_dp=bool(r[C.ATTENTION_DP]),
                cuda_graph=bool(r[C.CUDA_GRAPH]),
                num_tokens=int(r[C.NUM_TOKENS]),
                model=str(r[C.MODEL]),
            ),
            thresholds,
        )
        for r in best.to_dict("records")
    ]
    out = best[keys].copy()
    out[C.PHASE] = np.where(best[C.CUDA_GRAPH].astype(bool), "decode", "prefill")
    out["tree_backend"] = [r.backend for r in recs]
    out["tree_comm"] = [r.comm for r in recs]
    out["tree_force_comm"] = [r.force_comm for r in recs]
    out["best_backend"] = best["best_" + C.BACKEND]
    out["best_comm"] = best["best_" + C.COMM]
    out["best_parallel_mode"] = best["best_" + C.PARALLEL_MODE]
    out["best_score_ms"] = best["best_" + C.SCORE_MS]
    comm_ok = ~out["tree_force_comm"] | (out["best_comm"] == out["tree_comm"])
    out["agrees"] = (out["best_backend"] == out["tree_backend"]) & comm_ok
    out["layout_agrees"] = as_float(best["best_" + C.MOE_TP_SIZE]) == 1
    out["pick_score_ms"] = _pick_scores(sub, out, keys)
    out["regret"] = out["pick_score_ms"] / out["best_score_ms"] - 1.0
    out["pick_measured"] = out["pick_score_ms"].notna()
    out["in_guide_coverage"] = [r.in_guide_coverage for r in recs]
    return out.reset_index(drop=True)


def _pick_scores(sub: pd.DataFrame, detail: pd.DataFrame, keys: list[str]) -> np.ndarray:
    picks = detail[[*keys, "tree_backend", "tree_comm", "tree_force_comm"]]
    m = sub[[*keys, C.BACKEND, C.COMM, C.MOE_TP_SIZE, C.SCORE_MS]].merge(
        picks, on=keys, how="inner"
    )
    ok = (
        (m[C.BACKEND] == m["tree_backend"])
        & (as_float(m[C.MOE_TP_SIZE]) == 1)
        & (~m["tree_force_comm"] | (m[C.COMM] == m["tree_comm"]))
    )
    mins = m[ok.to_numpy()].groupby(keys, dropna=False, observed=True)[C.SCORE_MS].min()
    joined = detail[keys].merge(mins.rename("p").reset_index(), on=keys, how="left")
    return as_float(joined["p"])


def agreement_summary(
    detail: pd.DataFrame, group_cols: Sequence[str] = SUMMARY_GROUP_COLS
) -> pd.DataFrame:
    """Aggregate ``agreement_detail`` per group_cols (default model, hardware, phase):
    n_workloads, n_agree, agreement_pct (100 * n_agree / n_workloads),
    n_pick_measured, n_pick_unmeasured, median_regret, mean_regret, max_regret
    (fractions over measured picks; NaN when none), n_within_3pct (measured picks
    with regret <= 0.03). Pass ``group_cols=()`` for one overall row."""
    d = detail.assign(_one=1, _within=(detail["regret"] <= 0.03).astype(int))
    agg = {
        "n_workloads": ("_one", "sum"),
        "n_agree": ("agrees", "sum"),
        "n_pick_measured": ("pick_measured", "sum"),
        "median_regret": ("regret", "median"),
        "mean_regret": ("regret", "mean"),
        "max_regret": ("regret", "max"),
        "n_within_3pct": ("_within", "sum"),
    }
    if group_cols:
        res = d.groupby(list(group_cols), sort=True, dropna=False).agg(**agg).reset_index()
    else:
        res = pd.DataFrame(
            {k: [getattr(d[c], f)() if len(d) else np.nan] for k, (c, f) in agg.items()}
        )
        for c in ("n_workloads", "n_agree", "n_pick_measured", "n_within_3pct"):
            res[c] = res[c].fillna(0).astype(int)
    res["n_pick_unmeasured"] = res["n_workloads"] - res["n_pick_measured"]
    with np.errstate(invalid="ignore", divide="ignore"):
        res["agreement_pct"] = 100.0 * res["n_agree"] / res["n_workloads"]
    cols = [
        *group_cols,
        "n_workloads",
        "n_agree",
        "agreement_pct",
        "n_pick_measured",
        "n_pick_unmeasured",
        "median_regret",
        "mean_regret",
        "max_regret",
        "n_within_3pct",
    ]
    return res[cols]


def agreement_report(
    df: pd.DataFrame,
    thresholds: Thresholds | None = None,
    group_cols: Sequence[str] = SUMMARY_GROUP_COLS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(detail, summary) -- see ``agreement_detail`` and ``agreement_summary``."""
    detail = agreement_detail(add_derived(df) if C.PHASE not in df else df, thresholds)
    return detail, agreement_summary(detail, group_cols)
