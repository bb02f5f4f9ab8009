"""Charts named for what they show: the title and the PNG download both carry
``model · GPU · quant · world size · phase`` of the rows drawn (``components.slice_label``)
next to what the chart is, so a saved ``threshold-vs-observed-deepseek_v4_pro-gb300-nvfp4-8-
gpus-decode.png`` still says where it came from."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from dash import dcc

from analysis import columns as C
from dashboard import components as ui

_TWO_LINES = 70  # px of top margin a two-line 14-15 px title needs


def with_phase(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a phase column (decode = CUDA graph on, prefill = off) when it has
    only the CUDA graph flag, so :func:`components.slice_label` can name the phase."""
    if C.PHASE in frame or C.CUDA_GRAPH not in frame or frame.empty:
        return frame
    flag = frame[C.CUDA_GRAPH]
    # a 0-d object array, not a bare None: numpy's stubs do not take None as an array
    missing = np.array(None, dtype=object)
    phase = np.where(
        flag.isna(), missing, np.where(flag.fillna(False).astype(bool), "decode", "prefill")
    )
    return frame.assign(**{C.PHASE: phase})


def slice_of(*frames: pd.DataFrame) -> str:
    """``model · GPU · quant · world size · phase`` of the rows of ``frames``."""
    return ui.slice_label(*(with_phase(f) for f in frames))


def deployment_frame(
    model: str | None, hardware: str, quant: str, world_size: int, phase: str
) -> pd.DataFrame:
    """One row describing a deployment, for :func:`slice_of`."""
    return pd.DataFrame(
        [
            {
                C.MODEL: model,
                C.HARDWARE: hardware,
                C.QUANT: quant,
                C.WORLD_SIZE: world_size,
                C.PHASE: phase,
            }
        ]
    )


def chart_name(what: str, where: str) -> str:
    """The title text: ``where`` on the first line, ``what`` on the second (just ``what``
    without a slice), so a long title still fits a narrow chart."""
    return f"{where}<br>{what}" if where else what


def file_stem(what: str, where: str) -> str:
    """The download's file name stem: ``what`` then the slice, slugged."""
    return ui.file_slug(f"{what} {where}".strip())


def named_figure(fig: go.Figure, what: str, where: str) -> go.Figure:
    """``fig`` titled :func:`chart_name` (other title settings kept), its top margin
    grown to fit two title lines."""
    fig.update_layout(title_text=chart_name(what, where))
    if where:
        fig.update_layout(margin_t=max(int(fig.layout.margin.t or 0), _TWO_LINES))
    return fig


def named_graph(fig: go.Figure, what: str, where: str, **props: Any) -> dcc.Graph:
    """A ``dcc.Graph`` of ``fig`` titled and PNG-named for ``what`` and ``where``."""
    return dcc.Graph(
        figure=named_figure(fig, what, where),
        config=ui.graph_config(filename=file_stem(what, where)),
        **props,
    )
