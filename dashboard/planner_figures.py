"""Pure builders for the planner page: plan payload pieces in, figures or rows out.

Inputs are the JSON-ready pieces of ``service.planner.run_plan`` (lists of records or
DataFrames), so the page, the API export and the tests all read the same shapes.
No data access and no Dash components here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures import message_figure

LANES: tuple[str, ...] = ("attention", "M2N", "expert", "N2M")
LANE_LABELS: dict[str, str] = {
    "attention": "attention nodes",
    "M2N": "M2N (attention → experts)",
    "expert": "expert nodes",
    "N2M": "N2M (experts → attention)",
}
MICRO_BATCH_COLORS: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
)  # fmt: skip
SWEEP_COLOR = "#1f6feb"
COST_COLOR = "#b54708"


def _frame(data: pd.DataFrame | Sequence[Mapping[str, Any]] | None) -> pd.DataFrame:
    if data is None:
        return pd.DataFrame()
    return data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))


def _layout(fig: go.Figure, height: int) -> go.Figure:
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 80, "r": 30, "t": 50, "b": 55},
        hoverlabel={"align": "left"},
        legend={"orientation": "h", "y": -0.2, "x": 0},
    )
    return fig


def na_sweep_figure(
    sweep: pd.DataFrame | Sequence[Mapping[str, Any]] | None,
    best_na: int | None = None,
    title: str = "Throughput per GPU against attention nodes (na)",
) -> go.Figure:
    """The paper's DP sweep: tokens/s per GPU (left axis) and per cost unit (right axis)
    against na, the other choices of the best plan held fixed.

    Filled markers meet Ta ≈ Te, hollow ones do not; infeasible na (memory or SLO) are
    grey crosses on the axis; a dashed line marks the chosen na.
    """
    df = _frame(sweep)
    if df.empty or "na" not in df:
        return message_figure("No na sweep: no disaggregated plan fits memory and the SLO.")
    feasible_mask = (
        df["feasible"].astype(bool).to_numpy() if "feasible" in df else np.ones(len(df), dtype=bool)
    )
    ok = df.loc[feasible_mask]
    bad = df.loc[~feasible_mask]
    fig = go.Figure()
    if len(ok):
        balanced = (
            ok["balance_met"].astype(bool).to_numpy()
            if "balance_met" in ok
            else np.zeros(len(ok), dtype=bool)
        )
        custom = np.column_stack(
            [
                ok["batch"].to_numpy(float),
                ok["ta_ms"].to_numpy(float),
                ok["te_ms"].to_numpy(float),
                ok["tbt_ms"].to_numpy(float),
                ok["gpus"].to_numpy(float),
                ok["tput_per_cost"].to_numpy(float),
            ]
        )
        fig.add_trace(
            go.Scatter(
                x=ok["na"].to_numpy(int),
                y=ok["tput_per_gpu"].to_numpy(float),
                mode="lines+markers",
                name="throughput per GPU (tokens/s/GPU)",
                line={"color": SWEEP_COLOR, "width": 2},
                marker={
                    "size": 9,
                    "color": SWEEP_COLOR,
                    "symbol": np.where(balanced, "circle", "circle-open").tolist(),
                    "line": {"width": 2, "color": SWEEP_COLOR},
                },
                customdata=custom,
                hovertemplate=(
                    "na = %{x}<br>throughput: %{y:.4~g} tokens/s/GPU"
                    "<br>per cost: %{customdata[5]:.4~g} tokens/s per unit"
                    "<br>batch B = %{customdata[0]:.0f} sequences"
                    "<br>Ta = %{customdata[1]:.3f} ms, Te = %{customdata[2]:.3f} ms"
                    "<br>TBT = %{customdata[3]:.1f} ms, GPUs = %{customdata[4]:.0f}"
                    "<extra></extra>"
                ),
            )
        )
        fig.add_trace(
            go.Scatter(
                x=ok["na"].to_numpy(int),
                y=ok["tput_per_cost"].to_numpy(float),
                mode="lines",
                name="throughput per cost (tokens/s per cost unit)",
                yaxis="y2",
                line={"color": COST_COLOR, "width": 1.5, "dash": "dot"},
                hovertemplate="na = %{x}<br>%{y:.4~g} tokens/s per cost unit<extra></extra>",
            )
        )
    if len(bad):
        fig.add_trace(
            go.Scatter(
                x=bad["na"].to_numpy(int),
                y=np.zeros(len(bad)),
                mode="markers",
                name="infeasible (memory or SLO)",
                marker={"symbol": "x", "size": 8, "color": "#98a2b3"},
                hovertemplate="na = %{x}: no batch meets the SLO and memory<extra></extra>",
            )
        )
    if best_na is not None:
        fig.add_vline(
            x=best_na,
            line={"dash": "dash", "color": "#344054", "width": 1},
            annotation_text=f"chosen na = {best_na}",
            annotation_position="top",
        )
    fig.update_layout(
        title={"text": title, "font": {"size": 15}},
        xaxis={
            "title": {"text": "attention nodes na (data-parallel replicas)"},
            "dtick": 1 if df["na"].max() <= 24 else None,
        },
        yaxis={"title": {"text": "throughput per GPU (tokens/s/GPU)"}, "rangemode": "tozero"},
        yaxis2={
            "title": {"text": "tokens/s per cost unit", "font": {"color": COST_COLOR}},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
            "tickfont": {"color": COST_COLOR},
        },
    )
    _layout(fig, 430)
    fig.update_layout(margin={"r": 80})
    return fig


def timeline_figure(
    rows: pd.DataFrame | Sequence[Mapping[str, Any]] | None,
    title: str = "Ping-pong pipeline of one layer",
) -> go.Figure:
    """Gantt chart of the schedule (``analysis.planner.timeline``): one row per lane
    (attention, M2N, expert, N2M, top to bottom), one bar per micro-batch and layer,
    coloured by micro-batch, labelled with its number."""
    df = _frame(rows)
    if df.empty:
        return message_figure("No timeline: no disaggregated plan fits memory and the SLO.")
    df = df.assign(duration=df["end_ms"] - df["start_ms"])
    fig = go.Figure()
    for k, (mb, part) in enumerate(sorted(df.groupby("micro_batch"), key=lambda t: t[0])):
        color = MICRO_BATCH_COLORS[k % len(MICRO_BATCH_COLORS)]
        labels = [LANE_LABELS.get(str(x), str(x)) for x in part["lane"]]
        multi_layer = part["layer"].nunique() > 1 or df["layer"].max() > 1
        text = [f"{mb}·L{layer}" if multi_layer else str(mb) for layer in part["layer"]]
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=labels,
                x=part["duration"].to_numpy(float),
                base=part["start_ms"].to_numpy(float),
                name=f"micro-batch {mb}",
                marker={"color": color, "line": {"color": "#ffffff", "width": 1}},
                text=text,
                textposition="inside",
                insidetextanchor="middle",
                customdata=np.column_stack(
                    [part["layer"].to_numpy(int), part["end_ms"].to_numpy(float)]
                ),
                hovertemplate=(
                    f"micro-batch {mb}, layer %{{customdata[0]}}<br>%{{y}}"
                    "<br>%{base:.3f} → %{customdata[1]:.3f} ms"
                    "<br>duration %{x:.3f} ms<extra></extra>"
                ),
            )
        )
    order = [LANE_LABELS[lane] for lane in LANES]
    fig.update_layout(
        title={"text": title, "font": {"size": 15}},
        barmode="overlay",
        bargap=0.25,
        xaxis={"title": {"text": "time (ms)"}, "rangemode": "tozero"},
        yaxis={"categoryorder": "array", "categoryarray": order[::-1], "title": None},
    )
    return _layout(fig, 330)


def constraint_rows(constraints: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """The three pipeline constraints as display rows: label, met/violated, value, bound
    and the detail text with the numbers."""
    out = []
    for c in constraints or ():
        out.append(
            {
                "constraint": c.get("label") or c.get("name"),
                "status": "met" if c.get("met") else "violated",
                "met": bool(c.get("met")),
                "value": c.get("value"),
                "bound": c.get("bound"),
                "detail": c.get("detail", ""),
            }
        )
    return out


def fit_rows(fits: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Te fit quality per GPU: source (fit / roofline / user), whether used, the sweep
    group it came from (quant, attention mode, EP size, backend), points, R² (of the
    refused candidate too), k3 and k4 against the roofline's, and the note saying why."""
    out = []
    for f in fits or ():
        roof = f.get("roofline_slope_ms")
        slope = f.get("slope_ms")
        ratio = slope / roof if slope is not None and roof else None
        out.append(
            {
                "GPU": f.get("gpu"),
                "source": f.get("source"),
                "used": "yes" if f.get("used") else "no",
                "group": ", ".join(f"{k}={v}" for k, v in (f.get("group") or {}).items()),
                "points": f.get("n_points"),
                "R²": f.get("r2") if f.get("r2") is not None else f.get("candidate_r2"),
                "tokens/expert fitted": (
                    f"{f['fitted_be_min']:.0f}–{f['fitted_be_max']:.0f}"
                    if f.get("fitted_be_min") is not None
                    else ""
                ),
                "plans may use": (
                    f"{f['plan_be_min']:.1f}–{f['plan_be_max']:.0f}"
                    if f.get("plan_be_max") is not None
                    else "any"
                ),
                "k3 (ms/token)": slope,
                "k4 (ms)": f.get("intercept_ms"),
                "k3 / roofline": ratio,
                "residual max (ms)": f.get("residual_max_ms"),
                "note": f.get("note", ""),
            }
        )
    return out


def fit_rule_lines(fits: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """The data rule of each stored-sweep fit in words (``fit_rule.FitRule.describe``),
    one line per GPU, with where the request departs from it."""
    out = []
    for f in fits or ():
        if f.get("rule_text"):
            off = "; ".join(f.get("rule_deviations") or [])
            out.append(f"{f.get('gpu')}: {f['rule_text']}" + (f" (departs: {off})" if off else ""))
    return out


def comparison_rows(
    best: Mapping[str, Any] | None, colocated: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """Disaggregated best vs the co-located deployment, metric by metric."""
    metrics = (
        ("GPUs", "gpus", "gpus"),
        ("batch (sequences)", "batch", "batch"),
        ("TBT (ms)", "tbt_ms", "tbt_ms"),
        ("throughput (tokens/s)", "throughput", "throughput"),
        ("tokens/s per GPU", "tput_per_gpu", "tput_per_gpu"),
        ("tokens/s per cost unit", "tput_per_cost", "tput_per_cost"),
        ("tokens/s per W", "tput_per_watt", "tput_per_watt"),
    )
    rows = []
    for text, bkey, ckey in metrics:
        rows.append(
            {
                "metric": text,
                "disaggregated": (best or {}).get(bkey),
                "co-located": (colocated or {}).get(ckey),
            }
        )
    return rows


def fit_points_figure(fit: Mapping[str, Any] | None) -> go.Figure:
    """Te points vs the fitted line for one GPU (top) and the residuals (bottom).

    x: tokens per expert ``be``; y: ms per expert-equivalent on one GPU (score_ms with
    dispatch/combine taken out, times ep*tp/E). The line is the least-squares candidate
    (drawn dashed when the fit was refused). No points: a message figure.
    """
    pts = _frame((fit or {}).get("points"))
    if fit is None or pts.empty:
        return message_figure("No stored sweep points for this GPU: Te is the roofline.")
    used = bool(fit.get("used"))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3])
    fig.add_trace(go.Scatter(x=pts["be"], y=pts["t_ms"], mode="markers", name="sweep points"), 1, 1)
    xs = np.linspace(float(pts["be"].min()), float(pts["be"].max()), 50)
    slope, icpt = fit.get("candidate_slope_ms"), fit.get("candidate_intercept_ms")
    if slope is not None and icpt is not None:
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=slope * xs + icpt,
                mode="lines",
                name=f"fit (R² {fit.get('candidate_r2') or 0:.3f}{'' if used else ', refused'})",
                line={"dash": "solid" if used else "dash"},
            ),
            1,
            1,
        )
    if "residual_ms" in pts:
        fig.add_trace(
            go.Bar(x=pts["be"], y=pts["residual_ms"], name="residual", marker_color=COST_COLOR),
            2,
            1,
        )
    fig.update_xaxes(title_text="tokens per expert be (tokens)", row=2, col=1)
    fig.update_yaxes(title_text="Te per expert, one GPU (ms)", row=1, col=1)
    fig.update_yaxes(title_text="residual (ms)", row=2, col=1)
    fig.update_layout(title=f"Te fit on {fit.get('gpu')}: {fit.get('group') or {}}")
    return _layout(fig, 420)


SIDE_BY_SIDE: tuple[tuple[str, str], ...] = (
    ("attention GPU", "attention_gpu"),
    ("expert GPU", "expert_gpu"),
    ("attention nodes na × TP", "_att"),
    ("expert nodes × TP (experts per node)", "_exp"),
    ("micro-batches m", "m"),
    ("GPUs", "gpus"),
    ("batch (sequences)", "batch"),
    ("Ta (ms)", "ta_ms"),
    ("Te (ms)", "te_ms"),
    ("Tc (ms)", "tc_ms"),
    ("TBT (ms)", "tbt_ms"),
    ("throughput (tokens/s)", "throughput"),
    ("tokens/s per GPU", "tput_per_gpu"),
    ("tokens/s per cost unit", "tput_per_cost"),
    ("all constraints met", "constraints_met"),
)


def side_by_side_rows(
    alternatives: Sequence[Mapping[str, Any]] | None, a: int, b: int
) -> list[dict[str, Any]]:
    """Plans ranked ``a`` and ``b`` (1 = first listed) metric by metric, with the
    difference b - a for numbers. Empty when either rank is not listed."""
    alts = list(alternatives or [])
    if not (1 <= a <= len(alts) and 1 <= b <= len(alts)):
        return []
    pa, pb = alts[a - 1], alts[b - 1]

    def value(p: Mapping[str, Any], key: str) -> Any:
        if key == "_att":
            return f"{p['na']} × TP{p['tpa']}"
        if key == "_exp":
            return f"{p['expert_nodes']} × TP{p['tpe']} ({p['experts_per_node']})"
        return p.get(key)

    rows = []
    for label, key in SIDE_BY_SIDE:
        va, vb = value(pa, key), value(pb, key)
        num = isinstance(va, int | float) and isinstance(vb, int | float)
        diff = vb - va if num and not isinstance(va, bool) else None
        rows.append({"metric": label, f"#{a}": va, f"#{b}": vb, "difference": diff})
    return rows
