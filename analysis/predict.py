"""Answers between and beyond the measurements: each configuration's score at a token
count the cell has not measured, with an interval, the probability that it is the
fastest, and the pick -- and how wrong such answers have been on this very data.

The method, on one cell's candidate frame (``analysis.identity.configuration_frame``:
repeats pooled by their median) and one workload group (world size x routing pattern):

* each configuration measured at :data:`MIN_POINTS` or more token counts is a curve of
  ``log(score_ms)`` over ``log(num_tokens)``, interpolated piecewise and extended with
  a clipped slope beyond its range (:class:`analysis.predict_curves.LogLogCurves`);
* the interval is conformal (MAPIE ``CrossConformalRegressor``, CV+ with
  ``LeaveOneGroupOut`` over token counts): every token count of the group is left out in
  turn, the curves refitted without it, and the residuals at the left-out count
  calibrate the band -- the error of exactly this kind of answer on this data;
* ``p_fastest``: the share of joint draws (``scipy.stats.norm``, log scale, each
  configuration's interval read as a normal band, drawn independently) in which a
  configuration is the fastest. The pick is the smallest predicted score.

A token count the group measured is answered from the measurements (``kind``
"measured"), never blurred with a prediction. :func:`validate` holds out each measured
token count in turn (held out from the fit *and* from the calibration), predicts it and
scores the pick's regret against the measured best, the intervals' coverage, and the
nearest-measured-workload answer (the fastest at the nearest token count in log
distance, the upper one on a tie) for comparison.

Pure and deterministic (``seed`` fixes the draws); inputs are not modified.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from mapie.regression import CrossConformalRegressor
from scipy import stats
from sklearn.model_selection import LeaveOneGroupOut

from analysis import columns as C
from analysis.config_labels import config_label
from analysis.derived import as_float, group_codes
from analysis.identity import CONFIG_COLUMNS, configuration_frame, default_dispatch, present
from analysis.predict_curves import LogLogCurves

MIN_POINTS = 3  # token counts a configuration needs to be predicted (2 left when one is held out)
CONFIDENCE = 0.9
N_DRAWS = 4000

KIND, PRED_MS, LO_MS, HI_MS = "kind", "score_ms", "lo_ms", "hi_ms"
P_FASTEST, N_POINTS, CONFIG = "p_fastest", "n_token_counts", "config"
MEASURED, PREDICTED = "measured", "predicted"
BRACKETED = "bracketed"


@dataclass(frozen=True)
class Prediction:
    """One workload's answer: ``rows`` (one per configuration: configuration columns,
    ``config``, ``kind``, ``score_ms``, ``lo_ms``, ``hi_ms``, ``p_fastest``,
    ``n_token_counts``; fastest first), the ``pick`` (its config label, None when
    nothing could be answered), whether the token count was ``measured``, the measured
    neighbours below and above (token count and their fastest configuration, None at an
    edge) and the confidence of the intervals."""

    rows: pd.DataFrame
    pick: str | None
    measured: bool
    num_tokens: int
    world_size: int
    dispatch: str | None
    below: tuple[int, str] | None
    above: tuple[int, str] | None
    confidence: float
    notes: list[str] = field(default_factory=list)


def group_frame(frame: pd.DataFrame, world_size: int, dispatch: str | None) -> pd.DataFrame:
    """The configuration frame of one workload group of a cell's candidate frame:
    rankable rows of ``world_size`` and ``dispatch`` (default: the cell's default
    routing pattern at that world size), repeats pooled."""
    rows = frame[as_float(frame[C.WORLD_SIZE]) == world_size] if len(frame) else frame
    if C.DISPATCH in rows and len(rows):
        chosen = dispatch or default_dispatch(rows[C.DISPATCH])
        if chosen is not None:
            rows = rows[rows[C.DISPATCH].astype(object) == chosen]
    return configuration_frame(rows) if len(rows) else rows


def _curves(group: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The group's configurations measured at >= MIN_POINTS token counts: their rows,
    each row's configuration code and log token count."""
    cols = present(group, CONFIG_COLUMNS)
    code = group_codes(group[cols], cols) if len(group) else np.zeros(0, np.int64)
    counts = pd.Series(as_float(group[C.NUM_TOKENS])).groupby(code).nunique().to_numpy()
    keep = counts[code] >= MIN_POINTS if len(code) else np.zeros(0, bool)
    rows = group[keep]  # index kept: the rows' positions in the group
    return rows, code[keep], np.log(as_float(rows[C.NUM_TOKENS]))


def _enough(train: pd.DataFrame, lx: np.ndarray, conf: float) -> bool:
    """Whether ``train`` can be fitted and calibrated: MIN_POINTS token counts, and more
    conformity scores than ``1 / (1 - conf)`` (MAPIE's floor for that confidence)."""
    floor = int(np.ceil(1.0 / (1.0 - conf))) + 1
    return len(train) >= floor and len(np.unique(lx)) >= MIN_POINTS


def _conformal(code: np.ndarray, lx: np.ndarray, y: np.ndarray, conf: float) -> Any:
    model = CrossConformalRegressor(
        LogLogCurves(), confidence_level=conf, method="plus", cv=LeaveOneGroupOut()
    )
    return model.fit_conformalize(np.c_[code, lx], y, groups=np.round(lx, 9))


def _intervals(
    model: Any, code: np.ndarray, at: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.c_[code, np.full(len(code), at)]
    pred, pis = model.predict_interval(x)
    return np.asarray(pred, float), pis[:, 0, 0].astype(float), pis[:, 1, 0].astype(float)


def p_fastest(
    log_pred: np.ndarray, log_lo: np.ndarray, log_hi: np.ndarray, conf: float, seed: int
) -> np.ndarray:
    """Per configuration, the share of joint normal draws (module docstring) in which
    it is the fastest."""
    if not len(log_pred):
        return np.zeros(0)
    z = float(stats.norm.ppf(0.5 + conf / 2))
    scale = np.maximum((log_hi - log_lo) / (2 * z), 1e-9)
    draws = stats.norm.rvs(
        loc=log_pred, scale=scale, size=(N_DRAWS, len(log_pred)), random_state=seed
    )
    wins = np.bincount(np.argmin(draws, axis=1), minlength=len(log_pred))
    out: np.ndarray = wins / N_DRAWS
    return out


def _neighbours(group: pd.DataFrame, labels: np.ndarray, num_tokens: int) -> tuple[Any, Any]:
    tokens = as_float(group[C.NUM_TOKENS])
    score = as_float(group[C.SCORE_MS])
    out: list[Any] = []
    lower, upper = tokens[tokens < num_tokens], tokens[tokens > num_tokens]
    for t in (lower.max() if len(lower) else None, upper.min() if len(upper) else None):
        if t is None:
            out.append(None)
            continue
        at = np.flatnonzero(tokens == t)
        out.append((int(t), str(labels[at[np.argmin(score[at])]])))
    return out[0], out[1]


@dataclass(frozen=True)
class GroupModel:
    """One workload group's fitted curves and conformal intervals (:func:`fit_group`):
    its configuration frame, routing pattern, the rows the curves were fitted on, their
    configuration codes and the MAPIE model (None when no configuration has
    :data:`MIN_POINTS` token counts)."""

    group: pd.DataFrame
    world_size: int
    dispatch: str | None
    train: pd.DataFrame
    code: np.ndarray
    model: Any
    confidence: float
    labels: np.ndarray  # the group's config labels, row by row


def fit_group(
    frame: pd.DataFrame,
    world_size: int,
    dispatch: str | None = None,
    confidence: float = CONFIDENCE,
) -> GroupModel:
    """The curves and conformal intervals of one workload group of a cell's candidate
    frame (fitted once, asked at any token count by :func:`predict_workload`)."""
    group = group_frame(frame, world_size, dispatch)
    chosen = None if group.empty else str(group[C.DISPATCH].iloc[0])
    train, code, lx = _curves(group)
    model = None
    if _enough(train, lx, confidence):
        model = _conformal(code, lx, np.log(as_float(train[C.SCORE_MS])), confidence)
    labels = config_label(group).to_numpy() if len(group) else np.zeros(0, dtype=object)
    return GroupModel(group, world_size, chosen, train, code, model, confidence, labels)


def bracketed(tokens: np.ndarray, code: np.ndarray, query: np.ndarray, t: float) -> np.ndarray:
    """Per configuration code of ``query``: measured at the group's nearest measured
    token count below ``t`` and at the nearest above (those that exist) -- its curve at
    ``t`` spans no wider gap than the group's own. ``tokens`` and ``code`` are the
    group's measured rows."""
    ok = np.ones(len(query), dtype=bool)
    lower, upper = tokens[tokens < t], tokens[tokens > t]
    for x in (lower.max() if len(lower) else None, upper.min() if len(upper) else None):
        if x is not None:
            ok &= np.isin(query, code[tokens == x])
    return ok


def predict_workload(
    frame: pd.DataFrame,
    num_tokens: int,
    world_size: int,
    dispatch: str | None = None,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    fitted: GroupModel | None = None,
) -> Prediction:
    """Each configuration's score at ``num_tokens`` on ``world_size`` (module
    docstring); ``fitted``: the group's :func:`fit_group` (fitted here when None). The
    pick is the smallest predicted score among the configurations whose curve is
    :func:`bracketed` at ``num_tokens`` (all of them when none is): a curve across a
    wider gap than the group's misses what happened in it (column ``bracketed``)."""
    fit = fitted or fit_group(frame, world_size, dispatch, confidence)
    group, chosen, conf = fit.group, fit.dispatch, fit.confidence
    empty = pd.DataFrame(columns=[CONFIG, KIND, PRED_MS, LO_MS, HI_MS, P_FASTEST, N_POINTS])
    if group.empty:
        notes = [f"nothing measured at world size {world_size}"]
        return Prediction(empty, None, False, num_tokens, world_size, chosen, None, None,
                          conf, notes)  # fmt: skip
    tokens = as_float(group[C.NUM_TOKENS])
    below, above = _neighbours(group, fit.labels, num_tokens)
    cols = present(group, CONFIG_COLUMNS)
    if (tokens == num_tokens).any():
        rows = group[tokens == num_tokens][cols].reset_index(drop=True)
        score = as_float(group.loc[tokens == num_tokens, C.SCORE_MS])
        rows[CONFIG] = fit.labels[tokens == num_tokens]
        rows[KIND], rows[PRED_MS], rows[LO_MS], rows[HI_MS] = MEASURED, score, score, score
        rows[P_FASTEST], rows[N_POINTS] = np.nan, 1
        rows = rows.sort_values(PRED_MS, kind="mergesort").reset_index(drop=True)
        return Prediction(rows, str(rows[CONFIG].iat[0]), True, num_tokens, world_size, chosen,
                          below, above, conf)  # fmt: skip
    if fit.model is None:
        notes = [f"too few configurations with {MIN_POINTS} measured token counts here"]
        return Prediction(empty, None, False, num_tokens, world_size, chosen, below, above,
                          conf, notes)  # fmt: skip
    code, train = fit.code, fit.train
    first = np.unique(code, return_index=True)[1]
    rows = train.iloc[first][cols].reset_index(drop=True)
    pred, lo, hi = _intervals(fit.model, code[first], float(np.log(num_tokens)))
    rows[CONFIG] = fit.labels[train.index.to_numpy()[first]]
    rows[KIND] = PREDICTED
    rows[PRED_MS], rows[LO_MS], rows[HI_MS] = np.exp(pred), np.exp(lo), np.exp(hi)
    rows[P_FASTEST] = p_fastest(pred, lo, hi, conf, seed)
    rows[N_POINTS] = np.bincount(code)[code[first]]
    ok = bracketed(as_float(train[C.NUM_TOKENS]), code, code[first], num_tokens)
    rows[BRACKETED] = ok if ok.any() else np.ones(len(ok), dtype=bool)
    rows = rows.sort_values([BRACKETED, PRED_MS], ascending=[False, True], kind="mergesort")
    rows = rows.reset_index(drop=True)
    notes = []
    if num_tokens < tokens.min() or num_tokens > tokens.max():
        notes.append("beyond the measured token counts: extrapolated")
    return Prediction(rows, str(rows[CONFIG].iat[0]), False, num_tokens, world_size, chosen,
                      below, above, conf, notes)  # fmt: skip


def _held_out(group: pd.DataFrame, t: float, conf: float) -> dict[str, Any] | None:
    """One left-out token count ``t`` of a group: the predicted pick's regret, the
    nearest-workload pick's, and the intervals' coverage (None when fewer than two
    configurations can be predicted there)."""
    tokens = as_float(group[C.NUM_TOKENS])
    at = group[tokens == t]
    rest = group[tokens != t]
    train, code, lx = _curves(rest)
    if not _enough(train, lx, conf):
        return None
    cols = present(group, CONFIG_COLUMNS)
    allc = group_codes(pd.concat([train[cols], at[cols]], ignore_index=True), cols)
    known = np.isin(allc[len(train) :], allc[: len(train)])
    if known.sum() < 2:
        return None
    model = _conformal(allc[: len(train)], lx, np.log(as_float(train[C.SCORE_MS])), conf)
    pred, lo, hi = _intervals(model, allc[len(train) :][known], float(np.log(t)))
    truth = np.log(as_float(at[C.SCORE_MS]))
    best = float(np.exp(truth.min()))
    ok = bracketed(as_float(train[C.NUM_TOKENS]), allc[: len(train)], allc[len(train) :][known], t)
    choice = np.where(ok | ~ok.any(), pred, np.inf)
    picked = float(np.exp(truth[known][np.argmin(choice)]))
    # the nearest measured token count (log distance, the upper one on a tie)
    others = np.unique(as_float(rest[C.NUM_TOKENS]))
    dist = np.abs(np.log(others) - np.log(t))
    near = others[np.flatnonzero(dist == dist.min()).max()]
    there = rest[as_float(rest[C.NUM_TOKENS]) == near]
    pick_near = there.iloc[[int(np.argmin(as_float(there[C.SCORE_MS])))]][cols]
    keys = group_codes(pd.concat([at[cols], pick_near], ignore_index=True), cols)
    hit = np.flatnonzero(keys[: len(at)] == keys[-1])
    near_ms = float(np.exp(truth[hit[0]])) if len(hit) else np.nan
    inside = (truth[known] >= lo - 1e-12) & (truth[known] <= hi + 1e-12)
    return {
        C.NUM_TOKENS: int(t),
        "n_predicted": int(known.sum()),
        "n_measured": len(at),
        "regret_pct": 100.0 * (picked / best - 1.0),
        "nearest_tokens": int(near),
        "nearest_regret_pct": 100.0 * (near_ms / best - 1.0),
        "n_covered": int(inside.sum()),
        "edge": bool(t < others.min() or t > others.max()),
    }


def validate(frame: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Leave-one-token-count-out validation of a cell's candidate frame: one row per
    (world size, routing pattern, held-out token count) that could be predicted, with
    ``regret_pct`` (the predicted pick against the measured best there),
    ``nearest_regret_pct`` (NaN when the nearest workload's winner was not measured at
    the held-out count), ``n_predicted`` / ``n_covered`` (configurations predicted, and
    whose measured score fell inside the interval) and ``edge`` (the count was beyond
    the others: extrapolation)."""
    out = []
    ready = configuration_frame(frame) if len(frame) else frame
    if ready.empty:
        return pd.DataFrame()
    parts = ready.groupby([C.WORLD_SIZE, C.DISPATCH], sort=True, observed=True, dropna=False)
    for (ws, dispatch), group in parts:
        group = group.reset_index(drop=True)
        for t in np.unique(as_float(group[C.NUM_TOKENS])):
            got = _held_out(group, float(t), confidence)
            if got is not None:
                out.append({C.WORLD_SIZE: int(ws), C.DISPATCH: dispatch, **got})
    return pd.DataFrame(out)


def summarize(table: pd.DataFrame) -> dict[str, Any]:
    """The validation's headline numbers: held-out queries, median / p90 / worst regret
    of the predicted pick and of the nearest-workload answer (%), and coverage (share of
    held-out scores inside their interval)."""
    if table.empty:
        return {"n_queries": 0}
    out: dict[str, Any] = {"n_queries": len(table)}
    for name, col in (("predicted", "regret_pct"), ("nearest", "nearest_regret_pct")):
        vals = table[col].dropna().to_numpy(float)
        out[name] = {
            "n": len(vals),
            "median_regret_pct": float(np.median(vals)) if len(vals) else None,
            "p90_regret_pct": float(np.quantile(vals, 0.9)) if len(vals) else None,
            "worst_regret_pct": float(vals.max()) if len(vals) else None,
            "wrong_picks": int((vals > 0).sum()),
        }
    out["coverage"] = float(table["n_covered"].sum() / table["n_predicted"].sum())
    return out
