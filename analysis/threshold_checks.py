"""The guide's five thresholds as "rank 1 is X vs not X" questions, and their votes.

X is always the tree's pick *above* the threshold (the option it switches to), so every
check reads "rank 1 is X above t, not X up to t".

A *workload* is one (model, hardware, quant, world_size, num_tokens, dispatch,
attention_dp, cuda_graph) over rankable rows (``derived.rankable_mask``); repeat runs are
pooled per configuration before (``analysis.thresholds`` passes a configuration
frame). Its *rank 1* is its fastest row (lowest score_ms; equal scores resolve like
``best.top_by_workload``). A workload votes "X" when its rank 1 is X
(e.g. a fused MEGAMOE backend), "not X" otherwise, and does not vote (``tie``) when the
fastest X row and the fastest other row have exactly the same score. Only the rank-1
row is needed, so top-3-only data (NVIDIA's published sweeps) vote on every workload,
even where the two options the tree picks between never both appear.

Axes are the tree's own, computed per workload as the tree does for pure EP:
``activated_tokens_per_rank = num_tokens * top_k / world_size``,
``dispatch_kb = activated_tokens_per_rank * hidden_size * bytes_per_elem / 1024`` (NaN
for a quant without a byte size; such workloads do not vote) and ``world_size``.
``margin_pct`` = (fastest row of the other side - rank 1) / rank 1 * 100; when the other
side was not measured (top-3 data), the slowest listed row stands in and
``margin_is_lower_bound`` is true; NaN with a single row.

Hardware the capability table does not know is treated like the tree treats it (SM100,
an 8-GPU NVLink domain). Checks cover the tree's SM100 / SM103 branch only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from analysis import capabilities as cap
from analysis import columns as C
from analysis import noise as N
from analysis.best import top_by_workload
from analysis.derived import as_float, group_codes, rankable_mask
from analysis.identity import N_REPEATS

WORKLOAD_KEYS: tuple[str, ...] = C.WORKLOAD_KEYS
AXIS_VALUE = "axis_value"
IS_X = "is_x"
WINNER = "winner"
MARGIN_PCT = "margin_pct"
P_FLIP = "p_flip"  # probability that measurement noise alone reversed a vote
TIE = "tie"
_UNKNOWN_HW = cap.HardwareInfo(100, 8, False)

Mask = Callable[[pd.DataFrame, float], np.ndarray]


@dataclass(frozen=True)
class GuideThreshold:
    """One published threshold: ``name`` (a ``tree.Thresholds`` field), its
    ``published`` value, the ``axis`` column, the rank-1 property X (``x_col`` value in
    ``x_values``, or starting with ``x_prefix``), ``x_above`` (X is the tree's pick above
    the threshold) and ``scope`` (which workloads the tree sends through it)."""

    name: str
    published: float
    description: str
    axis: str
    x_label: str
    not_x_label: str
    x_col: str
    x_values: frozenset[str]
    x_prefix: str | None
    x_above: bool
    scope: Mask

    @property
    def option_below(self) -> str:
        return self.not_x_label if self.x_above else self.x_label

    @property
    def option_above(self) -> str:
        return self.x_label if self.x_above else self.not_x_label

    def is_x(self, values: pd.Series) -> np.ndarray:
        """True where a row's ``x_col`` value is X (missing values are not X)."""
        text = values.astype("string")
        hit = text.isin(sorted(self.x_values))
        if self.x_prefix:
            hit |= text.str.startswith(self.x_prefix)
        out: np.ndarray = hit.fillna(False).to_numpy(dtype=bool)
        return out


def _flag(w: pd.DataFrame, col: str, value: bool) -> np.ndarray:
    out: np.ndarray = (w[col].astype("boolean") == value).to_numpy(dtype=bool, na_value=False)
    return out


def _sm100(w: pd.DataFrame) -> np.ndarray:
    out: np.ndarray = w["_sm"].isin((100, 103)).to_numpy(dtype=bool)
    return out


def _inside(w: pd.DataFrame) -> np.ndarray:
    out: np.ndarray = as_float(w[C.WORLD_SIZE]) <= w["_domain"].to_numpy(dtype=float)
    return out


def _nvfp4(w: pd.DataFrame) -> np.ndarray:
    out: np.ndarray = (w[C.QUANT].astype("string") == "NVFP4").to_numpy(dtype=bool, na_value=False)
    return out


def _decode_scope(w: pd.DataFrame, _: float) -> np.ndarray:
    dp, on = _flag(w, C.ATTENTION_DP, True), _flag(w, C.CUDA_GRAPH, True)
    out: np.ndarray = _sm100(w) & dp & on & _nvfp4(w) & _inside(w)
    return out


def _prefill_scope(w: pd.DataFrame, _: float) -> np.ndarray:
    dp, off = _flag(w, C.ATTENTION_DP, True), _flag(w, C.CUDA_GRAPH, False)
    out: np.ndarray = _sm100(w) & dp & off & _nvfp4(w) & _inside(w)
    return out


def _cross_scope(w: pd.DataFrame, _: float) -> np.ndarray:
    out: np.ndarray = _sm100(w) & _flag(w, C.ATTENTION_DP, True) & ~_inside(w)
    return out


def _small_ws_scope(w: pd.DataFrame, decode_threshold: float) -> np.ndarray:
    small = as_float(w[C.ACTIVATED_TOKENS_PER_RANK]) <= decode_threshold
    out: np.ndarray = _decode_scope(w, decode_threshold) & small
    return out


def _attention_tp_scope(w: pd.DataFrame, _: float) -> np.ndarray:
    out: np.ndarray = _sm100(w) & _flag(w, C.ATTENTION_DP, False)
    return out


_FUSED = dict(
    x_label="fused MEGAMOE backend",
    not_x_label="not fused",
    x_col=C.BACKEND,
    x_values=frozenset(cap.FUSED_COMM_BACKENDS),
    x_prefix="MEGAMOE_",
    x_above=True,
)
_CUTEDSL = dict(
    x_label="CUTEDSL",
    not_x_label="not CUTEDSL",
    x_col=C.BACKEND,
    x_values=frozenset({"CUTEDSL"}),
    x_prefix=None,
    x_above=True,
)
GUIDE_THRESHOLDS: tuple[GuideThreshold, ...] = (
    GuideThreshold(
        "decode_megamoe_tokens_per_rank",
        512.0,
        "is rank 1 a fused MEGAMOE backend? (attention DP, decode / CUDA graph on, NVFP4, "
        "EP inside the NVLink domain)",
        C.ACTIVATED_TOKENS_PER_RANK,
        scope=_decode_scope,
        **_FUSED,  # type: ignore[arg-type]
    ),
    GuideThreshold(
        "prefill_megamoe_tokens_per_rank",
        16384.0,
        "is rank 1 a fused MEGAMOE backend? (attention DP, prefill / CUDA graph off, NVFP4, "
        "EP inside the NVLink domain)",
        C.ACTIVATED_TOKENS_PER_RANK,
        scope=_prefill_scope,
        **_FUSED,  # type: ignore[arg-type]
    ),
    GuideThreshold(
        "cross_domain_dispatch_kb",
        8192.0,
        "is rank 1's comm ALLGATHER? (attention DP, EP crossing the NVLink domain)",
        C.DISPATCH_KB,
        x_label="ALLGATHER",
        not_x_label="not ALLGATHER",
        x_col=C.COMM,
        x_values=frozenset({"ALLGATHER"}),
        x_prefix=None,
        x_above=True,
        scope=_cross_scope,
    ),
    GuideThreshold(
        "small_world_size",
        8.0,
        "is rank 1 CUTEDSL? (attention DP, decode, NVFP4, inside the NVLink domain, "
        "activated_tokens_per_rank <= the decode threshold; TRTLLM up to the threshold)",
        C.WORLD_SIZE,
        scope=_small_ws_scope,
        **_CUTEDSL,  # type: ignore[arg-type]
    ),
    GuideThreshold(
        "attention_tp_cutedsl_tokens_per_rank",
        24576.0,
        "is rank 1 CUTEDSL? (attention TP; the guide: CUTEDSL overtakes TRTLLM above it)",
        C.ACTIVATED_TOKENS_PER_RANK,
        scope=_attention_tp_scope,
        **_CUTEDSL,  # type: ignore[arg-type]
    ),
)
BY_NAME: dict[str, GuideThreshold] = {t.name: t for t in GUIDE_THRESHOLDS}


def workload_table(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """(workloads, rankable rows, the rows' workload ids). ``workloads``: one row per
    workload in sorted key order: WORKLOAD_KEYS, top_k, hidden_size, the tree's axes
    (activated_tokens_per_rank, dispatch_kb, world_size), ``_sm`` / ``_domain`` of the
    hardware, and the rank-1 row's backend, comm, parallel_mode, score_ms, run_id,
    candidate_index (``rank1_*``) plus ``n_rows`` and ``slowest_score_ms``."""
    rows = df.loc[rankable_mask(df)]
    rows = rows[rows[C.ATTENTION_DP].notna() & rows[C.CUDA_GRAPH].notna()]
    keys = list(WORKLOAD_KEYS)
    gid = group_codes(rows, keys)
    score = as_float(rows[C.SCORE_MS])
    first = rows.groupby(gid, sort=True)[[*keys, C.TOP_K, C.HIDDEN_SIZE]].first()
    w = first.reset_index(drop=True)
    for col in keys:  # categoricals would keep unused categories alive in outputs
        if isinstance(w[col].dtype, pd.CategoricalDtype):
            w[col] = w[col].astype(object)
    nt, ws = as_float(w[C.NUM_TOKENS]), as_float(w[C.WORLD_SIZE])
    with np.errstate(divide="ignore", invalid="ignore"):
        atpr = nt * as_float(w[C.TOP_K]) / np.where(ws > 0, ws, np.nan)
    bpe = as_float(w[C.QUANT].map(C.BYTES_PER_ELEM))
    w[C.ACTIVATED_TOKENS_PER_RANK] = atpr
    w[C.DISPATCH_KB] = atpr * as_float(w[C.HIDDEN_SIZE]) * bpe / 1024.0
    info = [cap.hardware_info(str(h)) or _UNKNOWN_HW for h in w[C.HARDWARE]]
    w["_sm"] = [i.sm for i in info]
    w["_domain"] = [i.nvlink_domain for i in info]
    top = top_by_workload(rows, keys, n=1)
    for col in (C.BACKEND, C.COMM, C.PARALLEL_MODE, C.SCORE_MS, C.RUN_ID, C.CANDIDATE_INDEX):
        w["rank1_" + col] = top[col].astype(object).to_numpy()
    w["n_rows"] = np.bincount(gid, minlength=len(w))
    w["slowest_score_ms"] = pd.Series(score).groupby(gid).max().to_numpy()
    return w, rows, gid


def threshold_points(
    spec: GuideThreshold,
    workloads: pd.DataFrame,
    rows: pd.DataFrame,
    gid: np.ndarray,
    decode_threshold: float,
    noise: N.NoiseModel | None = None,
) -> pd.DataFrame:
    """The votes of ``spec``: workloads in its scope with a finite axis value, plus
    ``axis_value``, ``is_x``, ``winner`` (X label, not-X label or "tie"), ``tie``,
    ``best_x_score_ms``, ``best_not_x_score_ms``, ``margin_pct`` and
    ``margin_is_lower_bound``; sorted by axis value then workload keys.

    With a noise model (:mod:`analysis.noise`), ``p_flip``: the probability that the
    measurement noise alone reversed the vote -- the fastest X and the fastest other
    configuration swap places -- ``norm.sf(|log(best_not / best_x)| / s)`` with ``s`` the
    spread of that difference of medians (``sqrt(s_x²/n_x + s_o²/n_o)``, each side's
    modelled run-to-run spread over its runs); 0 where a side was not measured or has
    no modelled spread (the vote stands as measured)."""
    scope = spec.scope(workloads, decode_threshold) & np.isfinite(as_float(workloads[spec.axis]))
    x_row = spec.is_x(rows[spec.x_col])
    score = pd.Series(as_float(rows[C.SCORE_MS]))
    best_x = score.where(x_row).groupby(gid).min().reindex(range(len(workloads)))
    best_not = score.where(~x_row).groupby(gid).min().reindex(range(len(workloads)))
    w = workloads.loc[scope].copy()
    bx, bn = best_x.to_numpy()[scope], best_not.to_numpy()[scope]
    w["best_x_score_ms"], w["best_not_x_score_ms"] = bx, bn
    w[AXIS_VALUE] = as_float(w[spec.axis])
    tie = np.isfinite(bx) & np.isfinite(bn) & (bx == bn)
    w[IS_X] = spec.is_x(w["rank1_" + spec.x_col]) & ~tie
    w[TIE] = tie
    w[WINNER] = np.where(tie, "tie", np.where(w[IS_X], spec.x_label, spec.not_x_label))
    r1 = as_float(w["rank1_" + C.SCORE_MS])
    other = np.where(w[IS_X].to_numpy(), bn, bx)
    bound = ~np.isfinite(other) & (w["n_rows"].to_numpy() > 1)
    other = np.where(bound, as_float(w["slowest_score_ms"]), other)
    with np.errstate(divide="ignore", invalid="ignore"):
        w[MARGIN_PCT] = (other - r1) / r1 * 100.0
    w["margin_is_lower_bound"] = bound
    if noise is not None:
        w[P_FLIP] = _flip_probability(noise, rows, gid, x_row, score, len(workloads))[scope]
    w = w.drop(columns=["_sm", "_domain"])
    return w.sort_values(
        [AXIS_VALUE, *WORKLOAD_KEYS], kind="mergesort", na_position="last"
    ).reset_index(drop=True)


def _flip_probability(
    noise: N.NoiseModel,
    rows: pd.DataFrame,
    gid: np.ndarray,
    x_row: np.ndarray,
    score: pd.Series,
    n_workloads: int,
) -> np.ndarray:
    """Per workload, :func:`threshold_points`' ``p_flip`` (0 without both sides)."""
    out = np.zeros(n_workloads)
    if not len(rows):
        return out
    spreads = N.noise_for(noise, rows.reset_index(drop=True))
    spread = as_float(spreads[N.SPREAD])
    runs = as_float(rows[N_REPEATS]) if N_REPEATS in rows else np.ones(len(rows))
    var = spread**2 / np.maximum(np.nan_to_num(runs, nan=1.0), 1.0)
    values = score.to_numpy(dtype=float)
    sides = []
    for mask in (np.asarray(x_row, dtype=bool), ~np.asarray(x_row, dtype=bool)):
        # per workload the position of its fastest row on this side (score, then row)
        cand = np.flatnonzero(mask & np.isfinite(values))
        order = cand[np.lexsort((cand, values[cand], gid[cand]))]
        g, first = np.unique(gid[order], return_index=True)
        at = np.zeros(n_workloads, dtype=np.int64)
        ok = np.zeros(n_workloads, dtype=bool)
        at[g], ok[g] = order[first], True
        sides.append((ok, at, values[at]))
    (ok_x, px, sx), (ok_o, po, so) = sides
    sd = np.sqrt(var[px] + var[po])
    usable = ok_x & ok_o & np.isfinite(sd) & (sd > 0) & (sx > 0) & (so > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(np.log(so / sx)) / sd
    out[usable] = stats.norm.sf(z[usable])
    return out
