"""The Pareto page's controls, laid out from a :class:`ParetoQuery` (no data access)."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from analysis.frontier import AXES
from dashboard import components as ui
from dashboard import labelled as lb
from dashboard.pages.pareto_query import MULTI, ParetoQuery
from service.frames import Cell


def filter_options(values: dict[str, list[Any]]) -> dict[str, list[dict[str, Any]]]:
    """Dropdown options from ``service.pareto.filter_values`` (world size adds "all";
    the default routing pattern is marked "(default)")."""
    default = (values.get("dispatch_default") or [None])[0]
    opts = {
        "ws": [{"label": "all", "value": "all"}] + ui.options(values["ws"]),
        **{key: ui.options(values[key]) for key in MULTI},
    }
    opts["dispatch"] = [
        {"label": f"{v} (default)" if v == default else str(v), "value": v}
        for v in values["dispatch"]
    ]
    return opts


def default_dispatch(opts: dict[str, list[dict[str, Any]]]) -> str | None:
    """The pattern :func:`filter_options` marked as the default (None without one)."""
    return next(
        (o["value"] for o in opts.get("dispatch", []) if str(o["label"]).endswith("(default)")),
        None,
    )


def _control(text: str, component: Any, wide: bool = False) -> Any:
    """``component`` under its label, the label naming it (``dashboard.labelled``)."""
    return lb.control(text, component, wide=wide)


def _multi(key: str, text: str, q: ParetoQuery, opts: dict[str, list[dict[str, Any]]]) -> Any:
    return _control(
        text,
        dcc.Dropdown(
            id=f"pareto-{key}",
            options=opts[key],
            value=list(getattr(q, key)),
            multi=True,
            placeholder="all",
        ),
    )


def controls(cells: list[Cell], q: ParetoQuery, opts: dict[str, list[dict[str, Any]]]) -> html.Div:
    """Cell, filters, axes and scales, set to ``q`` (``q.cell`` is one of ``cells``)."""
    axis_opts = [{"label": ui.label(a), "value": a} for a in AXES]
    return html.Div(
        [
            _control(
                "model · hardware · precision",
                dcc.Dropdown(
                    id="pareto-cell",
                    options=[{"label": c.label, "value": c.key} for c in cells],
                    value=q.cell.key if q.cell else None,
                    clearable=False,
                ),
                wide=True,
            ),
            _control(
                "world size (GPUs)",
                dcc.Dropdown(
                    id="pareto-ws",
                    options=opts["ws"],
                    value="all" if q.ws is None else q.ws,
                    clearable=False,
                ),
            ),
            _control(
                "phase",
                dcc.RadioItems(
                    id="pareto-phase",
                    options=[
                        {"label": "decode (CUDA graph on)", "value": "decode"},
                        {"label": "prefill (CUDA graph off)", "value": "prefill"},
                        {"label": "both", "value": "all"},
                    ],
                    value=q.phase,
                    inline=True,
                ),
                wide=True,
            ),
            _control(
                "attention",
                dcc.RadioItems(
                    id="pareto-attn",
                    options=[
                        {"label": "all", "value": "all"},
                        {"label": "DP", "value": "D"},
                        {"label": "TP", "value": "T"},
                    ],
                    value=q.attn,
                    inline=True,
                ),
            ),
            _control(
                "routing pattern (dispatch; one at a time)",
                dcc.Dropdown(
                    id="pareto-dispatch",
                    options=opts["dispatch"],
                    value=q.dispatch[0] if q.dispatch else default_dispatch(opts),
                    multi=False,
                    clearable=False,
                    placeholder="default: balanced where measured",
                ),
            ),
            _multi("mode", "parallel mode", q, opts),
            _multi("backend", "backend", q, opts),
            _multi("comm", "comm", q, opts),
            _control(
                "x axis",
                dcc.Dropdown(id="pareto-x", options=axis_opts, value=q.x, clearable=False),
            ),
            _control(
                "y axis",
                dcc.Dropdown(id="pareto-y", options=axis_opts, value=q.y, clearable=False),
            ),
            _control(
                "repeat runs",
                dcc.RadioItems(
                    id="pareto-repeats",
                    options=[
                        {"label": "median over repeats", "value": "median"},
                        {"label": "latest run only", "value": "latest"},
                    ],
                    value=q.repeats,
                    inline=True,
                ),
                wide=True,
            ),
            _control(
                "scales",
                dcc.Checklist(
                    id="pareto-log",
                    options=[
                        {"label": "log x", "value": "x"},
                        {"label": "log y", "value": "y"},
                    ],
                    value=[a for a, on in (("x", q.logx), ("y", q.logy)) if on],
                    inline=True,
                ),
            ),
        ],
        className="controls",
    )
