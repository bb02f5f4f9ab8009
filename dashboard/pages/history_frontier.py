"""The /history page's frontier part: the frontier of each version overlaid and the
frontier change between two versions as numbers with units, the breakpoints behind the
medians folded below (pure rendering of ``service.history.frontiers`` /
``frontier_change`` answers).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import dcc, html

from analysis import columns as C
from dashboard import components as ui
from dashboard.history_figures import frontier_overlay_figure
from dashboard.pages.compare_view import grid_height
from dashboard.pages.history_form import Form, scope_of
from service.errors import ServiceError
from service.frames import DashData
from service.history import FrontierChangeAnswer, frontier_change, frontiers

EMPTY_VERSION_HINTS = [
    "upload a run of another TensorRT-LLM version of this slice "
    "(`moedash upload out/*.json --trtllm-version …`)",
]


def _num(value: Any) -> str:
    """A number for reading: thousands separated above 1,000, else 4 significant
    digits."""
    if value is None or pd.isna(value):
        return "—"
    v = float(value)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _pct(value: Any) -> str:
    return "—" if value is None or pd.isna(value) else f"{float(value):+.2f} %"


def change_numbers(ans: FrontierChangeAnswer) -> html.Div:
    """The frontier change per slice as a key/value table with units."""
    if not ans.slices:
        return ui.empty_state(
            "Neither version has a frontier in this slice.", test_id="hist-fc-empty"
        )
    tables: list[html.Table | html.Details] = []
    for i, item in enumerate(ans.slices):
        s = item["summary"]
        ref = s["reference_point"]["latency_ms"]
        n_lat, n_tps = len(item["at_latency"]), len(item["at_throughput"])
        values = {
            "throughput change at fixed latency": f"{_pct(s['throughput_change_pct'])} "
            f"(tokens/s/GPU; median over {n_lat} latencies both frontiers reach)",
            "latency change at fixed throughput": f"{_pct(s['latency_change_pct'])} "
            f"(ms; median over {n_tps} throughputs both frontiers reach)",
            "hypervolume change": f"{_pct(s['hypervolume_change_pct'])} "
            f"({_num(s['hypervolume_base'])} → {_num(s['hypervolume_head'])} "
            f"ms·tokens/s/GPU; reference point {_num(ref)} ms, 0 tokens/s/GPU)",
            "frontier points": f"{s['base_points']} in {ans.base.label}, "
            f"{s['head_points']} in {ans.head.label}",
            "lowest latency (ms)": f"{_num(s['base_min_latency_ms'])} → "
            f"{_num(s['head_min_latency_ms'])}",
            "highest throughput (tokens/s/GPU)": f"{_num(s['base_max_tps'])} → "
            f"{_num(s['head_max_tps'])}",
        }
        tables.append(ui.kv_table(values, test_id="hist-fc-numbers"))
        tables.append(breakpoints(item, f"-{i}" if i else ""))
    return html.Div(tables)


_BREAKPOINT_HEADERS: dict[str, str] = {
    "latency_ms": "latency (ms)",
    "base_tps": "base (tokens/s/GPU)",
    "head_tps": "head (tokens/s/GPU)",
    "change_pct": "change (%)",
    C.TOKENS_PER_S_PER_GPU: "throughput (tokens/s/GPU)",
    "base_ms": "base (ms)",
    "head_ms": "head (ms)",
}


def breakpoints(item: dict[str, Any], suffix: str = "") -> html.Details:
    """The two grids behind the medians (folded): throughput of each frontier at every
    latency both reach, latency of each at every throughput both reach."""
    overrides = {c: {"headerName": h} for c, h in _BREAKPOINT_HEADERS.items()}
    parts: list[Any] = [html.Summary("the breakpoints behind the medians")]
    for grid_id, key, heading in (
        ("hist-fc-latency", "at_latency", "throughput at fixed latency"),
        ("hist-fc-throughput", "at_throughput", "latency at fixed throughput"),
    ):
        frame = item[key]
        parts.append(html.H3(heading))
        parts.append(
            ui.grid(
                grid_id + suffix,
                frame,
                list(frame.columns),
                page_size=20,
                height=grid_height(min(len(frame), 10)),
                col_overrides=overrides,
            )
        )
    return html.Details(parts)


def frontier_part(data: DashData, form: Form, title: str) -> list[Any]:
    try:
        ans = frontiers(data, scope_of(form), None, form.repeats)  # type: ignore[arg-type]
    except ServiceError as err:
        return [ui.empty_state(f"{err.field}: {err.msg}", test_id="hist-invalid")]
    order = [str(v) for v in ans.versions["version"]]
    fig = frontier_overlay_figure(
        ans.items,
        version_col=C.TRTLLM_VERSION,
        order=order,
        title=f"frontier of each version: {title}",
    )
    parts: list[Any] = [
        html.H2("Frontier of each version"),
        dcc.Graph(
            id="hist-frontier-graph", figure=fig, config=ui.graph_config(form.filename("frontier"))
        ),
        html.H2("Frontier change"),
    ]
    if len(order) < 2 or form.base is None or form.head is None:
        parts.append(
            ui.empty_state(
                "This slice holds one TensorRT-LLM version: no change to show yet.",
                EMPTY_VERSION_HINTS,
                test_id="hist-fc-empty",
            )
        )
        return parts
    try:
        change = frontier_change(data, scope_of(form), form.base, form.head, form.repeats)  # type: ignore[arg-type]
    except ServiceError as err:
        parts.append(ui.empty_state(f"{err.field}: {err.msg}", test_id="hist-invalid"))
        return parts
    parts.append(
        html.P(
            f"From {change.base.label} to {change.head.label} (positive throughput and "
            "hypervolume changes, negative latency changes are improvements).",
            className="status",
        )
    )
    parts.append(change_numbers(change))
    return parts
