"""How often the guide's decision tree picks what the measurements say is best.

A *workload* is one (model, hardware, quant, world_size, num_tokens, dispatch,
attention_dp, cuda_graph) -- the dashboard's grouping with attention family and graph
mode -- over rankable rows (see ``derived.rankable_mask``), so one routing pattern per
workload. The rows compared are configurations (``identity.configuration_frame``: the
median over repeat runs, or the latest run with ``repeats="latest"``). For each
workload we run ``tree.recommend`` and compare with the measured best (lowest score_ms;
ties resolved like ``best.best_by_workload``).

Backend **and** communication are compared:

* ``tree_expected_comm``: what runs when the tree's advice is followed -- the forced
  method, or the AUTO flow's predicted pick (``tree.auto_comm``) when the tree leaves
  AUTO.
* ``backend_agrees``: best backend == tree backend. ``comm_agrees``: the best row's
  measured comm == tree_expected_comm (a best row that recorded no actual comm, "AUTO",
  cannot disagree). ``agrees`` = both. Layout is reported separately
  (``layout_agrees``: best row is pure EP, moe_tp_size == 1).
* ``pick_score_ms``: lowest score among configurations with the tree's backend, pure EP
  (moe_tp_size == 1) and the tree's comm: the forced method, or -- when the tree leaves
  AUTO -- a run that asked for AUTO or measured the predicted pick. NaN when no such
  configuration was measured.
* ``regret`` = pick_score_ms / best_score_ms - 1 (fraction; ``regret_pct`` the same in
  %; NaN when unmeasured, and those workloads are counted in ``n_pick_unmeasured``, not
  in the regret statistics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.best import best_by_workload
from analysis.capabilities import measured_capabilities, measured_mnnvl, mnnvl_at
from analysis.derived import add_derived, as_float, rankable_mask
from analysis.identity import N_REPEATS, Repeats, configuration_frame
from analysis.tree import Deployment, Thresholds, recommend

WORKLOAD_KEYS: tuple[str, ...] = C.WORKLOAD_KEYS
SUMMARY_GROUP_COLS: tuple[str, ...] = (C.MODEL, C.HARDWARE, C.PHASE)
_SHAPE = (C.NUM_EXPERTS, C.TOP_K, C.HIDDEN_SIZE)
DETAIL_COLUMNS: tuple[str, ...] = (
    *WORKLOAD_KEYS,
    C.PHASE,
    "tree_backend",
    "tree_comm",
    "tree_force_comm",
    "tree_expected_comm",
    "best_backend",
    "best_comm",
    "best_parallel_mode",
    "best_score_ms",
    "best_n_repeats",
    "best_run_id",
    "best_candidate_index",
    "pick_score_ms",
    "backend_agrees",
    "comm_agrees",
    "agrees",
    "layout_agrees",
    "regret",
    "regret_pct",
    "pick_measured",
    "in_guide_coverage",
)


def agreement_detail(
    df: pd.DataFrame,
    thresholds: Thresholds | None = None,
    repeats: Repeats = "median",
    mnnvl: Mapping[str, int] | None = None,
) -> pd.DataFrame:
    """One row per workload with :data:`DETAIL_COLUMNS` (see the module docstring),
    sorted by WORKLOAD_KEYS. Rows with an unknown attention mode or cuda_graph are left
    out, and so are rows whose model shape (experts, top-k, hidden size) was not
    recorded (NVIDIA's dashboard rows of a model it does not describe): the tree cannot
    be walked without it. ``mnnvl``: hardware -> the largest world size with MNNVL proven by stored
    measurements (``capabilities.measured_mnnvl``); None derives it from ``df`` itself,
    so a hardware on which an NVLINK_* comm ran is walked with MNNVL up to that world
    size whatever the hand table says."""
    if mnnvl is None:
        mnnvl = measured_mnnvl(measured_capabilities(df))
    keys = list(WORKLOAD_KEYS)
    cfg = workload_configs(df, repeats)
    best = best_by_workload(cfg, keys)
    if best.empty:
        return pd.DataFrame(columns=list(DETAIL_COLUMNS))
    shapes = cfg.groupby(keys, sort=True, dropna=False, observed=True)[list(_SHAPE)].first()
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
                mnnvl=mnnvl_at(dict(mnnvl), str(r[C.HARDWARE]), int(r[C.WORLD_SIZE])),
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
    out["tree_expected_comm"] = [r.comm if r.force_comm else r.expected_comm for r in recs]
    out["best_backend"] = best["best_" + C.BACKEND]
    out["best_comm"] = best["best_" + C.COMM]
    out["best_parallel_mode"] = best["best_" + C.PARALLEL_MODE]
    out["best_score_ms"] = best["best_" + C.SCORE_MS]
    out["best_n_repeats"] = best["best_" + N_REPEATS]
    out["best_run_id"] = best["best_" + C.RUN_ID]
    out["best_candidate_index"] = best["best_" + C.CANDIDATE_INDEX]
    best_comm = out["best_comm"].astype("string").fillna("AUTO")
    out["backend_agrees"] = (out["best_backend"] == out["tree_backend"]).to_numpy(bool)
    out["comm_agrees"] = (
        (best_comm == "AUTO") | (best_comm == out["tree_expected_comm"])
    ).to_numpy(dtype=bool, na_value=False)
    out["agrees"] = out["backend_agrees"] & out["comm_agrees"]
    out["layout_agrees"] = as_float(best["best_" + C.MOE_TP_SIZE]) == 1
    out["pick_score_ms"] = _pick_scores(cfg, out, keys)
    out["regret"] = out["pick_score_ms"] / out["best_score_ms"] - 1.0
    out["regret_pct"] = 100.0 * out["regret"]
    out["pick_measured"] = out["pick_score_ms"].notna()
    out["in_guide_coverage"] = [r.in_guide_coverage for r in recs]
    return out[list(DETAIL_COLUMNS)].reset_index(drop=True)


def workload_configs(df: pd.DataFrame, repeats: Repeats = "median") -> pd.DataFrame:
    """The configurations :func:`agreement_detail` compares: the configuration frame
    (``identity.configuration_frame``) of the rankable rows of ``df`` whose attention
    mode, CUDA graph and model shape are known. ``agreement_detail`` of this frame (with
    the ``mnnvl`` of ``df``) answers as ``agreement_detail`` of ``df``: several trees
    compared on one slice pool its repeats once."""
    known = rankable_mask(df)
    for col in (C.ATTENTION_DP, C.CUDA_GRAPH, *_SHAPE):
        known &= df[col].notna().to_numpy()
    return configuration_frame(df, repeats, rows=known)


def _pick_scores(cfg: pd.DataFrame, detail: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Per workload, the lowest score of the configurations that follow the tree."""
    picks = detail[[*keys, "tree_backend", "tree_force_comm", "tree_expected_comm"]]
    cols = [*keys, C.BACKEND, C.COMM, C.MOE_TP_SIZE, C.SCORE_MS]
    m = cfg[cols + ([C.COMM_REQUESTED] if C.COMM_REQUESTED in cfg else [])].merge(
        picks, on=keys, how="inner"
    )
    comm = m[C.COMM].astype("string")
    asked_auto = (
        m[C.COMM_REQUESTED].astype("string") == "AUTO"
        if C.COMM_REQUESTED in m
        else pd.Series(False, index=m.index)
    )
    same_comm = (comm == m["tree_expected_comm"]).fillna(False)
    follows = same_comm | (
        ~m["tree_force_comm"] & (asked_auto.fillna(False) | (comm == "AUTO").fillna(False))
    )
    ok = (
        (m[C.BACKEND].astype("string") == m["tree_backend"]).fillna(False)
        & (as_float(m[C.MOE_TP_SIZE]) == 1)
        & follows
    )
    mins = m[ok.to_numpy(dtype=bool)].groupby(keys, dropna=False, observed=True)[C.SCORE_MS].min()
    joined = detail[keys].merge(mins.rename("p").reset_index(), on=keys, how="left")
    return as_float(joined["p"])


def agreement_summary(
    detail: pd.DataFrame, group_cols: Sequence[str] = SUMMARY_GROUP_COLS
) -> pd.DataFrame:
    """Aggregate ``agreement_detail`` per group_cols (default model, hardware, phase):
    n_workloads, n_pick_measured (workloads where the tree's pick was measured: the
    only ones where the tree and the data were compared), n_pick_unmeasured, n_agree
    (measured picks that agree), agreement_pct = 100 * n_agree / n_pick_measured (NaN,
    shown N/A, when nothing was compared), median_regret_pct, mean_regret_pct,
    max_regret_pct (regret in %, over measured picks; NaN when none) and n_within_3pct
    (measured picks with regret <= 3 %). Pass ``group_cols=()`` for one overall row."""
    d = detail.assign(
        _one=1,
        _within=(detail["regret"] <= 0.03).astype(int),
        _agree=(detail["agrees"].astype(bool) & detail["pick_measured"].astype(bool)).astype(int),
    )
    agg = {
        "n_workloads": ("_one", "sum"),
        "n_agree": ("_agree", "sum"),
        "n_pick_measured": ("pick_measured", "sum"),
        "median_regret_pct": ("regret_pct", "median"),
        "mean_regret_pct": ("regret_pct", "mean"),
        "max_regret_pct": ("regret_pct", "max"),
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
        res["agreement_pct"] = np.where(
            res["n_pick_measured"] > 0,
            100.0 * res["n_agree"] / res["n_pick_measured"].where(res["n_pick_measured"] > 0),
            np.nan,
        )
    cols = [
        *group_cols,
        "n_workloads",
        "n_pick_measured",
        "n_pick_unmeasured",
        "n_agree",
        "agreement_pct",
        "median_regret_pct",
        "mean_regret_pct",
        "max_regret_pct",
        "n_within_3pct",
    ]
    return res[cols]


def agreement_report(
    df: pd.DataFrame,
    thresholds: Thresholds | None = None,
    group_cols: Sequence[str] = SUMMARY_GROUP_COLS,
    repeats: Repeats = "median",
    mnnvl: Mapping[str, int] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(detail, summary) -- see ``agreement_detail`` and ``agreement_summary``."""
    detail = agreement_detail(
        add_derived(df) if C.PHASE not in df else df, thresholds, repeats, mnnvl
    )
    return detail, agreement_summary(detail, group_cols)
