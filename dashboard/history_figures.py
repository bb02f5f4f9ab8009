"""Pure figure builders for the /history and /compare pages: a DataFrame in, a
``go.Figure`` out (no data access, no Dash components).

* :func:`history_figure` -- score (ms, log axis) of each workload x configuration over
  the TensorRT-LLM versions (categorical x axis in the order the service gives: version
  number, then run date), one trace per series, the run-to-run spread as error bars.
* :func:`frontier_overlay_figure` -- the throughput/latency Pareto frontier of each
  version of one slice, one trace per version (legend by version, older versions
  lighter), drawn as the step the frontier is (best throughput reachable within a
  latency).
* :func:`change_figure` -- the compare page's change (%) per workload x configuration
  against num_tokens, coloured by verdict, the threshold as dashed lines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from analysis import columns as C
from analysis.derived import as_float
from dashboard.components import label, log_axis
from dashboard.figures import _layout, message_figure

VERDICT_COLORS: dict[str, str] = {
    "regression": "#d92d20",
    "improvement": "#067647",
    "unchanged": "#98a2b3",
}
_OTHER = "#344054"


def version_colors(versions: Sequence[str]) -> dict[str, str]:
    """One colour per version, in order: older lighter, the newest darkest (a viridis
    ramp read backwards, so the newest version stands out)."""
    n = len(versions)
    if n == 0:
        return {}
    points = [0.85 * (1 - i / (n - 1)) if n > 1 else 0.0 for i in range(n)]
    return dict(zip(versions, sample_colorscale("Viridis", points), strict=True))


def _title(fig: go.Figure, title: str) -> None:
    fig.update_layout(title={"text": title, "font": {"size": 14}, "x": 0.01})


def _ordered(values: pd.Series, order: Sequence[str]) -> list[str]:
    """``order`` restricted to the values present, then any value it does not name."""
    present = {str(v) for v in values.dropna().unique()}
    out = [v for v in order if v in present]
    return out + sorted(present - set(out))


def history_figure(
    points: pd.DataFrame,
    *,
    x_col: str,
    series_col: str,
    order: Sequence[str] = (),
    title: str = "",
    spread_col: str | None = None,
    text_col: str | None = None,
    x_title: str | None = None,
    empty: str = "no measurement of this selection",
) -> go.Figure:
    """Score (ms) per ``x_col`` value (categorical, in ``order``), one line per
    ``series_col`` value. ``spread_col`` (a fraction of the score, e.g. the run-to-run
    spread) becomes +- error bars where known; ``text_col`` (e.g. the configuration of
    a best-per-workload point) is shown in the hover. Rows without a positive score are left
    out; the y axis is logarithmic when the scores span more than a factor of 3."""
    score = as_float(points[C.SCORE_MS]) if C.SCORE_MS in points and len(points) else None
    if score is None or not np.isfinite(score).any():
        return message_figure(empty)
    frame = points.assign(_score=score)
    frame = frame[np.isfinite(score) & (score > 0)]
    if frame.empty:
        return message_figure(empty)
    xs = _ordered(frame[x_col].astype(str), [str(v) for v in order])
    x = frame[x_col].astype(str).to_numpy(dtype=object)
    pos = pd.Series(x).map({v: i for i, v in enumerate(xs)}).to_numpy(dtype=np.int64)
    names = frame[series_col].astype(str).to_numpy(dtype=object)
    y_all = frame["_score"].to_numpy(dtype=float)
    spread_all = as_float(frame[spread_col]) * y_all if spread_col and spread_col in frame else None
    text_all = (
        frame[text_col].astype(str).to_numpy(dtype=object)
        if text_col and text_col in frame
        else None
    )
    hover_text = "<br>%{text}" if text_all is not None else ""
    # one pass: rows by series name, then x position (arrays only, one trace per name)
    order_rows = np.lexsort((pos, names.astype(str)))
    sorted_names = names[order_rows]
    starts = np.flatnonzero(np.r_[True, sorted_names[1:] != sorted_names[:-1]])
    traces = []
    for lo, hi in zip(starts, np.r_[starts[1:], len(order_rows)], strict=True):
        rows = order_rows[lo:hi]
        name = str(sorted_names[lo])
        error = None
        if spread_all is not None:
            spread = spread_all[rows]
            error = {
                "type": "data",
                "array": np.where(np.isfinite(spread), spread, 0.0).tolist(),
                "visible": True,
                "thickness": 1,
            }
        traces.append(
            go.Scatter(
                x=x[rows].tolist(),
                y=y_all[rows].tolist(),
                mode="lines+markers",
                name=name,
                error_y=error,
                text=text_all[rows].tolist() if text_all is not None else None,
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.4~g}} ms{hover_text}<extra></extra>",
            )
        )
    fig = go.Figure(data=traces)
    scores = frame["_score"].to_numpy(dtype=float)
    log = bool(scores.max() / scores.min() > 3)
    fig.update_xaxes(
        type="category",
        categoryorder="array",
        categoryarray=xs,
        title_text=x_title or "TensorRT-LLM version (ordered by version number, then run date)",
    )
    if log:
        fig.update_yaxes(**log_axis(label(C.SCORE_MS), scores))
    else:
        fig.update_yaxes(type="linear", title_text=label(C.SCORE_MS))
    _title(fig, title)
    return _layout(fig, 460)


def frontier_overlay_figure(
    frontiers: pd.DataFrame,
    *,
    version_col: str,
    order: Sequence[str] = (),
    title: str = "",
    empty: str = "no frontier in this slice",
) -> go.Figure:
    """One step trace per version: its frontier points (``score_ms`` on a log x axis,
    ``tokens_per_s_per_gpu`` on a log y axis) sorted by latency, joined horizontally
    then vertically (the best throughput reachable within a latency steps up at each
    frontier point)."""
    needed = {C.SCORE_MS, C.TOKENS_PER_S_PER_GPU, version_col}
    if frontiers.empty or not needed <= set(frontiers.columns):
        return message_figure(empty)
    versions = _ordered(frontiers[version_col].astype(str), [str(v) for v in order])
    colors = version_colors(versions)
    fig = go.Figure()
    x_all = as_float(frontiers[C.SCORE_MS])
    y_all = as_float(frontiers[C.TOKENS_PER_S_PER_GPU])
    ok = np.isfinite(x_all) & np.isfinite(y_all) & (x_all > 0) & (y_all > 0)
    frame = frontiers.assign(_x=x_all, _y=y_all, _v=frontiers[version_col].astype(str))[ok]
    if frame.empty:
        return message_figure(empty)
    has_tokens = C.NUM_TOKENS in frame
    for version in versions:
        rows = frame[frame["_v"] == version].sort_values(["_x", "_y"], kind="stable")
        if rows.empty:
            continue
        tokens = (
            as_float(rows[C.NUM_TOKENS]) if has_tokens else np.full(len(rows), np.nan)
        ).tolist()
        fig.add_trace(
            go.Scatter(
                x=rows["_x"].tolist(),
                y=rows["_y"].tolist(),
                mode="lines+markers",
                line={"shape": "hv", "color": colors[version], "width": 2},
                marker={"size": 7, "color": colors[version]},
                name=version,
                customdata=tokens,
                hovertemplate=(
                    f"{version}<br>{label(C.SCORE_MS)}: %{{x:.4~g}} ms"
                    f"<br>{label(C.TOKENS_PER_S_PER_GPU)}: %{{y:.4~g}}"
                    "<br>num_tokens: %{customdata:.0f} tokens<extra></extra>"
                ),
            )
        )
    fig.update_xaxes(**log_axis(label(C.SCORE_MS) + " — lower is better", frame["_x"]))
    fig.update_yaxes(**log_axis(label(C.TOKENS_PER_S_PER_GPU) + " — higher is better", frame["_y"]))
    fig.update_layout(legend_title_text="TensorRT-LLM version")
    _title(fig, title)
    return _layout(fig, 480)


def change_figure(
    table: pd.DataFrame,
    *,
    change_col: str,
    verdict_col: str,
    threshold_pct: float,
    title: str = "",
    empty: str = "no configuration measured on both sides",
) -> go.Figure:
    """Change (%) of each workload x configuration measured on both sides against its
    num_tokens (log x axis), one trace per verdict; +-``threshold_pct`` dashed."""
    if table.empty or change_col not in table or C.NUM_TOKENS not in table:
        return message_figure(empty)
    change = as_float(table[change_col])
    tokens = as_float(table[C.NUM_TOKENS])
    ok = np.isfinite(change) & np.isfinite(tokens) & (tokens > 0)
    if not ok.any():
        return message_figure(empty)
    frame = table.assign(_c=change, _t=tokens)[ok]
    fig = go.Figure()
    verdicts = frame[verdict_col].astype(str) if verdict_col in frame else None
    names = (
        [*VERDICT_COLORS, *sorted(set(verdicts) - set(VERDICT_COLORS))]
        if verdicts is not None
        else [""]
    )
    for name in names:
        rows = frame if verdicts is None else frame[verdicts == name]
        if rows.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=rows["_t"].tolist(),
                y=rows["_c"].tolist(),
                mode="markers",
                name=name or "change",
                marker={"color": VERDICT_COLORS.get(name, _OTHER), "size": 8, "opacity": 0.8},
                hovertemplate=(
                    f"{name}<br>num_tokens %{{x:.0f}} tokens<br>change %{{y:+.2f}} %<extra></extra>"
                ),
            )
        )
    for sign in (1, -1):
        fig.add_hline(y=sign * threshold_pct, line={"dash": "dash", "color": "#667085", "width": 1})
    fig.update_xaxes(**log_axis(label(C.NUM_TOKENS), frame["_t"]))
    fig.update_yaxes(
        title_text="change of score, head vs base (%) — above 0 is slower", zeroline=True
    )
    fig.update_layout(legend_title_text="verdict")
    _title(fig, title)
    return _layout(fig, 420)
