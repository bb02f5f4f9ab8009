"""The Best page's controls, laid out from the page's state (no data access)."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from dashboard import components as ui
from dashboard import labelled as lb
from service.frames import Cell

REPEAT_OPTIONS = [
    {"label": "median over repeat runs", "value": "median"},
    {"label": "latest run only", "value": "latest"},
]


def dispatch_choice_options(patterns: list[str], default: str) -> list[dict[str, Any]]:
    """One option per routing pattern; the default one says so."""
    return [{"label": f"{p} (default)" if p == default else p, "value": p} for p in patterns]


def controls(
    cells: list[Cell],
    cell: Cell,
    grouping: str,
    ws: int | None,
    sizes: list[int],
    patterns: list[str],
    default: str,
    dispatch: str | None,
    repeats: str,
) -> html.Div:
    """Cell, grouping, world size, routing pattern, repeats and the CSV button."""
    return html.Div(
        [
            lb.control(
                "model · hardware · precision",
                dcc.Dropdown(
                    id="best-cell",
                    options=[{"label": c.label, "value": c.key} for c in cells],
                    value=cell.key,
                    clearable=False,
                ),
                wide=True,
            ),
            lb.control(
                "grouping",
                dcc.RadioItems(
                    id="best-grouping",
                    options=[
                        {
                            "label": "bench_moe (num_tokens, parallel mode)",
                            "value": "bench_moe",
                        },
                        {
                            "label": "NVIDIA dashboard "
                            "(ws, num_tokens, dispatch, CUDA graph, attention)",
                            "value": "dashboard",
                        },
                    ],
                    value=grouping,
                ),
                wide=True,
            ),
            lb.control(
                "world size (GPUs)",
                dcc.Dropdown(
                    id="best-ws",
                    options=[{"label": "all", "value": "all"}, *ui.options(sizes)],
                    value="all" if ws is None else ws,
                    clearable=False,
                ),
                wide=False,
            ),
            lb.control(
                "routing pattern (dispatch)",
                dcc.Dropdown(
                    id="best-dispatch",
                    options=dispatch_choice_options(patterns, default),
                    value=dispatch or None,
                    clearable=False,
                    placeholder="no pattern recorded",
                ),
                wide=False,
            ),
            lb.control(
                "repeat runs",
                dcc.RadioItems(
                    id="best-repeats",
                    options=REPEAT_OPTIONS,
                    value=repeats,
                    inline=True,
                ),
                wide=True,
            ),
            lb.action(ui.download_button("best-csv-btn", "Download CSV")),
        ],
        className="controls",
    )
