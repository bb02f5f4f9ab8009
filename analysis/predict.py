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
  calibrate the band -- the error of exactly this kind of answer on this data. Only the
  :data:`MAX_INTERVALS` configurations that can be the pick (fastest by their curve or
  their neighbours) get one; the others keep the curve's point prediction (NaN band,
  P(fastest) 0): MAPIE's CV+ quantiles cost per row, and a slow configuration's band
  changes no answer;
* ``p_fastest``: the share of joint draws (``scipy.stats.norm``, log scale, each
  configuration's interval read as a normal band, drawn independently) in which a
  configuration is the fastest. The pick: see :func:`predict_workload`.

A workload group is one world size, routing pattern and **family** (attention DP or TP,
CUDA graph on or off): bench_moe's ``num_tokens`` is a global count under attention DP
and every rank's count under attention TP, and decode (graph) and prefill (eager) are
different phases, so configurations are only ranked against their own family.

A token count the group measured is answered from the measurements (``kind``
"measured"), never blurred with a prediction. Where the measured neighbours below and
above have different winners, the answer names both, the crossover between them (where
their log-log segments cross, when both were measured at both neighbours; unknown when a
source that keeps only its top configurations dropped one) and the bench_moe command
that settles it. Validation lives in :mod:`analysis.predict_validate`.

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
from analysis.crossval_sweeps import bench_command, family_modes
from analysis.derived import as_float, group_codes
from analysis.identity import CONFIG_COLUMNS, configuration_frame, default_dispatch, present
from analysis.neighbours import neighbour_estimate
from analysis.predict_curves import LogLogCurves, same_regime

TOP_KEPT = 3  # a source keeping at most this many configurations per count is top-k
MAX_INTERVALS = 32  # configurations given an interval and P(fastest) per answer
MIN_POINTS = 3  # token counts a configuration needs to be predicted (2 left when one is held out)
CONFIDENCE = 0.9
N_DRAWS = 4000

KIND, PRED_MS, LO_MS, HI_MS = "kind", "score_ms", "lo_ms", "hi_ms"
P_FASTEST, N_POINTS, CONFIG = "p_fastest", "n_token_counts", "config"
MEASURED, PREDICTED = "measured", "predicted"
BRACKETED = "picked"  # the pick (sorted first)
NEIGHBOUR_MS = "neighbour_ms"  # log-log between the measured neighbours (censored: bound)


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
    attention_dp: bool | None = None
    cuda_graph: bool | None = None
    split: dict[str, Any] | None = None  # the neighbours disagree (:func:`split_neighbours`)


def _flag(rows: pd.DataFrame, col: str) -> np.ndarray:
    """A boolean column as object values (True / False / None), missing column: None."""
    if col not in rows:
        return np.full(len(rows), None, dtype=object)
    values = rows[col].astype(object).to_numpy()
    return np.array([None if pd.isna(v) else bool(v) for v in values], dtype=object)


def family(
    rows: pd.DataFrame, attention_dp: bool | None = None, cuda_graph: bool | None = None
) -> tuple[bool | None, bool | None]:
    """The family (attention DP, CUDA graph) of a group's rows: the asked values, else
    the one present, preferring attention DP and CUDA graph on (decode) when several are."""
    out: list[bool | None] = []
    for col, asked in ((C.ATTENTION_DP, attention_dp), (C.CUDA_GRAPH, cuda_graph)):
        present_values = {v for v in _flag(rows, col)}
        if asked is not None:
            out.append(asked)
        elif True in present_values:
            out.append(True)
        elif False in present_values:
            out.append(False)
        else:
            out.append(None)
    return out[0], out[1]


def in_family(rows: pd.DataFrame, attention_dp: bool | None, cuda_graph: bool | None) -> np.ndarray:
    """Rows of the family (a None side of the family, or a row that does not say, matches)."""
    ok = np.ones(len(rows), dtype=bool)
    for col, want in ((C.ATTENTION_DP, attention_dp), (C.CUDA_GRAPH, cuda_graph)):
        if want is not None:
            ok &= np.array([v is None or v == want for v in _flag(rows, col)], dtype=bool)
    return ok


def group_frame(
    frame: pd.DataFrame,
    world_size: int,
    dispatch: str | None,
    attention_dp: bool | None = None,
    cuda_graph: bool | None = None,
) -> pd.DataFrame:
    """The configuration frame of one workload group of a cell's candidate frame:
    rankable rows of ``world_size``, ``dispatch`` (default: the cell's default routing
    pattern at that world size) and the :func:`family`, repeats pooled."""
    if not len(frame):
        return frame
    # a mask over the frame, not copies of it (a cell of a year is ~1M rows; a group is
    # read in place by configuration_frame's rows=)
    rows = as_float(frame[C.WORLD_SIZE]) == world_size
    if C.DISPATCH in frame and rows.any():
        chosen = dispatch or default_dispatch(frame[C.DISPATCH][rows])
        if chosen is not None:
            rows &= (frame[C.DISPATCH].astype(object) == chosen).to_numpy(dtype=bool)
    if rows.any():
        flags = frame[[c for c in (C.ATTENTION_DP, C.CUDA_GRAPH) if c in frame]][rows]
        rows[rows] = in_family(flags, *family(flags, attention_dp, cuda_graph))
    return configuration_frame(frame, rows=rows) if rows.any() else frame[rows]


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
    attention_dp: bool | None = None
    cuda_graph: bool | None = None
    curves: Any = None  # LogLogCurves on every training row: point predictions


def fit_group(
    frame: pd.DataFrame,
    world_size: int,
    dispatch: str | None = None,
    confidence: float = CONFIDENCE,
    attention_dp: bool | None = None,
    cuda_graph: bool | None = None,
) -> GroupModel:
    """The curves and conformal intervals of one workload group of a cell's candidate
    frame (fitted once, asked at any token count by :func:`predict_workload`)."""
    group = group_frame(frame, world_size, dispatch, attention_dp, cuda_graph)
    chosen = None if group.empty else str(group[C.DISPATCH].iloc[0])
    adp, graph = family(group, attention_dp, cuda_graph) if len(group) else (None, None)
    train, code, lx = _curves(group)
    model = curves = None
    if _enough(train, lx, confidence):
        y = np.log(as_float(train[C.SCORE_MS]))
        model = _conformal(code, lx, y, confidence)
        curves = LogLogCurves().fit(np.c_[code, lx], y)
    labels = config_label(group).to_numpy() if len(group) else np.zeros(0, dtype=object)
    return GroupModel(group, world_size, chosen, train, code, model, confidence, labels,
                      adp, graph, curves)  # fmt: skip


def split_neighbours(
    group: pd.DataFrame, labels: np.ndarray, num_tokens: int
) -> dict[str, Any] | None:
    """Where the measured neighbours below and above ``num_tokens`` have different
    winners: both (token count, winner, its score there and, when measured, the other
    winner's), ``crossover_tokens`` -- where the two winners' log-log segments cross
    (None when a winner was not measured at the other neighbour: a source that keeps
    only its top configurations dropped it) -- and the bench_moe ``command`` measuring
    the token counts in between. None when the winners agree or a side is missing."""
    tokens, score = as_float(group[C.NUM_TOKENS]), as_float(group[C.SCORE_MS])
    lower, upper = tokens[tokens < num_tokens], tokens[tokens > num_tokens]
    if not len(lower) or not len(upper):
        return None
    t0, t1 = float(lower.max()), float(upper.min())
    at0, at1 = np.flatnonzero(tokens == t0), np.flatnonzero(tokens == t1)
    w0, w1 = at0[np.argmin(score[at0])], at1[np.argmin(score[at1])]
    if labels[w0] == labels[w1]:
        return None

    def score_of(label: str, at: np.ndarray) -> float | None:
        hit = at[labels[at] == label]
        return float(score[hit].min()) if len(hit) else None

    sides = []
    for t, w, at in ((t0, w0, at0), (t1, w1, at1)):
        rival = labels[w1] if t == t0 else labels[w0]
        sides.append({"num_tokens": int(t), "best": str(labels[w]), "best_ms": float(score[w]),
                      "other_ms": score_of(str(rival), at)})  # fmt: skip
    crossover = None
    a0, b1 = float(score[w0]), float(score[w1])
    b0, a1 = score_of(str(labels[w1]), at0), score_of(str(labels[w0]), at1)
    if a1 is not None and b0 is not None:
        d0, d1 = np.log(a0) - np.log(b0), np.log(a1) - np.log(b1)  # winner below minus above's
        if d1 != d0:
            x = np.log(t0) + (np.log(t1) - np.log(t0)) * (-d0) / (d1 - d0)
            crossover = float(np.exp(np.clip(x, np.log(t0), np.log(t1))))
    first = group.iloc[0]
    adp = (
        bool(first[C.ATTENTION_DP])
        if C.ATTENTION_DP in group and pd.notna(first[C.ATTENTION_DP])
        else True
    )
    between = np.unique(np.rint(np.geomspace(t0, t1, 5)[1:-1])).astype(int)
    points = sorted({int(num_tokens), *(int(v) for v in between)} - {int(t0), int(t1)})
    command = None
    if all(k in group for k in (C.MODEL, C.HARDWARE, C.QUANT)):
        modes = family_modes(int(as_float(group[C.WORLD_SIZE])[0]), adp)
        key = {k: first[k] for k in (C.MODEL, C.HARDWARE, C.QUANT, C.WORLD_SIZE)}
        key[C.CUDA_GRAPH] = (
            bool(first[C.CUDA_GRAPH])
            if C.CUDA_GRAPH in group and pd.notna(first[C.CUDA_GRAPH])
            else True
        )
        key[C.ATTENTION_DP] = adp
        command = bench_command(key, points, modes)
    return {"below": sides[0], "above": sides[1], "crossover_tokens": crossover,
            "command": command}  # fmt: skip


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


def top_kept(group: pd.DataFrame) -> int | None:
    """How many configurations per token count the source kept, when it looks like a
    top-k source (every count has at most :data:`TOP_KEPT` rows: NVIDIA's dashboard keeps
    3); None for a full sweep."""
    if group.empty:
        return None
    per = pd.Series(as_float(group[C.NUM_TOKENS])).value_counts()
    return int(per.max()) if per.max() <= TOP_KEPT else None


def predict_workload(
    frame: pd.DataFrame,
    num_tokens: int,
    world_size: int,
    dispatch: str | None = None,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    fitted: GroupModel | None = None,
    attention_dp: bool | None = None,
    cuda_graph: bool | None = None,
) -> Prediction:
    """Each configuration's score at ``num_tokens`` on ``world_size`` (module
    docstring); ``fitted``: the group's :func:`fit_group` (fitted here when None). The
    pick is the smallest predicted score among the configurations whose curve is
    :func:`bracketed` at ``num_tokens``: a curve across a wider gap than the group's
    misses what happened in it (column ``bracketed``). When none is (a source keeping
    only its top configurations measured no configuration at both neighbours), the pick
    falls back to the nearest measured neighbour's winner, and a note says so.
    Neighbours and brackets are taken within the asked count's regime
    (``analysis.predict_curves.idle_ranks``): under attention DP a count below the world
    size is not interpolated with one above it, it is extrapolated from its own side (a
    note says so, and the verdict is *measure first*)."""
    fit = fitted or fit_group(frame, world_size, dispatch, confidence, attention_dp, cuda_graph)
    group, chosen, conf = fit.group, fit.dispatch, fit.confidence
    fam: dict[str, Any] = {"attention_dp": fit.attention_dp, "cuda_graph": fit.cuda_graph}
    empty = pd.DataFrame(columns=[CONFIG, KIND, PRED_MS, LO_MS, HI_MS, P_FASTEST, N_POINTS])
    if group.empty:
        notes = [f"nothing measured at world size {world_size} in this family"]
        return Prediction(empty, None, False, num_tokens, world_size, chosen, None, None,
                          conf, notes, **fam)  # fmt: skip
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
                          below, above, conf, [], **fam)  # fmt: skip
    split = split_neighbours(group, fit.labels, num_tokens)
    if fit.model is None:
        notes = [f"too few configurations with {MIN_POINTS} measured token counts here"]
        return Prediction(empty, None, False, num_tokens, world_size, chosen, below, above,
                          conf, notes, **fam, split=split)  # fmt: skip
    code, train = fit.code, fit.train
    first = np.unique(code, return_index=True)[1]
    rows = train.iloc[first][cols].reset_index(drop=True)
    rows[CONFIG] = fit.labels[train.index.to_numpy()[first]]
    labels = rows[CONFIG].to_numpy()
    censored = top_kept(group) is not None
    # neighbours and brackets from the asked count's own regime (predict_curves.idle_ranks)
    same = same_regime(tokens, num_tokens, world_size, fit.attention_dp)
    near = neighbour_estimate(tokens[same], as_float(group[C.SCORE_MS])[same],
                              fit.labels[same], labels, num_tokens, censored)  # fmt: skip
    at = float(np.log(num_tokens))
    pred = fit.curves.predict(np.c_[code[first], np.full(len(first), at)])
    # intervals and P(fastest) for the configurations that can be the pick: the
    # MAX_INTERVALS fastest by their curve or their neighbours (the rest: P(fastest) 0)
    if np.isfinite(near).any():  # between two measured counts: the neighbours decide
        ok = near == np.nanmin(near)
    else:
        train_tokens = as_float(train[C.NUM_TOKENS])
        mine = same_regime(train_tokens, num_tokens, world_size, fit.attention_dp)
        ok = bracketed(train_tokens[mine], code[mine], code[first], num_tokens)
        ok &= pred == pred[ok].min() if ok.any() else ok
    key = np.where(np.isfinite(near), np.fmin(near, pred), pred)
    top = np.union1d(np.argsort(key, kind="mergesort")[:MAX_INTERVALS], np.flatnonzero(ok))
    lo, hi, chance = np.full(len(first), np.nan), np.full(len(first), np.nan), np.zeros(len(first))
    pred[top], lo[top], hi[top] = _intervals(fit.model, code[first][top], at)
    chance[top] = p_fastest(pred[top], lo[top], hi[top], conf, seed)
    rows[KIND] = PREDICTED
    rows[PRED_MS], rows[LO_MS], rows[HI_MS] = np.exp(pred), np.exp(lo), np.exp(hi)
    rows[P_FASTEST] = chance
    rows[N_POINTS] = np.bincount(code)[code[first]]
    rows[NEIGHBOUR_MS] = np.exp(near)
    notes = []
    if censored:
        notes.append(
            f"top {top_kept(group)} configurations per token count only: a configuration "
            "missing at a neighbour counts as the slowest kept there"
        )
    if not ok.any():
        ok = fallback(rows[CONFIG].to_numpy(), below, above, num_tokens)
        notes.append("no configuration was measured at both neighbouring token counts (a "
                     "source keeping only its top configurations): the pick is the nearest "
                     "measured neighbour's winner")  # fmt: skip
    rows[BRACKETED] = ok
    rows = rows.sort_values([BRACKETED, PRED_MS], ascending=[False, True], kind="mergesort")
    rows = rows.reset_index(drop=True)
    if num_tokens < tokens.min() or num_tokens > tokens.max():
        notes.append("beyond the measured token counts: extrapolated")
    crossed = [n[0] for n in (below, above) if n is not None and not same[tokens == n[0]].any()]
    if crossed:
        notes.append(f"under attention DP fewer than {world_size} tokens leave ranks idle, "
                     f"another regime: the neighbour at {crossed[0]} tokens is not "
                     "interpolated across; extrapolated from this side")  # fmt: skip
    return Prediction(rows, str(rows[CONFIG].iat[0]), False, num_tokens, world_size, chosen,
                      below, above, conf, notes, **fam, split=split)  # fmt: skip


def fallback(
    labels: np.ndarray,
    below: tuple[int, str] | None,
    above: tuple[int, str] | None,
    num_tokens: float,
) -> np.ndarray:
    """The configurations a pick may fall back to when no curve is bracketed: the winner
    of the nearest measured neighbour in log distance (the lower one on a tie: a smaller
    batch's winner is the safer side of a launch-bound to bandwidth-bound switch), else
    any (when the winner has no curve)."""
    sides = [s for s in (below, above) if s is not None]
    if not sides:
        return np.ones(len(labels), dtype=bool)
    near = min(sides, key=lambda s: (abs(np.log(s[0]) - np.log(num_tokens)), s[0]))
    ok = labels == near[1]
    return ok if ok.any() else np.ones(len(labels), dtype=bool)
