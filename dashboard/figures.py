"""Pure figure builders: DataFrame (or analysis result) in, ``go.Figure`` out.

No data access and no Dash here, so every builder is unit-tested as a plain function.
Big numeric arrays are passed as numpy (plotly 7 sends them as typed arrays) and the
candidate cloud uses ``Scattergl`` (WebGL): both measured in the stack notes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis import columns as C
from analysis.frontier import AXES, KEY
from dashboard.components import MODEBAR_REMOVE, label, log_axis, slice_label
from dashboard.components import axis as axis_props

# AXES (the Pareto page's axes and which direction is better) and KEY (a row's position
# in the cell frame, sent back in customdata on click) come from analysis.frontier.

BACKEND_COLORS: dict[str, str] = {
    "TRTLLM": "#1f77b4",
    "CUTEDSL": "#ff7f0e",
    "CUTLASS": "#2ca02c",
    "MEGAMOE_CUTEDSL": "#d62728",
    "MEGAMOE_DEEPGEMM": "#9467bd",
    "DEEPGEMM": "#8c564b",
    "DENSEGEMM": "#e377c2",
    "CUTEDSL_FC12": "#bcbd22",
    "MARLIN": "#17becf",
    "TRITON": "#7f7f7f",
}
FRONTIER_COLORS = {"decode": "#111111", "prefill": "#6a3d9a"}
_FALLBACK = ("#17becf", "#bcbd22", "#7f7f7f", "#aec7e8", "#ffbb78")
_RECIPE = (C.BACKEND, C.COMM, C.PARALLEL_MODE, C.MOE_EP_SIZE, C.MOE_TP_SIZE, C.CUDA_GRAPH)
_WHERE = (C.WORLD_SIZE, C.ATTN, C.DISPATCH)  # named in every point's hover
MAX_CLOUD_TRACES = 300


# A small explicit template: plotly's named templates cost ~30 ms per figure to apply.
_TEMPLATE: dict[str, Any] = {
    "layout": {
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "font": {"color": "#2a3f5f"},
        "xaxis": {
            "gridcolor": "#ebf0f8",
            "linecolor": "#ebf0f8",
            "zerolinecolor": "#ebf0f8",
            "automargin": True,
        },
        "yaxis": {
            "gridcolor": "#ebf0f8",
            "linecolor": "#ebf0f8",
            "zerolinecolor": "#ebf0f8",
            "automargin": True,
        },
        "colorway": list(BACKEND_COLORS.values()),
    }
}


def _layout(fig: go.Figure, height: int = 520) -> go.Figure:
    fig.update_layout(
        template=_TEMPLATE,
        height=height,
        margin={"l": 70, "r": 20, "t": 40, "b": 60},
        legend={"orientation": "v", "x": 1.01, "y": 1, "font": {"size": 11}},
        hoverlabel={"align": "left"},
        modebar={"remove": list(MODEBAR_REMOVE)},  # also where a page's config does not
    )
    return fig


def message_figure(text: str, height: int = 320) -> go.Figure:
    """An empty figure that says why it is empty (kept for Graph components that must
    always hold a figure)."""
    fig = go.Figure()
    fig.add_annotation(
        text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font={"size": 15}
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, height)


def backend_color(backend: str, index: int = 0) -> str:
    return BACKEND_COLORS.get(backend, _FALLBACK[index % len(_FALLBACK)])


def third_metric(x: str, y: str) -> str:
    """The one metric of :data:`AXES` that is on neither axis (hover shows it)."""
    rest = [m for m in AXES if m not in (x, y)]
    return rest[0] if rest else C.NUM_TOKENS


def _recipe_text(row: pd.Series | dict[str, Any]) -> str:
    graph = "on" if bool(row[C.CUDA_GRAPH]) else "off"
    return (
        f"{row[C.BACKEND]} · {row[C.COMM]} · {row[C.PARALLEL_MODE]} "
        f"(EP {row[C.MOE_EP_SIZE]} / TP {row[C.MOE_TP_SIZE]}) · CUDA graph {graph}"
    )


def _workload_text(row: pd.Series | dict[str, Any]) -> str:
    """World size, attention and routing of a point (missing values as "?")."""
    ws = row.get(C.WORLD_SIZE)
    attn = {"D": "DP", "T": "TP"}.get(str(row.get(C.ATTN)), "?")
    dispatch = row.get(C.DISPATCH)
    routing = "?" if dispatch is None or pd.isna(dispatch) else str(dispatch)
    size = "?" if ws is None or pd.isna(ws) else str(int(ws))
    return f"world size {size} GPUs · attention {attn} · routing {routing}"


def _hover(x: str, y: str, third: str, head: str) -> str:
    unit = {
        C.SCORE_MS: " ms",
        C.TOKENS_PER_S_PER_GPU: " tokens/s/GPU",
        C.ACTIVATED_TOKENS_PER_RANK: " tokens/rank",
        C.NUM_TOKENS: " tokens",
    }
    return (
        f"{head}<br>{label(x)}: %{{x:.4~g}}{unit.get(x, '')}"
        f"<br>{label(y)}: %{{y:.4~g}}{unit.get(y, '')}"
        f"<br>{label(third)}: %{{customdata[1]:.4~g}}{unit.get(third, '')}"
        "<br>num_tokens: %{customdata[2]:.0f} tokens"
        "<extra></extra>"
    )


def _group_rows(
    frame: pd.DataFrame, cols: Sequence[str]
) -> list[tuple[tuple[Any, ...], np.ndarray]]:
    """[(key values, row positions)] per distinct combination of ``cols``, keys in sorted
    order (missing last), positions ascending -- ``groupby(cols, sort=True,
    dropna=False, observed=True)`` without building a frame per group."""
    n = len(frame)
    key = np.zeros(n, dtype=np.int64)
    uniques = []
    for col in cols:
        codes, uniq = pd.factorize(frame[col], sort=True, use_na_sentinel=True)
        codes = np.asarray(codes, dtype=np.int64)
        codes[codes < 0] = len(uniq)  # missing sorts last
        uniques.append(list(uniq) + [None])
        key = key * (len(uniq) + 1) + codes
    order = np.argsort(key, kind="stable")
    sk = key[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]]) if n else np.zeros(0, np.int64)
    out = []
    for a, b in zip(starts, [*starts[1:], n], strict=True):
        rest, vals = int(sk[a]), []
        for u in reversed(uniques):
            rest, c = divmod(rest, len(u))
            vals.append(u[c])
        out.append((tuple(reversed(vals)), order[a:b]))
    return out


_MERGED_TEMPLATE: dict[str, Any] | None = None


def _merged_template() -> dict[str, Any]:
    """What ``update_layout(template=_TEMPLATE)`` leaves on a new figure (plotly's
    default template with ``_TEMPLATE`` merged in), computed once."""
    global _MERGED_TEMPLATE
    if _MERGED_TEMPLATE is None:
        fig = go.Figure()
        fig.update_layout(template=_TEMPLATE)
        _MERGED_TEMPLATE = fig.layout.template.to_plotly_json()
    return _MERGED_TEMPLATE


def _layout_dict(height: int) -> dict[str, Any]:
    """The layout :func:`_layout` gives, as a plain dict."""
    return {
        "template": _merged_template(),
        "height": height,
        "margin": {"l": 70, "r": 20, "t": 40, "b": 60},
        "legend": {"orientation": "v", "x": 1.01, "y": 1, "font": {"size": 11}},
        "hoverlabel": {"align": "left"},
        "modebar": {"remove": list(MODEBAR_REMOVE)},
    }


def pareto_figure(
    cloud: pd.DataFrame,
    frontier: pd.DataFrame,
    x: str,
    y: str,
    *,
    logx: bool = False,
    logy: bool = False,
    n_cloud_total: int | None = None,
    title: str | None = None,
    cell_label: str = "",
) -> go.Figure:
    """Candidate cloud (Scattergl, one trace per recipe x world size x attention x
    routing, coloured by backend) with the Pareto frontier on top (line + markers, one
    trace per phase).

    ``cloud`` and ``frontier`` carry ``x``, ``y``, the third metric, the recipe columns,
    world size, attention, dispatch, num_tokens, ``phase`` and ``_key`` (the row's
    position in the cell frame). Every trace's ``customdata`` is a numpy array with one
    row per point: [``_key``, third metric, num_tokens]; the hover shows the recipe,
    both axes, the third metric, num_tokens, world size, attention and routing.
    ``n_cloud_total`` is the cloud size before downsampling (shown in the title when
    larger than what is drawn). The default title leads with ``cell_label`` (the cell's
    model · GPU · quant) and :func:`dashboard.components.slice_label` of the rows
    (world size, phase; model/GPU/quant too when the frames carry them); plotly names
    the PNG download after the title.
    """
    third = third_metric(x, y)
    # Traces and layout are plain dicts and the figure skips plotly's per-property
    # validation: with a hundred recipe traces validation alone cost ~150 ms per update,
    # and update_layout with the template another ~30 ms.
    traces: list[dict[str, Any]] = []
    shown_backends: set[str] = set()
    drawn = len(cloud)  # the title counts every candidate, the frontier's included
    if len(cloud) and len(frontier) and KEY in cloud and KEY in frontier:
        # each point drawn once: a cloud copy under a frontier point would take its hover
        # (SVG scatter -- the partial plotly.js bundle -- hovers the first trace on a tie)
        cloud = cloud[~cloud[KEY].isin(frontier[KEY])]
    if len(cloud):
        recipe_cols = [c for c in _RECIPE if c in cloud]
        # world size, attention and routing get a trace each too, so the hover names them
        where_cols = [c for c in _WHERE if c in cloud]
        group_cols = recipe_cols + where_cols
        groups = _group_rows(cloud, group_cols)
        coarse = len(groups) > MAX_CLOUD_TRACES
        if coarse:  # too many recipes for one trace each: one per backend and workload
            group_cols = [C.BACKEND, *where_cols]
            groups = _group_rows(cloud, group_cols)
            if len(groups) > MAX_CLOUD_TRACES:
                group_cols, where_cols = [C.BACKEND], []
                groups = _group_rows(cloud, group_cols)
        backends = sorted(str(b) for b in cloud[C.BACKEND].dropna().unique())
        xs = cloud[x].to_numpy(np.float32, na_value=np.nan)
        ys = cloud[y].to_numpy(np.float32, na_value=np.nan)
        keys = cloud[KEY].to_numpy(np.float32)
        thirds = cloud[third].to_numpy(np.float32, na_value=np.nan)
        tokens = cloud[C.NUM_TOKENS].to_numpy(np.float32, na_value=np.nan)
        for values, rows in groups:
            fields = dict(zip(group_cols, values, strict=True))
            backend = str(values[0])
            head = f"<b>{backend}</b> (recipe on click)" if coarse else _recipe_text(fields)
            where = (
                _workload_text(fields)
                if where_cols
                else "world size, attention and routing on click"
            )
            traces.append(
                dict(
                    type="scattergl",
                    x=xs[rows],
                    y=ys[rows],
                    mode="markers",
                    name=backend,
                    legendgroup=backend,
                    showlegend=backend not in shown_backends,
                    marker={
                        "size": 5,
                        "opacity": 0.45,
                        "color": backend_color(
                            backend, backends.index(backend) if backend in backends else 0
                        ),
                    },
                    # numpy: sent as a typed array (small); the page decodes the clicked
                    # row in the browser (dashboard.pages.pareto, CLICKED_POINT_JS)
                    customdata=np.column_stack([keys[rows], thirds[rows], tokens[rows]]),
                    hovertemplate=_hover(x, y, third, f"{head}<br>{where}"),
                )
            )
            shown_backends.add(backend)
    for phase, part in frontier.groupby(C.PHASE, observed=True, sort=True) if len(frontier) else []:
        part = part.sort_values(x, kind="mergesort")
        custom = np.column_stack(
            [
                part[KEY].to_numpy(np.float64),
                part[third].to_numpy(np.float64, na_value=np.nan),
                part[C.NUM_TOKENS].to_numpy(np.float64, na_value=np.nan),
            ]
        )
        cols = [c for c in (*_RECIPE, *_WHERE) if c in part]
        text = [f"{_recipe_text(r)}<br>{_workload_text(r)}" for r in part[cols].to_dict("records")]
        traces.append(
            dict(
                type="scatter",
                x=part[x].to_numpy(np.float64),
                y=part[y].to_numpy(np.float64),
                mode="lines+markers",
                name=f"Pareto frontier ({phase})",
                line={"color": FRONTIER_COLORS.get(str(phase), "#111111"), "width": 2},
                marker={
                    "size": 9,
                    "symbol": "diamond",
                    "color": FRONTIER_COLORS.get(str(phase), "#111111"),
                    "line": {"width": 1, "color": "white"},
                },
                customdata=custom,
                text=text,
                hovertemplate=_hover(x, y, third, "<b>frontier</b> %{text}"),
            )
        )
    if title is None:
        title = f"{drawn:,} candidates"
        if n_cloud_total is not None and n_cloud_total > drawn:
            title = f"{drawn:,} of {n_cloud_total:,} candidates drawn (downsampled)"
        title += f" · {len(frontier)} on the frontier"
        # named for what it shows; plotly names the PNG download after the title too
        what = " · ".join(p for p in (cell_label, slice_label(cloud, frontier)) if p)
        title = f"{what} — {title}" if what else title
    layout = _layout_dict(560)
    layout.update(
        title={"text": title, "font": {"size": 14}},
        legend={**layout["legend"], "title": {"text": "backend"}},
        clickmode="event",
        xaxis=axis_props(label(x), cloud.get(x, ()), frontier.get(x, ()), log=logx),
        yaxis=axis_props(label(y), cloud.get(y, ()), frontier.get(y, ()), log=logy),
    )
    return go.Figure(data=traces, layout=layout, _validate=False)


def path_figure(steps: Sequence[dict[str, Any]]) -> go.Figure:
    """The thresholds the tree compared against: one bar pair (observed vs threshold)
    per step that had a threshold, log axis. ``steps`` are dicts with ``step``,
    ``threshold_name``, ``threshold_value``, ``observed`` and ``answer``."""
    rows = [
        s for s in steps if s.get("threshold_value") is not None and s.get("observed") is not None
    ]
    if not rows:
        return message_figure("no threshold decided this recommendation", 200)
    names = [f"{s['step']}: {s['threshold_name']}" for s in rows]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            y=names,
            x=[s["threshold_value"] for s in rows],
            orientation="h",
            name="threshold",
            marker_color="#bbbbbb",
            hovertemplate="threshold %{x:.4~g}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            y=names,
            x=[s["observed"] for s in rows],
            orientation="h",
            name="observed",
            marker_color="#1f77b4",
            text=[s["answer"] for s in rows],
            textposition="auto",
            hovertemplate="observed %{x:.4~g}<br>%{text}<extra></extra>",
        )
    )
    fig.update_layout(
        barmode="group", title={"text": "threshold vs observed value", "font": {"size": 14}}
    )
    values = [s[k] for s in rows for k in ("threshold_value", "observed")]
    fig.update_xaxes(**log_axis("value (tokens per rank, KiB or GPUs — see row)", values))
    return _layout(fig, 140 + 70 * len(rows))


def evidence_figure(
    evidence: pd.DataFrame,
    axis: str,
    published: float | None,
    derived: float | None,
    bracket: tuple[float, float] | None,
    title: str,
) -> go.Figure:
    """Winner along the axis for one threshold check: one point per comparison (y =
    margin %, colour = winning option), the published threshold (dashed), the derived
    crossover (solid) and the bracket it lies in (shaded)."""
    if evidence.empty:
        return message_figure("no comparison points for this threshold in the data", 300)
    fig = go.Figure()
    for i, (winner, part) in enumerate(evidence.groupby("winner", sort=True)):
        fig.add_trace(
            go.Scatter(
                x=part["axis_value"].to_numpy(float),
                y=part["margin_pct"].to_numpy(float),
                mode="markers",
                name=f"{winner} wins",
                marker={
                    "size": 8,
                    "color": _FALLBACK[i % 5] if i > 1 else ("#1f77b4", "#d62728")[i],
                },
                hovertemplate=f"{winner}<br>{label(axis)}: %{{x:.4~g}}<br>"
                "margin: %{y:.3~g} %<extra></extra>",
            )
        )
    # Reference lines are traces, not shapes with annotations: on a log axis plotly
    # places annotations in log10 units, which put "derived 96" at 1e96.
    margins = evidence["margin_pct"].to_numpy(float)
    finite = margins[np.isfinite(margins)]
    y_lo = float(min(finite.min(), 0.0)) if finite.size else 0.0
    y_hi = float(finite.max()) if finite.size else 1.0
    y_hi = y_hi if y_hi > y_lo else y_lo + 1.0
    if bracket and all(b is not None and math.isfinite(b) for b in bracket):
        fig.add_trace(
            go.Scatter(
                x=[bracket[0], bracket[1], bracket[1], bracket[0], bracket[0]],
                y=[y_lo, y_lo, y_hi, y_hi, y_lo],
                mode="lines",
                fill="toself",
                fillcolor="rgba(255,217,47,0.3)",
                line={"width": 0},
                name=f"crossover bracket {bracket[0]:.4g}–{bracket[1]:.4g}",
                hoverinfo="skip",
            )
        )
    for value, name, style in (
        (published, "published", {"dash": "dash", "color": "#444"}),
        (derived, "derived", {"color": "#d62728"}),
    ):
        if value is not None and math.isfinite(value):
            fig.add_trace(
                go.Scatter(
                    x=[value, value],
                    y=[y_lo, y_hi],
                    mode="lines",
                    line={**style, "width": 2},
                    name=f"{name} {value:.4g}",
                    hoverinfo="name",
                )
            )
    fig.update_layout(title={"text": title, "font": {"size": 14}})
    positive = (evidence["axis_value"] > 0).all()
    fig.update_xaxes(**axis_props(label(axis), evidence["axis_value"], log=bool(positive)))
    fig.update_yaxes(title_text="winner's margin (%)")
    return _layout(fig, 380)
