"""Pure builders for the /crossval page: a ledger frame in, counts or a figure out.

No data access and no Dash components here (the page and the tests call these on the
frame ``service.crossval.compute_ledger`` returns).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analysis import columns as C
from analysis import crossval_columns as cc
from dashboard.figures import message_figure

GROUP = "group"  # "<Model> · <hardware> · <phase>" bar label
COUNT = "count"
# Statuses drawn, in stacking order (not mappable workloads have no bench_moe shape).
STATUSES: tuple[str, ...] = (cc.MATCH, cc.MISMATCH, cc.NO_DATA)
STATUS_COLORS: dict[str, str] = {
    cc.MATCH: "#12b76a",
    cc.MISMATCH: "#f79009",
    cc.NO_DATA: "#d0d5dd",
    cc.NOT_MAPPABLE: "#98a2b3",
}
PHASES: tuple[str, ...] = ("prefill", "decode")


def model_display(model: object) -> str:
    """The guide's model name (``DeepSeek-R1``) for a bench_moe model name."""
    text = "—" if model is None or (isinstance(model, float) and pd.isna(model)) else str(model)
    return cc.MODEL_DISPLAY.get(text, text)


def status_counts(ledger_df: pd.DataFrame) -> pd.DataFrame:
    """Workloads per (model, hardware, phase) and status, for ``STATUSES`` only.

    Columns: group, model, hardware, phase, then one count column per status; rows sorted
    by model display name, hardware, then prefill before decode. Empty frame (same
    columns) when nothing has one of those statuses.
    """
    cols = [GROUP, C.MODEL, C.HARDWARE, cc.PHASE, *STATUSES]
    if ledger_df.empty:
        return pd.DataFrame(columns=cols)
    lg = ledger_df[ledger_df[cc.STATUS].isin(STATUSES)]
    if lg.empty:
        return pd.DataFrame(columns=cols)
    keys = [C.MODEL, C.HARDWARE, cc.PHASE]
    counts = (
        lg.assign(**{k: lg[k].astype(object).where(lg[k].notna(), "—") for k in keys})
        .groupby([*keys, cc.STATUS], sort=False)
        .size()
        .unstack(cc.STATUS, fill_value=0)
        .reindex(columns=list(STATUSES), fill_value=0)
        .reset_index()
    )
    counts.columns.name = None
    phase_rank = {p: i for i, p in enumerate(PHASES)}
    counts["_m"] = counts[C.MODEL].map(model_display)
    counts["_p"] = counts[cc.PHASE].map(lambda p: phase_rank.get(p, len(PHASES)))
    counts = counts.sort_values(["_m", C.HARDWARE, "_p"], kind="mergesort")
    counts[GROUP] = (
        counts["_m"] + " · " + counts[C.HARDWARE].astype(str) + " · " + counts[cc.PHASE].astype(str)
    )
    for s in STATUSES:
        counts[s] = counts[s].astype(int)
    return counts[cols].reset_index(drop=True)


def status_figure(ledger_df: pd.DataFrame) -> go.Figure:
    """Horizontal stacked bars: Match / Mismatch / no data workloads per model · hardware ·
    phase (first group on top). A message figure when there is nothing to draw."""
    counts = status_counts(ledger_df)
    if counts.empty:
        return message_figure("No mappable workloads in this selection.", height=220)
    groups = counts[GROUP].tolist()
    fig = go.Figure()
    for s in STATUSES:
        vals = counts[s].to_numpy()
        total = counts[list(STATUSES)].sum(axis=1).to_numpy()
        fig.add_trace(
            go.Bar(
                y=groups,
                x=vals,
                name=s,
                orientation="h",
                marker_color=STATUS_COLORS[s],
                text=[str(v) if v else "" for v in vals],
                textposition="inside",
                insidetextanchor="middle",
                customdata=total,
                hovertemplate=f"%{{y}}<br>{s}: %{{x}} of %{{customdata}} workloads<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        title={
            "text": "Deployed MoE config vs bench_moe best, per model · hardware · phase",
            "font": {"size": 14},
            "y": 0.98,
            "yanchor": "top",
        },
        xaxis={"title": {"text": "workloads (count)"}, "gridcolor": "#ebf0f8", "automargin": True},
        yaxis={"autorange": "reversed", "type": "category", "automargin": True},
        legend={
            "orientation": "h",
            "x": 0,
            "y": 1.0,
            "xanchor": "left",
            "yanchor": "bottom",
            "traceorder": "normal",
        },
        plot_bgcolor="white",
        paper_bgcolor="white",
        font={"color": "#2a3f5f"},
        height=150 + 34 * len(groups),
        margin={"l": 70, "r": 20, "t": 70, "b": 50},
        hoverlabel={"align": "left"},
    )
    return fig
