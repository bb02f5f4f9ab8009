"""History across TensorRT-LLM versions: scores per configuration, frontiers per version.

* :func:`score_history` -- per workload x configuration, its score at each version
  (``by="version"``: each version's own :func:`~analysis.identity.configuration_frame`,
  so repeats of one version are pooled -- median -- and versions never are) or at each
  run (``by="run"``: one point per run, with its commit and date). Points are ordered by
  key, then version order (:mod:`analysis.versions`: version number, then run date),
  then run; ``change_pct_vs_prev`` is the change against the previous point of the same
  series.
* :func:`best_history` -- per workload and version, the fastest configuration.
* :func:`version_frontiers` -- per slice (model, hardware, quant, world size, phase) and
  version, the Pareto frontier of tokens/s/GPU (maximise) against score_ms (minimise).

Frontier change (:func:`frontier_change`) between a base and a head set of points of
one slice, on the **step** frontier (no interpolation between points: a latency budget
L buys the best throughput of any point with latency <= L, and a throughput target R
costs the lowest latency of any point with throughput >= R):

* throughput change at fixed latency: at every frontier latency of either side from the
  larger of the two minimum latencies up (both sides reach it), ``100 * (T_head(L) /
  T_base(L) - 1)``; the summary is the median over those latencies;
* latency change at fixed throughput: at every frontier throughput of either side up to
  the smaller of the two maximum throughputs (both reach it), ``100 * (L_head(R) /
  L_base(R) - 1)``; summary: the median;
* hypervolume: the area (ms x tokens/s/GPU) each frontier dominates up to the reference
  point (``REF_LATENCY_FACTOR`` x the largest latency on either frontier, 0 tokens/s/GPU),
  and its change in percent.

Inputs are not modified; results do not depend on row order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.compare import CONFIG_LABEL
from analysis.config_labels import WORKLOAD_LABEL as WORKLOAD_LABEL
from analysis.config_labels import config_label, workload_label
from analysis.derived import as_float, ensure_derived, group_codes
from analysis.identity import CONFIG_COLUMNS, WORKLOAD_COLUMNS, Repeats, configuration_frame
from analysis.pareto import FRONTIER_GROUP_COLS, pareto_frontier
from analysis.versions import FIRST_DATE, version_order, version_table

By = Literal["version", "run"]
VERSION_ORDER = "version_order"
CHANGE_VS_PREV = "change_pct_vs_prev"
REF_LATENCY_FACTOR = 1.1
HISTORY_COLUMNS: tuple[str, ...] = (
    C.TRTLLM_VERSION,
    VERSION_ORDER,
    C.RUN_ID,
    C.TRTLLM_COMMIT,
    C.RUN_DATE,
    C.SCORE_MS,
    C.TOKENS_PER_S_PER_GPU,
    "n_repeats",
    "repeat_run_ids",
    "score_spread",
    "spread_source",
)


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """Categorical columns as objects (frames of several versions concatenate cleanly)."""
    cats = [c for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)]
    return df.astype({c: object for c in cats}) if cats else df


def per_version_frames(frame: pd.DataFrame, repeats: Repeats = "median") -> pd.DataFrame:
    """Each version's own configuration frame, concatenated, with ``version_order``
    (rows without a version are left out)."""
    frame = ensure_derived(frame)
    table = version_table(frame)
    parts = []
    versions = frame[C.TRTLLM_VERSION].astype(object)
    for version in table["version"]:
        sub = frame.loc[(versions == version).to_numpy()]
        cfg = configuration_frame(sub, repeats)
        if len(cfg):
            parts.append(_plain(cfg))
    if not parts:
        return frame.iloc[0:0].assign(**{VERSION_ORDER: pd.Series(dtype=np.int64)})
    out = pd.concat(parts, ignore_index=True)
    out[VERSION_ORDER] = version_order(out[C.TRTLLM_VERSION], table)
    return out


def _per_run_frames(frame: pd.DataFrame) -> pd.DataFrame:
    frame = ensure_derived(frame)
    table = version_table(frame)
    parts = [
        _plain(configuration_frame(sub, "latest"))
        for _, sub in frame.groupby(C.RUN_ID, sort=True, observed=True)
    ]
    parts = [p for p in parts if len(p)]
    if not parts:
        return frame.iloc[0:0].assign(**{VERSION_ORDER: pd.Series(dtype=np.int64)})
    out = pd.concat(parts, ignore_index=True)
    out[VERSION_ORDER] = version_order(out[C.TRTLLM_VERSION], table)
    return out


def score_history(
    frame: pd.DataFrame, by: By = "version", repeats: Repeats = "median"
) -> pd.DataFrame:
    """Score per workload x configuration over versions (or runs); see the module
    docstring. Columns: the key columns the frame carries, ``workload`` and ``config``
    labels, :data:`HISTORY_COLUMNS` and ``change_pct_vs_prev``. Unversioned rows are
    left out of ``by="version"`` (their version order is -1 under ``by="run"``)."""
    if by not in ("version", "run"):
        raise ValueError(f"unknown by {by!r}; use 'version' or 'run'")
    points = per_version_frames(frame, repeats) if by == "version" else _per_run_frames(frame)
    key = [c for c in (*WORKLOAD_COLUMNS, *CONFIG_COLUMNS) if c in points]
    cols = [*key, WORKLOAD_LABEL, CONFIG_LABEL, *(c for c in HISTORY_COLUMNS if c in points)]
    if points.empty:
        return pd.DataFrame(columns=[*cols, CHANGE_VS_PREV])
    points = points.assign(
        **{WORKLOAD_LABEL: workload_label(points), CONFIG_LABEL: config_label(points)}
    )
    g = group_codes(points, key)
    run = as_float(points[C.RUN_ID]) if C.RUN_ID in points else np.zeros(len(points))
    order = np.lexsort((run, points[VERSION_ORDER].to_numpy(np.int64), g))
    out = points.iloc[order][cols].reset_index(drop=True)
    gs = g[order]
    score = as_float(out[C.SCORE_MS])
    prev = np.r_[np.nan, score[:-1]]
    first = np.r_[True, gs[1:] != gs[:-1]]
    with np.errstate(divide="ignore", invalid="ignore"):
        out[CHANGE_VS_PREV] = np.where(first, np.nan, 100.0 * (score / prev - 1.0))
    return out


def best_history(history: pd.DataFrame) -> pd.DataFrame:
    """Per workload and version (each point of a ``score_history(by="version")``
    table), the fastest configuration's row (ties: the first in key order), in workload
    then version order."""
    if history.empty:
        return history
    wl = [c for c in WORKLOAD_COLUMNS if c in history]
    g = group_codes(history, [*wl, VERSION_ORDER])
    order = np.lexsort((np.arange(len(history)), as_float(history[C.SCORE_MS]), g))
    first = np.r_[True, g[order][1:] != g[order][:-1]]
    rows = order[first]  # g ascends: workload, then version order
    return history.iloc[rows].reset_index(drop=True)


def version_frontiers(frame: pd.DataFrame, repeats: Repeats = "median") -> pd.DataFrame:
    """Frontier rows (tokens/s/GPU vs score_ms) per slice and version, each version's
    repeats pooled (``repeats``), sorted by slice, version order, then latency."""
    points = per_version_frames(frame, repeats)
    group = [c for c in FRONTIER_GROUP_COLS if c in points]
    if points.empty:
        return points
    front = pareto_frontier(
        points, C.SCORE_MS, C.TOKENS_PER_S_PER_GPU, group_cols=[*group, VERSION_ORDER]
    )
    front = front.assign(**{CONFIG_LABEL: config_label(front)})
    return front.sort_values([*group, VERSION_ORDER, C.SCORE_MS], kind="mergesort").reset_index(
        drop=True
    )


@dataclass(frozen=True)
class FrontierChange:
    """:func:`frontier_change`'s answer: the two comparison grids and the summary."""

    at_latency: pd.DataFrame  # latency_ms, base_tps, head_tps, change_pct
    at_throughput: pd.DataFrame  # tokens_per_s_per_gpu, base_ms, head_ms, change_pct
    summary: dict[str, Any]


def _steps(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The step frontier of the finite points: (x ascending, y strictly ascending) of
    the points no other point dominates (larger y at no larger x)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    order = np.lexsort((-y, x))
    x, y = x[order], y[order]
    if not len(x):
        return x, y
    prev = np.r_[-np.inf, np.maximum.accumulate(y)[:-1]]
    keep = y > prev
    return x[keep], y[keep]


def throughput_at(xs: np.ndarray, best: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """Best throughput with latency <= each of ``latency`` (NaN below the first)."""
    i = np.searchsorted(xs, latency, side="right") - 1
    return np.where(i >= 0, best[np.maximum(i, 0)], np.nan)


def latency_for(xs: np.ndarray, best: np.ndarray, tps: np.ndarray) -> np.ndarray:
    """Lowest latency reaching at least each of ``tps`` (NaN above the best)."""
    i = np.searchsorted(best, tps, side="left")
    return np.where(i < len(xs), xs[np.minimum(i, len(xs) - 1)], np.nan)


def hypervolume(xs: np.ndarray, best: np.ndarray, ref_x: float) -> float:
    """Area dominated by the step frontier ``(xs, best)`` up to ``(ref_x, 0)``."""
    keep = xs < ref_x
    xs, best = xs[keep], best[keep]
    if not len(xs):
        return 0.0
    widths = np.diff(np.r_[xs, ref_x])
    return float(np.sum(widths * np.maximum(best, 0.0)))


def _median(v: np.ndarray) -> float | None:
    v = v[np.isfinite(v)]
    return float(np.median(v)) if len(v) else None


def frontier_change(
    base: pd.DataFrame,
    head: pd.DataFrame,
    x: str = C.SCORE_MS,
    y: str = C.TOKENS_PER_S_PER_GPU,
) -> FrontierChange:
    """The change from ``base``'s frontier to ``head``'s (points of one slice; see the
    module docstring for the grids, the medians and the hypervolume reference)."""
    bx, by_ = _steps(as_float(base[x]), as_float(base[y]))
    hx, hy = _steps(as_float(head[x]), as_float(head[y]))
    summary: dict[str, Any] = {
        "base_points": int(len(bx)),
        "head_points": int(len(hx)),
        "base_min_latency_ms": float(bx[0]) if len(bx) else None,
        "head_min_latency_ms": float(hx[0]) if len(hx) else None,
        "base_max_tps": float(by_[-1]) if len(bx) else None,
        "head_max_tps": float(hy[-1]) if len(hx) else None,
    }
    empty_l = pd.DataFrame(columns=["latency_ms", "base_tps", "head_tps", "change_pct"])
    empty_t = pd.DataFrame(columns=[y, "base_ms", "head_ms", "change_pct"])
    if not len(bx) or not len(hx):
        summary.update(
            throughput_change_pct=None,
            latency_change_pct=None,
            hypervolume_base=None,
            hypervolume_head=None,
            hypervolume_change_pct=None,
            reference_point={"latency_ms": None, y: 0.0},
        )
        return FrontierChange(empty_l, empty_t, summary)
    lo = max(bx[0], hx[0])
    lat = np.unique(np.r_[bx, hx])
    lat = lat[lat >= lo]
    tb, th = throughput_at(bx, by_, lat), throughput_at(hx, hy, lat)
    hi = min(by_[-1], hy[-1])
    tps = np.unique(np.r_[by_, hy])
    tps = tps[tps <= hi]
    lb, lh = latency_for(bx, by_, tps), latency_for(hx, hy, tps)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_change = 100.0 * (th / tb - 1.0)
        l_change = 100.0 * (lh / lb - 1.0)
    ref_x = REF_LATENCY_FACTOR * float(max(bx[-1], hx[-1]))
    hv_b, hv_h = hypervolume(bx, by_, ref_x), hypervolume(hx, hy, ref_x)
    summary.update(
        throughput_change_pct=_median(t_change),
        latency_change_pct=_median(l_change),
        hypervolume_base=hv_b,
        hypervolume_head=hv_h,
        hypervolume_change_pct=(100.0 * (hv_h / hv_b - 1.0)) if hv_b > 0 else None,
        reference_point={"latency_ms": ref_x, y: 0.0},
    )
    at_latency = pd.DataFrame(
        {"latency_ms": lat, "base_tps": tb, "head_tps": th, "change_pct": t_change}
    )
    at_tps = pd.DataFrame({y: tps, "base_ms": lb, "head_ms": lh, "change_pct": l_change})
    return FrontierChange(at_latency, at_tps, summary)


def frontier_changes(
    base: pd.DataFrame, head: pd.DataFrame
) -> list[tuple[dict[str, Any], FrontierChange]]:
    """:func:`frontier_change` per slice (model, hardware, quant, world size, phase)
    between two point sets (e.g. two versions' rows of :func:`version_frontiers`, or two
    :func:`per_version_frames`): ``[(slice values, change)]`` in slice order, for every
    slice either side has points in."""
    group = [c for c in FRONTIER_GROUP_COLS if c in base and c in head]
    both = pd.concat(
        [_plain(base).assign(_side=0), _plain(head).assign(_side=1)], ignore_index=True
    )
    out: list[tuple[dict[str, Any], FrontierChange]] = []
    if both.empty:
        return out
    for values, grp in both.groupby(group, sort=True, dropna=False, observed=True):
        vals = values if isinstance(values, tuple) else (values,)
        side = grp["_side"].to_numpy()
        change = frontier_change(grp[side == 0], grp[side == 1])
        out.append(({k: val for k, val in zip(group, vals, strict=True)}, change))
    return out


def version_dates(frame: pd.DataFrame) -> dict[str, str | None]:
    """{version: first run date} of a frame, in version order."""
    table = version_table(frame)
    return dict(zip(table["version"], table[FIRST_DATE], strict=True))
