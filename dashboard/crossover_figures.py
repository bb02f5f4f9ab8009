"""Pure builders for the /crossovers page: one series of an explorer answer in, a figure
out (no data access, no Dash components).

The chart draws every option's score curve (score_ms of its best configuration at each
axis value, log-log) and, behind them, one band per segment coloured by its rank-1
option and labelled with it. Band edges sit halfway (in log space) between the last axis
value of one winner and the first of the next -- the bracket -- so each band covers
exactly the axis values its option wins; the outer edges are padded by half the nearest
step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis import columns as C
from analysis.crossovers import AXIS_VALUE, OPTION, RANK, SERIES
from dashboard.components import log_axis
from dashboard.figures import BACKEND_COLORS, _layout, message_figure

AXIS_TITLES: dict[str, str] = {
    C.NUM_TOKENS: "num_tokens (tokens)",
    C.ACTIVATED_TOKENS_PER_RANK: "activated tokens per rank (tokens per rank)",
    C.DISPATCH_KB: "dispatch volume (KiB)",
}
_PALETTE: tuple[str, ...] = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
)
BAND_OPACITY = 0.14


def option_colors(options: Sequence[str]) -> dict[str, str]:
    """A colour per option: a backend's own colour on the Pareto page when the option is
    that backend, else the palette in sorted-option order (stable across series)."""
    out: dict[str, str] = {}
    free = iter(_PALETTE * (len(options) // len(_PALETTE) + 1))
    for name in sorted(set(options)):
        out[name] = BACKEND_COLORS.get(name) or next(free)
    return out


def band_edges(axis_values: np.ndarray) -> np.ndarray:
    """Edges around sorted distinct axis values (> 0): geometric midpoints between
    neighbours, the ends padded by half the nearest log step (x sqrt(2) for a single
    value). Length = len(axis_values) + 1."""
    x = np.asarray(axis_values, dtype=float)
    if len(x) == 0:
        return np.zeros(0)
    if len(x) == 1:
        return np.array([x[0] / np.sqrt(2.0), x[0] * np.sqrt(2.0)])
    mid = np.sqrt(x[1:] * x[:-1])
    lo = x[0] / np.sqrt(x[1] / x[0])
    hi = x[-1] * np.sqrt(x[-1] / x[-2])
    return np.concatenate(([lo], mid, [hi]))


def crossover_figure(
    points: pd.DataFrame,
    segments: pd.DataFrame,
    axis: str,
    title: str,
    colors: dict[str, str] | None = None,
    height: int = 480,
) -> go.Figure:
    """Winner bands over the score curves of one series (``points`` and ``segments`` of
    one series of a ``CrossoverMap``). A message figure when there is nothing to draw."""
    if points.empty:
        return message_figure("No comparable configurations in this series.", height=height)
    colors = colors or option_colors(points[OPTION].astype(str).tolist())
    xs = np.sort(points[AXIS_VALUE].unique().astype(float))
    edges = band_edges(xs)
    fig = go.Figure()
    for seg in segments.itertuples(index=False):  # one per segment, a handful
        i0 = int(np.searchsorted(xs, float(seg.axis_lo)))
        i1 = int(np.searchsorted(xs, float(seg.axis_hi)))
        fig.add_shape(
            type="rect",
            xref="x",
            yref="paper",
            x0=float(edges[i0]),
            x1=float(edges[i1 + 1]),
            y0=0,
            y1=1,
            layer="below",
            line={"width": 0},
            fillcolor=colors.get(str(seg.option), "#999999"),
            opacity=BAND_OPACITY,
            name=f"rank 1: {seg.option}",
            label={
                "text": str(seg.option),
                "textposition": "top center",
                "font": {"size": 11, "color": "#344054"},
            },
        )
    for name, part in points.groupby(OPTION, sort=True, observed=True):
        part = part.sort_values(AXIS_VALUE)
        wins = part[RANK].to_numpy() == 1
        fig.add_trace(
            go.Scatter(
                x=part[AXIS_VALUE].to_numpy(dtype=float),
                y=part[C.SCORE_MS].to_numpy(dtype=float),
                mode="lines+markers",
                name=str(name),
                line={"color": colors.get(str(name)), "width": 2},
                marker={
                    "size": np.where(wins, 10, 6),
                    "symbol": np.where(wins, "circle", "circle-open"),
                },
                customdata=np.c_[part[RANK].to_numpy(), part["n_options"].to_numpy()],
                hovertemplate=(
                    f"<b>{name}</b><br>{AXIS_TITLES.get(axis, axis)}: %{{x:.4~g}}"
                    "<br>score: %{y:.4~g} ms<br>rank %{customdata[0]} of "
                    "%{customdata[1]}<extra></extra>"
                ),
            )
        )
    # a tick at each measured axis value (when few): log axes otherwise label 2..9 too
    ticks = {"tickvals": xs, "ticktext": [f"{v:.6g}" for v in xs]} if len(xs) <= 16 else {}
    fig.update_xaxes(
        **{**log_axis(AXIS_TITLES.get(axis, axis), xs), **ticks},
        range=[float(np.log10(edges[0])), float(np.log10(edges[-1]))],
    )
    fig.update_yaxes(**log_axis("score (ms), best configuration", points[C.SCORE_MS]))
    fig = _layout(fig, height)
    fig.update_layout(title={"text": title, "font": {"size": 14}}, margin={"t": 60})
    return fig


def series_keys(series: pd.DataFrame) -> list[str]:
    """The page's handle for each series of an answer: its label (unique per answer)."""
    return [str(s) for s in series["series_label"]] if SERIES in series else []
