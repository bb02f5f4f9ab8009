"""The /crossovers body: the summary line, the chart of one series and the switch grid
(pure rendering of a ``service.crossovers`` answer; the page module owns the controls).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import dcc, html

from analysis.crossover_switches import NOT_COMPARED, ROBUST, TIE
from analysis.crossovers import AXIS_UNITS, OPTION, SERIES, SERIES_LABEL
from dashboard import components as ui
from dashboard.chart_names import chart_name, file_stem
from dashboard.crossover_figures import crossover_figure, option_colors
from dashboard.pages.crossovers_form import AXIS_LABELS, OPTION_LABELS, Form
from service.crossovers import CrossoverAnswer, crossover_answer
from service.errors import InvalidQuery
from service.frames import DashData

GRID_COLUMNS: tuple[str, ...] = (
    SERIES_LABEL,
    "switch",
    "before",
    "after",
    "bracket_lo",
    "bracket_hi",
    "verdict",
    "margin_lo_pct",
    "margin_hi_pct",
    "noise_lo_pct",
    "noise_hi_pct",
    "n_before",
    "n_after",
    "noise_source",
    "before_at_lo_ms",
    "after_at_lo_ms",
    "before_at_hi_ms",
    "after_at_hi_ms",
)


def headers(axis: str) -> dict[str, str]:
    """Grid header per switch column, with units (the axis unit for brackets)."""
    unit = AXIS_UNITS.get(axis, "")
    return {
        SERIES_LABEL: "series",
        "switch": "#",
        "before": "rank 1 before",
        "after": "rank 1 after",
        "bracket_lo": f"bracket low ({unit})",
        "bracket_hi": f"bracket high ({unit})",
        "n_before": "axis points before",
        "n_after": "axis points after",
        "margin_lo_pct": "margin at low (%)",
        "margin_hi_pct": "margin at high (%)",
        "noise_lo_pct": "noise band at low (%)",
        "noise_hi_pct": "noise band at high (%)",
        "verdict": "verdict",
        "noise_source": "noise from",
        "before_at_lo_ms": "before at low (ms)",
        "after_at_lo_ms": "after at low (ms)",
        "before_at_hi_ms": "before at high (ms)",
        "after_at_hi_ms": "after at high (ms)",
    }


def compute(data: DashData, form: Form) -> CrossoverAnswer:
    """The service answer for the page's form (InvalidQuery on a value not stored)."""
    return crossover_answer(data, form.query())


def _pick_series(ans: CrossoverAnswer, wanted: str | None) -> str:
    # called only when ``ans`` has at least one series (render)
    labels = [str(s) for s in ans.result.series[SERIES_LABEL]]
    if wanted in labels:
        return wanted
    with_switch = ans.result.series[ans.result.series["n_switches"] > 0]
    return str(with_switch[SERIES_LABEL].iloc[0]) if len(with_switch) else labels[0]


def _grid(switches: pd.DataFrame, axis: str) -> Any:
    overrides: dict[str, dict[str, Any]] = {c: {"headerName": h} for c, h in headers(axis).items()}
    overrides["verdict"]["cellClassRules"] = {"tie-cell": f"params.value !== '{ROBUST}'"}
    overrides[SERIES_LABEL]["minWidth"] = 260
    return ui.grid(
        "xo-switch-grid",
        switches,
        list(GRID_COLUMNS),
        page_size=25,
        height="420px",
        col_overrides=overrides,
    )


def _summary(data: DashData, ans: CrossoverAnswer) -> html.P:
    sw = ans.result.switches
    verdicts = sw["verdict"].value_counts() if len(sw) else pd.Series(dtype=int)
    prov = ans.provenance
    text = (
        f"{len(ans.result.series):,} series, {len(sw):,} switches: "
        f"{int(verdicts.get(ROBUST, 0))} robust, {int(verdicts.get(TIE, 0))} ties within "
        f"noise, {int(verdicts.get(NOT_COMPARED, 0))} not compared. From "
        f"{prov['n_candidates']:,} successful candidates in {len(prov['run_ids'])} "
        f"run{'s' if len(prov['run_ids']) != 1 else ''} "
        f"(TensorRT-LLM {', '.join(prov['trtllm_versions']) or '—'})."
    )
    return html.P(
        ui.with_synthetic_note(bool(prov["synthetic"]), text),
        className="status",
        **ui.attrs(data_testid="xo-summary"),
    )


def render(data: DashData, form: Form) -> tuple[Any, str | None, list[Any]]:
    """(body, charted series label, series dropdown options) for ``form``."""
    try:
        ans = compute(data, form)
    except InvalidQuery as err:
        msg = f"{err.field}: {err.msg}"
        return ui.empty_state(msg, ["pick a stored value"], test_id="xo-invalid"), None, []
    res = ans.result
    if res.series.empty:
        empty = ui.empty_state(
            "No comparable configurations in this slice.",
            ["widen a filter (choose “all”)", "pick another axis or option"],
            test_id="xo-empty",
        )
        return empty, None, []
    chosen = _pick_series(ans, form.series)
    s_id = int(res.series.loc[res.series[SERIES_LABEL] == chosen, SERIES].iloc[0])
    colors = option_colors(res.points[OPTION].astype(str).unique().tolist())
    # the series label names model · GPU · quant · world size · phase · attention · dispatch
    what = f"rank-1 {OPTION_LABELS[ans.option]} along {AXIS_LABELS[ans.axis]}"
    fig = crossover_figure(
        res.points[res.points[SERIES] == s_id],
        res.segments[res.segments[SERIES] == s_id],
        ans.axis,
        chart_name(what, chosen),
        colors,
    )
    table = (
        _grid(res.switches, ans.axis)
        if len(res.switches)
        else ui.empty_state(
            "Rank 1 never switches in this slice.",
            ["one option wins at every axis value of every series"],
            test_id="xo-no-switches",
        )
    )
    body = html.Div(
        [
            _summary(data, ans),
            html.Div(
                dcc.Graph(
                    id="xo-graph",
                    figure=fig,
                    config=ui.graph_config(filename=file_stem(what, chosen)),
                ),
                className="pareto-graph",
            ),
            html.H2("Switches (every series in the slice)"),
            html.A(
                "this answer as JSON (API)",
                href=form.api_href(),
                target="_blank",
                **ui.attrs(data_testid="xo-api-link"),
            ),
            table,
        ]
    )
    series_opts = [{"label": s, "value": s} for s in res.series[SERIES_LABEL].astype(str)]
    return body, chosen, series_opts
