"""Pure builders for the /routing page: a routing-skew comparison table in, a figure out.

No data access and no Dash components (the page and the tests call these on the table
``service.routing.routing_skew`` returns).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.derived import as_float
from analysis.routing_skew import CONFIGURATION, NOISE_BAND_PCT, SLOWDOWN_PCT
from dashboard.figures import _layout, message_figure


def slowdown_figure(table: pd.DataFrame, balanced: str, skewed: str) -> go.Figure:
    """One horizontal bar per configuration measured under both patterns: its slowdown
    under ``skewed`` vs ``balanced`` (%), with the pair's noise band as a +- error bar;
    ordered as the table (balanced rank). Bars beyond the band are red, within it grey."""
    paired = table[np.isfinite(as_float(table[SLOWDOWN_PCT]))] if len(table) else table
    if paired.empty:
        return message_figure(f"no configuration was measured under both {balanced} and {skewed}")
    slow = as_float(paired[SLOWDOWN_PCT])
    band = as_float(paired[NOISE_BAND_PCT])
    names = [str(c) for c in paired[CONFIGURATION]]
    colors = np.where(slow > band, "#d92d20", "#98a2b3")
    fig = go.Figure(
        go.Bar(
            x=slow.tolist(),
            y=names,
            orientation="h",
            marker_color=colors.tolist(),
            error_x={"type": "data", "array": band.tolist(), "visible": True},
            customdata=np.column_stack(
                [as_float(paired["balanced_score_ms"]), as_float(paired["skewed_score_ms"]), band]
            ).tolist(),
            hovertemplate=(
                "%{y}<br>slowdown %{x:+.1f} % (noise band ±%{customdata[2]:.1f} %)"
                f"<br>{balanced}: %{{customdata[0]:.4~g}} ms · {skewed}: "
                "%{customdata[1]:.4~g} ms<extra></extra>"
            ),
        )
    )
    fig.update_layout(
        title={
            "text": f"slowdown under {skewed}, per configuration",
            "font": {"size": 14},
        },
        showlegend=False,
    )
    fig.update_xaxes(title_text=f"{skewed} / {balanced} score − 1 (%)", zeroline=True)
    fig.update_yaxes(autorange="reversed", title_text="configuration (balanced rank order)")
    return _layout(fig, 160 + 34 * len(paired))
