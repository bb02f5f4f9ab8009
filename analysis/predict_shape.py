"""Answers for a model or world size the store has not measured: one model across shapes.

A configuration's score on a GPU and quant is explained by what one rank has to do, so
the model reads every measured row of a (hardware, quant) slice -- all models, all world
sizes -- through physically meaningful features, in natural logs:

* ``activated tokens per rank`` (``analysis.derived``: num_tokens x top_k / world size
  under attention DP, / moe_ep_size under attention TP);
* ``FLOPs per rank``: activated tokens per rank x 6 x hidden x intermediate / moe_tp_size
  (gate, up and down projections, 2 FLOPs a multiply-add);
* ``weight bytes read per rank``: the rank's experts (num_experts / moe_ep_size) times
  the share of experts a batch touches (1 - exp(-tokens x top_k / num_experts), tokens
  routed uniformly) x 3 x hidden x intermediate / moe_tp_size x bytes per element;
* ``dispatch volume per rank``: activated tokens per rank x hidden;
* the world size.

Each configuration **kind** (backend, comm, layout -- pure EP, pure TP or TP k x EP --,
attention DP or TP, CUDA graph) has its own intercept and its own slopes on those
features (scikit-learn ``Ridge`` over kind-by-feature interactions, lightly shrunk
towards the common slopes). Intervals are conformal (MAPIE ``CrossConformalRegressor``,
CV+ leaving one **model** out): the band is the error of predicting a model the fit did
not see. A world size the store lacks is answered by the same fit for the cell's own
shape (the kinds re-laid out for that world size). Where the model's pick is less likely
than the fit's ``prefer_tree_below`` to be the fastest and the guide's decision tree
names a contender, the tree's goes first (``picked_by``): the published rule breaks what
the model cannot tell apart. The threshold (the fit's ``prefer_tree_below``) is chosen
by leaving one stored model out when each such fit keeps two models
(``analysis.predict_shape_validate.answer_threshold``); else it is the a-priori
:data:`PREFER_TREE_BELOW`: the model overrides the published rule only where its own
pick would earn *deploy*.

Pure and deterministic; inputs are not modified.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from mapie.regression import CrossConformalRegressor
from sklearn.model_selection import LeaveOneGroupOut

from analysis import columns as C
from analysis.capabilities import measured_capabilities, measured_mnnvl, mnnvl_at
from analysis.confidence import SURE
from analysis.derived import as_float
from analysis.identity import configuration_frame, default_dispatch
from analysis.kind_ridge import KindRidge, mean_ridge
from analysis.neighbours import neighbour_estimate
from analysis.tree import Deployment, recommend

FEATURES = ("log_tokens_rank", "log_flops_rank", "log_weight_bytes_rank", "log_dispatch_rank",
            "log_world_size")  # fmt: skip
SHAPE = (C.NUM_EXPERTS, C.TOP_K, C.HIDDEN_SIZE, C.INTERMEDIATE_SIZE)
KIND = "kind"
CONFIDENCE = 0.9
# rows the regression and its conformal scores read (fit_shapes); the bench slice of 17
# models x 112 workloads x 60 kinds (28,560 rows) is under it
MAX_FIT_ROWS = 30_000
SHAPE_SCALE = 0.1  # a model's weight in the local correction: 1 / (this + shape distance)
# a priori: the model overrides the published tree only where its pick would earn the
# verdict *deploy* (P(fastest) >= analysis.confidence.SURE, "as good as measured")
PREFER_TREE_BELOW = SURE


@dataclass(frozen=True)
class Shape:
    """A model as the shape model sees it."""

    num_experts: int
    top_k: int
    hidden_size: int
    intermediate_size: int


def layout(ep: np.ndarray, tp: np.ndarray) -> np.ndarray:
    """ "EP" (moe_tp_size 1), "TP" (moe_ep_size 1) or "TP<k>" (a hybrid of TP k)."""
    return np.where(
        tp <= 1, "EP", np.where(ep <= 1, "TP", np.char.add("TP", tp.astype(int).astype(str)))
    )


def kinds(frame: pd.DataFrame) -> np.ndarray:
    """Each row's configuration kind (module docstring), as text."""
    ep, tp = as_float(frame[C.MOE_EP_SIZE]), as_float(frame[C.MOE_TP_SIZE])
    adp = frame[C.ATTENTION_DP].astype(object).to_numpy()
    graph = frame[C.CUDA_GRAPH].astype(object).to_numpy()
    parts = [frame[C.BACKEND].astype(str).to_numpy(), frame[C.COMM].astype(str).to_numpy(),
             layout(ep, tp), np.where(adp == True, "D", "T"),  # noqa: E712
             np.where(graph == False, "eager", "graph")]  # noqa: E712  # fmt: skip
    out: np.ndarray = np.char.add(parts[0], "|")
    for p in parts[1:]:
        out = np.char.add(np.char.add(out, p), "|")
    return out


def features(frame: pd.DataFrame) -> pd.DataFrame:
    """The :data:`FEATURES` of each row (needs the shape, quant, world size, num_tokens,
    attention DP, moe_ep_size and moe_tp_size columns). NaN where a value is missing or
    the quant has no known byte size."""
    n, k = as_float(frame[C.NUM_TOKENS]), as_float(frame[C.TOP_K])
    e, h, i = (
        as_float(frame[C.NUM_EXPERTS]),
        as_float(frame[C.HIDDEN_SIZE]),
        as_float(frame[C.INTERMEDIATE_SIZE]),
    )
    ws, ep, tp = (
        as_float(frame[C.WORLD_SIZE]),
        as_float(frame[C.MOE_EP_SIZE]),
        as_float(frame[C.MOE_TP_SIZE]),
    )
    adp = frame[C.ATTENTION_DP].astype(object).to_numpy() == True  # noqa: E712
    bpe = frame[C.QUANT].astype(str).str.upper().map(C.BYTES_PER_ELEM).to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        tokens_rank = n * k / np.where(adp, ws, ep)
        flops = tokens_rank * 6.0 * h * i / tp
        touched = -np.expm1(-n * k / e)
        weights = (e / ep) * touched * 3.0 * h * i / tp * bpe
        out = pd.DataFrame(
            {
                "log_tokens_rank": np.log(tokens_rank),
                "log_flops_rank": np.log(flops),
                "log_weight_bytes_rank": np.log(weights),
                "log_dispatch_rank": np.log(tokens_rank * h),
                "log_world_size": np.log(ws),
            },  # fmt: skip
            index=frame.index,
        )
    return out.replace([np.inf, -np.inf], np.nan)


@dataclass(frozen=True)
class ShapeModel:
    """A (hardware, quant) slice's fit (:func:`fit_shapes`): the kinds it knows (code =
    position), each kind's measured layouts (kind -> moe_ep_size, moe_tp_size, world
    size rows) and the MAPIE model (None: too little to fit)."""

    kinds: list[str]
    layouts: pd.DataFrame
    model: Any
    confidence: float
    models: list[str]
    hardware: str | None = None
    seen: pd.DataFrame = field(
        default_factory=pd.DataFrame
    )  # model, kind, world size, family, log tokens/rank
    # hardware -> largest world size an NVLINK_* comm ran at in the fitted rows: the tree
    # is walked as the agreement check walks it (analysis.agreement)
    mnnvl: dict[str, int] = field(default_factory=dict)
    # the pick's P(fastest) under which the tree's contender goes first
    prefer_tree_below: float = PREFER_TREE_BELOW
    # the mean ridge of the conformal model (mean_ridge): its point prediction
    point: tuple[np.ndarray, float] | None = None
    # (world size, attention DP, CUDA graph) -> the fitted models' rows of that family,
    # filled as answers ask (_family); not part of what the fit is
    families: dict[tuple[int, bool, bool], list[Any]] = field(
        default_factory=dict, compare=False, repr=False
    )


def answer_rows(frame: pd.DataFrame) -> np.ndarray | None:
    """Boolean mask of the rows under each model's default routing pattern
    (``analysis.identity.default_dispatch``: balanced where measured) -- the pattern a
    cell's predictions answer for, so the models across shapes are fitted, and their
    answers scored, on one pattern per model. None when no row records a pattern."""
    if C.DISPATCH not in frame or frame.empty or frame[C.DISPATCH].isna().all():
        return None
    mask = np.zeros(len(frame), dtype=bool)
    labels = frame[C.DISPATCH].astype(object).to_numpy()
    models = frame[C.MODEL].astype(object).to_numpy() if C.MODEL in frame else None
    for model in pd.unique(models) if models is not None else [None]:
        mine = models == model if models is not None else np.ones(len(frame), dtype=bool)
        chosen = default_dispatch(pd.Series(labels[mine]))
        mask |= mine & ((labels == chosen) if chosen is not None else True)
    return mask


def slice_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows the shape model can read: a configuration frame (under each model's
    default routing pattern, :func:`answer_rows`) with kind and features."""
    cfg = configuration_frame(frame, rows=answer_rows(frame)) if len(frame) else frame
    if cfg.empty:
        return cfg
    cfg = cfg.reset_index(drop=True)
    out = pd.concat([cfg, features(cfg)], axis=1)
    out[KIND] = kinds(cfg)
    ok = np.isfinite(out[list(FEATURES)].to_numpy(float)).all(axis=1) & (
        as_float(out[C.SCORE_MS]) > 0
    )
    return out[ok].reset_index(drop=True)


def fit_sample(rows: pd.DataFrame, most: int) -> np.ndarray:
    """Positions of at most about ``most`` of ``rows`` (all when they fit): each model's
    share in proportion to its rows, evenly spaced over them sorted by kind, world size
    and num_tokens, so every kind and load keeps its part."""
    if len(rows) <= most:
        return np.arange(len(rows))
    share = most / len(rows)
    names = rows[C.MODEL].astype(str).to_numpy(str)
    keys = (as_float(rows[C.NUM_TOKENS]), as_float(rows[C.WORLD_SIZE]), rows[KIND].to_numpy(str))
    order = np.lexsort((*keys, names))
    models = names[order]
    out = []
    for m in np.unique(models):
        pos = order[models == m]
        k = max(1, int(len(pos) * share))
        out.append(pos[np.unique(np.round(np.linspace(0, len(pos) - 1, k)).astype(int))])
    return np.sort(np.concatenate(out))


def fit_shapes(
    frame: pd.DataFrame, confidence: float = CONFIDENCE, max_rows: int = MAX_FIT_ROWS
) -> ShapeModel:
    """The shape model of one (hardware, quant) slice's candidate frame (all models and
    world sizes): intervals from leaving one model out when it has two or more models,
    else one world size out. The regression and its conformal scores read at most
    ``max_rows`` rows (:func:`fit_sample`: a team's slice of ~17 models of many
    configurations made a dense design of 140k x 365 -- over 1 GB with its copies);
    the layouts and the local correction read every row."""
    rows = slice_rows(frame)
    names = sorted(rows[KIND].unique()) if len(rows) else []
    models = sorted(rows[C.MODEL].astype(str).unique()) if len(rows) else []
    if len(rows) < 20:
        return ShapeModel(names, pd.DataFrame(), None, confidence, models)
    fitted = rows.iloc[fit_sample(rows, max_rows)]
    code = pd.Categorical(fitted[KIND], categories=names).codes
    x = np.c_[code, fitted[list(FEATURES)].to_numpy(float)]
    groups = fitted[C.MODEL].astype(str) if len(models) > 1 else fitted[C.WORLD_SIZE].astype(str)
    if groups.nunique() < 2:
        return ShapeModel(names, pd.DataFrame(), None, confidence, models)
    mapie = CrossConformalRegressor(KindRidge(n_kinds=len(names)), confidence_level=confidence,
                                    method="plus", cv=LeaveOneGroupOut())  # fmt: skip
    mapie.fit_conformalize(x, np.log(as_float(fitted[C.SCORE_MS])), groups=groups.to_numpy())
    lay = rows[[KIND, C.MOE_EP_SIZE, C.MOE_TP_SIZE, C.WORLD_SIZE, C.ATTENTION_DP, C.CUDA_GRAPH,
                C.BACKEND, C.COMM, C.PARALLEL_MODE]].drop_duplicates(KIND)  # fmt: skip
    seen = rows[[C.MODEL, KIND, C.WORLD_SIZE, C.ATTENTION_DP, C.CUDA_GRAPH, C.SCORE_MS,
                 C.NUM_TOKENS, *SHAPE]]  # fmt: skip
    seen = seen.assign(routed=as_float(seen[C.NUM_TOKENS]) * as_float(seen[C.TOP_K]))
    hardware = str(rows[C.HARDWARE].iloc[0]).upper()
    mnnvl = measured_mnnvl(measured_capabilities(frame))
    return ShapeModel(names, lay.reset_index(drop=True), mapie, confidence, models, hardware, seen,
                      mnnvl, point=mean_ridge(mapie))  # fmt: skip


def candidates(
    fit: ShapeModel, world_size: int, attention_dp: bool, cuda_graph: bool
) -> pd.DataFrame:
    """The kinds of the family, laid out for ``world_size`` (EP: ep = world size; TP: tp
    = world size; TP k: ep = world size / k, when it divides): backend, comm, parallel
    mode, moe_ep_size, moe_tp_size, kind."""
    lay = fit.layouts
    if lay.empty:
        return lay
    mine = lay[(lay[C.ATTENTION_DP].astype(object) == attention_dp)
               & (lay[C.CUDA_GRAPH].astype(object) == cuda_graph)].copy()  # fmt: skip
    a = "D" if attention_dp else "T"
    ep, tp, mode = [], [], []
    for k in mine[KIND].str.split("|").str[2]:
        if k == "EP":
            t, e = 1, world_size
        elif k == "TP":
            t, e = world_size, 1
        else:
            t = int(k[2:])
            e = world_size // t if world_size % t == 0 and world_size // t > 1 else 0
        ep.append(e)
        tp.append(t)
        mode.append(f"{a}EP" if t == 1 else f"{a}TP" if e == 1 else f"{a}TP{t}EP{e}")
    mine[C.MOE_EP_SIZE], mine[C.MOE_TP_SIZE], mine[C.PARALLEL_MODE] = ep, tp, mode
    mine[C.WORLD_SIZE] = world_size
    return mine[np.asarray(ep, dtype=int) > 0].reset_index(drop=True)


def _with_shape(rows: pd.DataFrame, shape: Shape, quant: str, num_tokens: Any) -> pd.DataFrame:
    values = (shape.num_experts, shape.top_k, shape.hidden_size, shape.intermediate_size)
    return rows.assign(**dict(zip(SHAPE, values, strict=True)), **{C.NUM_TOKENS: num_tokens,
                                                                  C.QUANT: quant})  # fmt: skip


def _point(fit: ShapeModel, rows: pd.DataFrame) -> np.ndarray:
    """The fit's point prediction (log ms) of each row: ``fit.model.predict``, by the
    mean ridge (:func:`mean_ridge`) when the fit has it."""
    code = pd.Categorical(rows[KIND], categories=fit.kinds).codes
    x = np.c_[code, features(rows).to_numpy(float)]
    if fit.point is None:
        out: np.ndarray = fit.model.predict(x)
        return out
    coef, intercept = fit.point
    design = KindRidge(n_kinds=len(fit.kinds))._design(x)
    return np.asarray(design @ coef + intercept, float)


def distance(a: Shape, b: Shape) -> float:
    """How far apart two shapes are: the sum of absolute log ratios of experts, top-k,
    hidden and intermediate size."""
    va = np.log(np.array([a.num_experts, a.top_k, a.hidden_size, a.intermediate_size], float))
    vb = np.log(np.array([b.num_experts, b.top_k, b.hidden_size, b.intermediate_size], float))
    return float(np.abs(va - vb).sum())


@dataclass(frozen=True)
class _Seen:
    """One fitted model's rows of one family (world size, attention DP, CUDA graph), as
    :func:`local_residuals` reads them: routed tokens, scores and kinds, whether the
    source kept only its top configurations, and the model's shape."""

    shape: Shape
    routed: np.ndarray
    score: np.ndarray
    kinds: np.ndarray
    censored: bool


def _family(fit: ShapeModel, ws: int, attention_dp: bool, cuda_graph: bool) -> list[_Seen]:
    """The fitted models' rows of one family, grouped once per fit (memoized on it:
    every answer at that family reads them)."""
    from analysis.predict import TOP_KEPT

    key = (ws, attention_dp, cuda_graph)
    if key in fit.families:
        return fit.families[key]
    seen = fit.seen
    same = seen[(as_float(seen[C.WORLD_SIZE]) == ws)
                & (seen[C.ATTENTION_DP].astype(object) == attention_dp)
                & (seen[C.CUDA_GRAPH].astype(object) == cuda_graph)]  # fmt: skip
    out = []
    for _, part in same.groupby(C.MODEL, observed=True):
        tokens = part["routed"].to_numpy(float)
        per = pd.Series(tokens).round(9).value_counts()
        first = part.iloc[0]
        out.append(_Seen(Shape(*(int(first[c]) for c in SHAPE)), tokens,
                         as_float(part[C.SCORE_MS]), part[KIND].to_numpy(),
                         bool(per.max() <= TOP_KEPT)))  # fmt: skip
    fit.families[key] = out
    return out


def _stacked(rows: pd.DataFrame, shapes: list[tuple[Shape, float]], quant: str) -> pd.DataFrame:
    """``rows`` once per (shape, num_tokens) of ``shapes``, in that order, with that
    shape, num_tokens and ``quant`` (:func:`_with_shape` of each, concatenated)."""
    n = len(rows)
    out = rows.iloc[np.tile(np.arange(n), len(shapes))].reset_index(drop=True)
    dims = np.array([[s.num_experts, s.top_k, s.hidden_size, s.intermediate_size]
                     for s, _ in shapes], dtype=np.int64)  # fmt: skip
    cols = {c: np.repeat(dims[:, j], n) for j, c in enumerate(SHAPE)}
    cols[C.NUM_TOKENS] = np.repeat(np.array([t for _, t in shapes], float), n)
    return out.assign(**cols, **{C.QUANT: quant})


def local_residuals(fit: ShapeModel, rows: pd.DataFrame, quant: str, routed: float,
                    attention_dp: bool, cuda_graph: bool, query: Shape) -> np.ndarray:  # fmt: skip
    """Per candidate row (laid out for the query's world size): how much faster or
    slower than the fit each fitted model measured that kind near the query's load --
    its ``log(score_ms)`` interpolated log-log between the model's measured activated
    tokens per rank below and above (``analysis.neighbours.neighbour_estimate``, a kind
    dropped by a top-3 source counting as the slowest kept) minus the fit's prediction
    for that model there -- averaged over the models. NaN for a kind no model measured
    at its neighbours: not a contender, a top-3 source says nothing of it. The fit's
    predictions for every model are made in one call (one design matrix)."""
    ws = int(as_float(rows[C.WORLD_SIZE])[0])
    query_kinds = rows[KIND].to_numpy()
    found, weights, there = [], [], []
    at = routed
    for g in _family(fit, ws, attention_dp, cuda_graph):
        tokens, score, lab = g.routed, g.score, g.kinds
        # a query on a measured load: the neighbours are that load on both sides
        bump = np.isclose(tokens, at, rtol=1e-9)
        t_all = np.r_[tokens, tokens[bump] * (1 - 1e-6), tokens[bump] * (1 + 1e-6)]
        s_all = np.r_[score, score[bump], score[bump]]
        lab_all = np.r_[lab, lab[bump], lab[bump]]
        keep = ~np.isclose(t_all, at, rtol=1e-12) | ~np.r_[bump, np.zeros(2 * bump.sum(), bool)]
        est = neighbour_estimate(t_all[keep], s_all[keep], lab_all[keep], query_kinds, at,
                                 g.censored)  # fmt: skip
        if not np.isfinite(est).any():
            continue
        found.append(est)
        weights.append(1.0 / (SHAPE_SCALE + distance(g.shape, query)))
        there.append((g.shape, at / g.shape.top_k))
    if not found:
        return np.full(len(rows), np.nan)
    points = _point(fit, _stacked(rows, there, quant)).reshape(len(found), len(rows))
    stacked = np.vstack(found) - points
    w = np.where(np.isfinite(stacked), np.asarray(weights)[:, None], 0.0)
    with np.errstate(all="ignore"):
        out: np.ndarray = np.nansum(np.where(w > 0, stacked, 0.0) * w, axis=0) / w.sum(axis=0)
    return out


def predict_shape(
    fit: ShapeModel,
    shape: Shape,
    quant: str,
    world_size: int,
    num_tokens: int,
    attention_dp: bool = True,
    cuda_graph: bool = True,
) -> pd.DataFrame:
    """Each candidate kind's predicted score at the workload, with its conformal
    interval: backend, comm, parallel_mode, moe_ep_size, moe_tp_size, kind, config,
    score_ms, lo_ms, hi_ms; fastest first. Empty when the slice has no fit or no kind
    of the family."""
    rows = candidates(fit, world_size, attention_dp, cuda_graph)
    if fit.model is None or rows.empty:
        return pd.DataFrame(columns=["config", "score_ms", "lo_ms", "hi_ms"])
    rows = _with_shape(rows, shape, quant, num_tokens)
    f = features(rows)
    code = pd.Categorical(rows[KIND], categories=fit.kinds).codes
    pred, pis = fit.model.predict_interval(np.c_[code, f.to_numpy(float)])
    pred = np.asarray(pred, float)
    resid = local_residuals(fit, rows, quant, float(num_tokens * shape.top_k), attention_dp,
                            cuda_graph, shape)  # fmt: skip
    rows["contender"] = np.isfinite(resid) if np.isfinite(resid).any() else True
    shift = np.where(np.isfinite(resid), resid, 0.0)
    rows["model_ms"] = np.exp(pred)
    rows["score_ms"] = np.exp(pred + shift)
    rows["lo_ms"], rows["hi_ms"] = np.exp(pis[:, 0, 0] + shift), np.exp(pis[:, 1, 0] + shift)
    rows["config"] = (rows[C.BACKEND].astype(str) + " · " + rows[C.COMM].astype(str) + " · "
                      + rows[C.PARALLEL_MODE] + " EP" + rows[C.MOE_EP_SIZE].astype(str)
                      + " TP" + rows[C.MOE_TP_SIZE].astype(str))  # fmt: skip
    keep = ["config", C.BACKEND, C.COMM, C.PARALLEL_MODE, C.MOE_EP_SIZE, C.MOE_TP_SIZE, KIND,
            "score_ms", "lo_ms", "hi_ms", "model_ms", "contender"]  # fmt: skip
    out = rows[keep].sort_values(
        ["contender", "score_ms"], ascending=[False, True], kind="mergesort"
    )
    out = out.reset_index(drop=True)
    return _tree_when_unsure(out, fit, shape, quant, world_size, num_tokens, attention_dp,
                             cuda_graph)  # fmt: skip


def tree_contender(
    out: pd.DataFrame, fit: ShapeModel, shape: Shape, quant: str, world_size: int,
    num_tokens: int, attention_dp: bool, cuda_graph: bool,
) -> int | None:  # fmt: skip
    """The row of ``out`` (contenders first) that follows the guide's decision tree --
    its backend, its comm (forced, or AUTO's expected pick), pure EP -- walked with the
    MNNVL the fitted rows prove (as ``analysis.agreement`` walks it); None when the tree
    names no contender or the fit has no hardware."""
    if fit.hardware is None or not len(out):
        return None
    dep = Deployment(fit.hardware, shape.num_experts, shape.top_k, shape.hidden_size, quant,
                     world_size, attention_dp, cuda_graph, num_tokens,
                     mnnvl=mnnvl_at(fit.mnnvl, fit.hardware, world_size))  # fmt: skip
    rec = recommend(dep)
    comm = rec.comm if rec.force_comm else rec.expected_comm
    hit = np.flatnonzero(out["contender"].to_numpy(bool)
                         & (out[C.BACKEND].astype(str).to_numpy() == rec.backend)
                         & (out[C.COMM].astype(str).to_numpy() == comm)
                         & (out[C.MOE_TP_SIZE].to_numpy(float) <= 1))  # fmt: skip
    return int(hit[0]) if len(hit) else None


def _tree_when_unsure(
    out: pd.DataFrame, fit: ShapeModel, shape: Shape, quant: str, world_size: int,
    num_tokens: int, attention_dp: bool, cuda_graph: bool,
) -> pd.DataFrame:  # fmt: skip
    """``out`` with ``p_fastest`` (among the contenders) and ``picked_by``: where the
    model's own pick is less likely than the fit's ``prefer_tree_below`` to be the
    fastest and the guide's tree names a contender (:func:`tree_contender`), that
    contender goes first (the published rule breaks what the model cannot tell apart)."""
    from analysis.predict import p_fastest

    out = out.copy()
    ok = out["contender"].to_numpy(bool)
    chance = np.zeros(len(out))
    pred, lo, hi = (np.log(out[c].to_numpy(float)[ok]) for c in ("score_ms", "lo_ms", "hi_ms"))
    chance[ok] = p_fastest(pred, lo, hi, fit.confidence, 0)
    out["p_fastest"] = chance
    out["picked_by"] = ""
    if not len(out):
        return out
    out.loc[0, "picked_by"] = "shape model"
    if chance[0] >= fit.prefer_tree_below:
        return out
    hit = tree_contender(out, fit, shape, quant, world_size, num_tokens, attention_dp, cuda_graph)
    if hit is None or hit == 0:
        return out
    order = [hit, *[i for i in range(len(out)) if i != hit]]
    out = out.iloc[order].reset_index(drop=True)
    out["picked_by"] = ""
    out.loc[0, "picked_by"] = "decision tree (the shape model cannot tell the contenders apart)"
    return out
