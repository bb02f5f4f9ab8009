"""Leave one model out: how the shape model's pick fares on a model it has not seen,
against the published decision tree and the nearest measured model's winner.

For each (hardware, quant) slice with two or more models, each model is held out in
turn; the shape model (:mod:`analysis.predict_shape`) is fitted on the others (above
:data:`FOLDS` models: those outside its fold) and asked, for each workload the held-out
model measured (world size, num_tokens, attention DP, CUDA graph; the default routing
pattern; a bounded, evenly spread sample on a large slice), which configuration kind
is fastest. Scored
per workload (``regret_pct``: the pick's measured score there against the measured
best, %):

* ``predicted``: the shape model's pick, the tree's contender first where the model's
  own pick is less likely than ``prefer_tree_below`` to be the fastest. The threshold is
  chosen as the product chooses it (:func:`answer_threshold`), **inside** the training
  models of each held-out model, so its answers never choose it: by holding out the
  training models in turn (:func:`choose_threshold` over :data:`THRESHOLDS`, on their
  answers by fits that saw neither them nor the held-out model: :func:`inner_plan`)
  when each such fit keeps :data:`MIN_MODELS` models -- a fit on one model calibrates
  its intervals on held-out world sizes, not models, so its P(fastest) is not the one
  being thresholded -- else the a-priori ``analysis.predict_shape.PREFER_TREE_BELOW``;
* ``tree``: the guide's decision tree (``analysis.agreement.agreement_detail``, the
  lowest score among configurations that follow it);
* ``nearest``: the winner of the same workload on the measured model nearest in shape
  (log distance over experts, top-k, hidden and intermediate size).

A pick the source did not keep at that workload (top-3 data) has no score: it is
counted as censored, not scored (as in :mod:`analysis.predict_validate`). ``n_covered``
/ ``n_predicted``: measured scores inside their conformal interval.

**Which fits, which workloads** (:func:`slice_plan`). The slice's M models, sorted by
name, are dealt round-robin into :func:`model_folds`: one model a fold up to
:data:`FOLDS` models, else :data:`FOLDS` folds. Each model is answered by the fit
without its fold (the table's rows; up to :data:`FOLDS` models: the fit on all the
others, leaving one model out). A held-out model's threshold is chosen on every other
model's answers, each by the fit without that model's fold and the held-out model's
fold (a model of the held-out model's own fold: by the fit without that fold). So a
slice makes at most FOLDS x (FOLDS + 1) / 2 fits (21) whatever M, and answers each model
at most FOLDS times (leaving one out at any M: M + M(M-1)/2 fits and M^2 answer sets,
each fit and each answer itself O(M) -- a cost growing as M^3). The answers are
bounded too (:func:`sample_workloads`): each model's rows in the table are at most
:data:`ROW_BUDGET` / M of its workloads, and each answer set that only chooses
thresholds at most :data:`THRESHOLD_BUDGET` / (the number of such sets), spread evenly
over its sorted workloads (every workload while the budget allows). The
held-out model's rows are in none of the fits, nor answers, that choose its threshold.
Each fit is dropped once it has answered: memory holds one fit and the answers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
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


THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(11))  # prefer_tree_below tried
MIN_MODELS = 2  # models each fit of a threshold's leave-one-model-out keeps
# folds of models the threshold's inner validation holds out (module docstring): up to
# this many models, one model a fold (leaving one out); above, the fits per slice stop
# growing with the square of the models
FOLDS = 6
# predictions (held-out workloads) a slice's validation makes: its table's rows, and
# those choosing the thresholds; each model gets an equal share (sample_workloads)
ROW_BUDGET = 800
THRESHOLD_BUDGET = 800

Plan = list[tuple[tuple[str, ...], tuple[str, ...]]]  # (training models, models answered)


def model_folds(models: Iterable[str]) -> list[tuple[str, ...]]:
    """The slice's models (distinct, sorted by name) dealt round-robin into
    min(n, :data:`FOLDS`) folds: one model a fold up to :data:`FOLDS` models."""
    names = sorted(set(models))
    n = min(len(names), FOLDS)
    return [tuple(names[i::n]) for i in range(n)]


def _fold_of(folds: list[tuple[str, ...]], model: str) -> tuple[str, ...]:
    return next(f for f in folds if model in f)


def outer_train(models: Iterable[str], held: str) -> tuple[str, ...]:
    """The training models of the fit whose answers are ``held``'s rows: every model
    outside its fold (:func:`model_folds`; up to :data:`FOLDS` models, all the others)."""
    names = sorted(set(models))
    mine = _fold_of(model_folds(names), held)
    return tuple(m for m in names if m not in mine)


def inner_plan(models: Iterable[str], held: str) -> Plan:
    """The fits whose answers choose ``held``'s threshold, as (training models, models
    it answers) pairs: every other model is answered once, by the fit without its own
    fold and ``held``'s (:func:`model_folds`; up to :data:`FOLDS` models, the fit
    without it and ``held``: leaving one training model out), in fold order. Empty when
    a fit would keep fewer than :data:`MIN_MODELS` models (the a-priori threshold)."""
    names = sorted(set(models))
    folds = model_folds(names)
    mine = _fold_of(folds, held)
    out: Plan = []
    for fold in folds:
        answered = tuple(m for m in fold if m != held)
        if answered:
            train = tuple(m for m in names if m not in mine and m not in fold)
            out.append((train, answered))
    if not out or min(len(train) for train, _ in out) < MIN_MODELS:
        return []
    return out


def slice_plan(models: Iterable[str]) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Every fit the slice's validation makes (:func:`analysis.predict_shape.fit_shapes`
    of the training models, the key) and the models each answers (sorted): each model's
    :func:`outer_train` fit, and the fits of each :func:`inner_plan`."""
    names = sorted(set(models))
    asked: dict[tuple[str, ...], set[str]] = {}
    for held in names:
        asked.setdefault(outer_train(names, held), set()).add(held)
        for train, answered in inner_plan(names, held):
            asked.setdefault(train, set()).update(answered)
    return {train: tuple(sorted(asked[train])) for train in sorted(asked)}


def sample_workloads(keys: list[tuple[Any, ...]], most: int) -> list[tuple[Any, ...]]:
    """At most ``most`` (at least one) of a model's workload keys, spread evenly over
    them sorted (all when they fit): the first, the last and evenly between."""
    ordered = sorted(set(keys))
    if len(ordered) <= most:
        return ordered
    at = np.unique(np.round(np.linspace(0, len(ordered) - 1, max(most, 1))).astype(int))
    return [ordered[i] for i in at]


def _answers(
    fit: S.ShapeModel, rows: pd.DataFrame, held: str, shape: S.Shape, quant: str,
    workloads: set[tuple[Any, ...]] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Every workload of the ``held`` model asked of ``fit`` (fitted without it): the
    model's own pick (``prefer_tree_below`` 0) with its P(fastest), the tree's contender,
    what each measured there (``model_regret_pct`` / ``tree_pick_regret_pct``; NaN: not
    kept) and the least regret a pick not kept there can have (``regret_floor_pct``).
    ``workloads``: only those (world size, num_tokens, attention DP, CUDA graph) keys."""
    own = replace(fit, prefer_tree_below=0.0)
    mine = rows[rows[C.MODEL].astype(str) == held]
    out = []
    for key, truth in mine.groupby(list(WORKLOAD), observed=True):
        ws, t, adp, graph = int(key[0]), int(key[1]), bool(key[2]), bool(key[3])
        if workloads is not None and (ws, t, adp, graph) not in workloads:
            continue
        got = S.predict_shape(own, shape, quant, ws, t, adp, graph)
        if got.empty:
            continue
        measured = (
            pd.Series(as_float(truth[C.SCORE_MS]), index=truth[S.KIND]).groupby(level=0).min()
        )
        hit = S.tree_contender(got, own, shape, quant, ws, t, adp, graph)
        known = got[got[S.KIND].isin(measured.index)]
        log_truth = np.log(measured.loc[known[S.KIND]].to_numpy(float))
        inside = (log_truth >= np.log(known["lo_ms"].to_numpy(float)) - 1e-12) & (
            log_truth <= np.log(known["hi_ms"].to_numpy(float)) + 1e-12
        )
        out.append({
            C.MODEL: held, C.WORLD_SIZE: ws, C.NUM_TOKENS: t, C.ATTENTION_DP: adp,
            C.CUDA_GRAPH: graph, "measured": measured,
            "model_pick": str(got["config"].iat[0]), "p_fastest": float(got["p_fastest"].iat[0]),
            "model_regret_pct": _regret(measured, str(got[S.KIND].iat[0])),
            "tree_pick": None if hit is None else str(got["config"].iat[hit]),
            "tree_pick_regret_pct": np.nan if hit is None
            else _regret(measured, str(got[S.KIND].iat[hit])),
            "regret_floor_pct": 100.0 * (float(measured.max()) / float(measured.min()) - 1.0),
            "n_predicted": len(known), "n_covered": int(inside.sum()),
        })  # fmt: skip
    return out


def _tree_goes_first(table: pd.DataFrame, threshold: float) -> np.ndarray:
    """Where the tree's contender is the pick at ``threshold``: it exists and the model's
    own pick is less likely than ``threshold`` to be the fastest."""
    out: np.ndarray = table["tree_pick"].notna().to_numpy(bool) & (
        table["p_fastest"].to_numpy(float) < threshold
    )
    return out


def choose_threshold(table: pd.DataFrame) -> float:
    """The ``prefer_tree_below`` of :data:`THRESHOLDS` whose picks had the least p90
    regret on ``table`` (rows of :func:`_answers`: models held out of fits that never saw
    them), a pick the source did not keep counted at its least regret
    (``regret_floor_pct``); ties: the lower mean, then the higher threshold (the
    published rule when the data cannot tell). :data:`analysis.predict_shape.PREFER_TREE_BELOW`
    for an empty table."""
    if table.empty:
        return S.PREFER_TREE_BELOW
    floor = table["regret_floor_pct"].to_numpy(float)
    scores = []
    for threshold in THRESHOLDS:
        tree = _tree_goes_first(table, threshold)
        regret = np.where(tree, table["tree_pick_regret_pct"], table["model_regret_pct"])
        regret = np.where(np.isfinite(regret.astype(float)), regret, floor).astype(float)
        scores.append((float(np.quantile(regret, 0.9)), float(regret.mean()), -threshold))
    return -min(scores)[2]


def answer_threshold(table: pd.DataFrame) -> float:
    """The ``prefer_tree_below`` an answer of a (hardware, quant) slice uses, from the
    slice's leave-one-model-out rows (``table``: :func:`validate_models` of the stored
    models): :func:`choose_threshold` when each of its fits kept :data:`MIN_MODELS`
    models, else the a-priori ``analysis.predict_shape.PREFER_TREE_BELOW``."""
    if table.empty or table[C.MODEL].nunique() - 1 < MIN_MODELS:
        return S.PREFER_TREE_BELOW
    return choose_threshold(table)


def _slice(frame: pd.DataFrame, confidence: float) -> list[dict[str, Any]]:
    """Leave one model out of one (hardware, quant) slice, each held-out model's
    tie-break threshold chosen by :func:`answer_threshold` of its training models'
    answers (:func:`inner_plan`); the fits of :func:`slice_plan`, one at a time."""
    mask = S.answer_rows(frame)  # one routing pattern per model (a workload's key here)
    if mask is not None and not mask.all():
        frame = frame[mask].reset_index(drop=True)
    rows = S.slice_rows(frame)
    if rows.empty or rows[C.MODEL].nunique() < 2:
        return []
    tree = agreement_detail(frame)
    tree = (
        tree.set_index([C.MODEL, *WORKLOAD])["regret_pct"] if len(tree) else pd.Series(dtype=float)
    )
    shapes = {str(m): _shape(g) for m, g in rows.groupby(C.MODEL, observed=True)}
    quant = str(rows[C.QUANT].iloc[0])
    names = frame[C.MODEL].astype(str)
    keys = {m: [tuple(k) for k in g[list(WORKLOAD)].drop_duplicates().itertuples(index=False)]
            for m, g in rows.groupby(rows[C.MODEL].astype(str))}  # fmt: skip
    plan = slice_plan(shapes)
    outer = {(outer_train(shapes, m), m) for m in shapes}
    n_choosing = sum(len(asked) for asked in plan.values()) - len(outer)  # threshold-only
    table = {m: set(sample_workloads(keys[m], max(ROW_BUDGET // len(shapes), 1)))
             for m in shapes}  # fmt: skip
    most = max(THRESHOLD_BUDGET // max(n_choosing, 1), 1)
    choosing = {m: set(sample_workloads(keys[m], most)) for m in shapes}
    answers: dict[tuple[tuple[str, ...], str], list[dict[str, Any]]] = {}
    for train, asked in plan.items():  # one fit alive at a time
        fit = S.fit_shapes(frame[names.isin(train)], confidence)
        for m in asked:
            if (train, m) in outer:  # the table's rows (and a threshold's, for fold-mates)
                answers[(train, m)] = _answers(fit, rows, m, shapes[m], quant, table[m])
            else:  # a threshold's rows: no measured scores kept
                got = _answers(fit, rows, m, shapes[m], quant, choosing[m])
                answers[(train, m)] = [{k: v for k, v in r.items() if k != "measured"}
                                       for r in got]  # fmt: skip
        del fit

    out = []
    for held in sorted(shapes):
        inner = [{**r, C.MODEL: a} for train, answered in inner_plan(shapes, held)
                 for a in answered for r in answers[(train, a)]]  # fmt: skip
        threshold = answer_threshold(pd.DataFrame(inner))
        near = _nearest_model(shapes, held)
        theirs = rows[rows[C.MODEL].astype(str) == near]
        for r in answers[(outer_train(shapes, held), held)]:
            ws, t, adp, graph = (r[k] for k in WORKLOAD)
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
            by_tree = bool(_tree_goes_first(pd.DataFrame([r]), threshold)[0])
            tree_regret = tree.get((held, ws, t, adp, graph), np.nan) if len(tree) else np.nan
            out.append({
                C.HARDWARE: str(rows[C.HARDWARE].iloc[0]), C.QUANT: quant, C.MODEL: held,
                C.WORLD_SIZE: ws, C.NUM_TOKENS: t, C.ATTENTION_DP: adp, C.CUDA_GRAPH: graph,
                "pick": r["tree_pick"] if by_tree else r["model_pick"],
                "picked_by": "decision tree" if by_tree else "shape model",
                "prefer_tree_below": threshold,
                "p_fastest": r["p_fastest"],
                "regret_pct": r["tree_pick_regret_pct"] if by_tree else r["model_regret_pct"],
                "model_pick": r["model_pick"],
                "model_regret_pct": r["model_regret_pct"],
                "tree_pick": r["tree_pick"],
                "tree_pick_regret_pct": r["tree_pick_regret_pct"],
                "regret_floor_pct": r["regret_floor_pct"],
                "tree_regret_pct": float(tree_regret) if pd.notna(tree_regret) else np.nan,
                "nearest_model": near,
                "nearest_regret_pct": _regret(r["measured"], near_kind),
                "n_predicted": r["n_predicted"],
                "n_covered": r["n_covered"],
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
