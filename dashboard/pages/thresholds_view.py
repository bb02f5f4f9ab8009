"""The Thresholds page's blocks, each laid out from a service answer (no data access)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from dash import dcc, html

from analysis import columns as C
from analysis.threshold_agreement import SETS
from analysis.threshold_validation import AGGRESSIVE, AGREES, CONSERVATIVE, CONTRADICTS
from analysis.tree_text import number
from dashboard import components as ui
from dashboard.chart_names import file_stem, named_figure, slice_of
from dashboard.figures import evidence_figure
from dashboard.labelled import scroll_box
from service.thresholds import ThresholdReport

UNITS = {
    C.ACTIVATED_TOKENS_PER_RANK: "activated tokens per rank",
    C.DISPATCH_KB: "KiB dispatched per rank",
    C.WORLD_SIZE: "GPUs",
}
_COLOURS = {
    AGREES: "#05603a",
    CONSERVATIVE: "#b54708",
    AGGRESSIVE: "#b42318",
    CONTRADICTS: "#b42318",
}
# (column, header) of the main table; threshold values are in the row's unit
MAIN = (
    ("name", "threshold"),
    ("unit", "unit"),
    ("published", "published"),
    ("derived", "derived"),
    ("interval", "95 % interval"),
    ("bracket", "bracket"),
    ("status", "fit"),
    ("n_points", "votes (workloads)"),
    ("accuracy", "accuracy derived / published"),
    ("loo", "leave one out: accuracy derived / published"),
    ("verdict", "verdict"),
    ("verdict_reason", "why"),
)
_WIDE = {"verdict_reason": "320px", "loo": "190px", "name": "230px"}
GROUP = (
    ("group", "group"),
    ("name", "threshold"),
    ("published", "published"),
    ("derived", "derived"),
    ("interval", "95 % interval"),
    ("n_points", "votes (workloads)"),
    ("loo", "leave one out: accuracy derived / published"),
    ("verdict", "verdict"),
)
LOO = (
    ("name", "threshold"),
    ("held_out", "held out"),
    ("n_points", "held-out votes"),
    ("train_points", "training votes"),
    ("fitted", "fitted on the others"),
    ("fitted_from", "from"),
    ("accuracy_derived", "accuracy fitted (held out)"),
    ("accuracy_published", "accuracy published (held out)"),
)


def _pct(value: Any) -> str:
    return "—" if value is None or pd.isna(value) else f"{100 * float(value):.1f} %"


def _loo(r: dict[str, Any]) -> str:
    if not r.get("loo_n"):
        return "not possible (one model and one hardware, or too few votes)"
    helps = "helps" if r["loo_helps"] else "does not help"
    return (
        f"{_pct(r['loo_accuracy_derived'])} / {_pct(r['loo_accuracy_published'])} "
        f"({r['loo_n']} {r['loo_unit']}{'s' if r['loo_unit'] == 'model' else ''} held out; "
        f"{helps})"
    )


def _cells(r: dict[str, Any]) -> dict[str, Any]:
    lo, hi = r.get("bracket_lo"), r.get("bracket_hi")
    bracket = "—"
    if not (pd.isna(lo) and pd.isna(hi)):
        bracket = (
            f"{ui.fmt(lo) if not pd.isna(lo) else '-∞'} – {ui.fmt(hi) if not pd.isna(hi) else '∞'}"
        )
    return {
        **r,
        "unit": UNITS.get(str(r.get("axis")), str(r.get("axis"))),
        "published": number(r.get("published")),
        "derived": number(r.get("derived")),
        "bracket": bracket,
        "interval": r.get("interval") or None,
        "accuracy": f"{_pct(r.get('accuracy'))} / {_pct(r.get('accuracy_published'))}",
        "loo": _loo(r),
    }


def _table(rows: list[dict[str, Any]], cols: Sequence[tuple[str, str]], test_id: str) -> html.Table:
    body = []
    for raw in rows:
        r = _cells(raw)
        tds = []
        for col, _ in cols:
            style: dict[str, Any] = {"minWidth": _WIDE[col]} if col in _WIDE else {}
            if col == "verdict":
                style.update(color=_COLOURS.get(r["verdict"]), fontWeight=600)
            title = r.get("description") if col == "name" else None
            tds.append(html.Td(ui.fmt(r.get(col)), style=style or None, title=title))
        body.append(html.Tr(tds))
    return html.Table(
        [html.Thead(html.Tr([html.Th(h) for _, h in cols])), html.Tbody(body)],
        className="small",
        **ui.attrs(data_testid=test_id),
    )


def thresholds_table(report: ThresholdReport) -> html.Table:
    """Published vs derived, one row per threshold, the verdict coloured."""
    return _table(report.check.table.to_dict("records"), MAIN, "th-table")


def groups_table(report: ThresholdReport, by: str) -> Any:
    """The same per value of ``by`` (model, hardware or quant)."""
    g = report.check.groups
    part = g[g["by"] == by] if len(g) else g
    if part.empty:
        return ui.empty_state(
            f"No {by} in this slice has comparison points.", test_id="th-groups-empty"
        )
    return _table(part.to_dict("records"), GROUP, "th-groups")


def loo_table(report: ThresholdReport) -> Any:
    """One row per threshold x held-out unit."""
    loo = report.check.loo
    if loo.empty:
        return ui.empty_state(
            "Leave-one-out needs two models (or two hardware types) with at least three "
            "votes each in this slice.",
            test_id="th-loo-empty",
        )
    rows = []
    for r in loo.to_dict("records"):
        vals = {
            **r,
            "fitted": number(r["fitted"]),
            "accuracy_derived": _pct(r["accuracy_derived"]),
            "accuracy_published": _pct(r["accuracy_published"]),
        }
        rows.append(html.Tr([html.Td(ui.fmt(vals[c])) for c, _ in LOO]))
    table = html.Table(
        [html.Thead(html.Tr([html.Th(h) for _, h in LOO])), html.Tbody(rows)],
        className="small",
        **ui.attrs(data_testid="th-loo"),
    )
    return scroll_box(table, "leave one model out")


def agreement_table(report: ThresholdReport) -> Any:
    """Agreement % and regret per model x hardware x phase, the three sets side by side."""
    s = report.trees.summary
    if s.empty:
        return ui.empty_state(
            "No workloads to walk the tree on in this slice.", test_id="th-agreement-empty"
        )
    head1 = [html.Th(h, rowSpan=2) for h in ("model", "hardware", "phase", "workloads")]
    head1 += [
        html.Th(f"{m}", colSpan=3)
        for m in ("agreement (%)", "median regret (%)", "mean regret (%)")
    ]
    head2 = [html.Th(name) for _ in range(3) for name in SETS]
    rows = []
    for r in s.to_dict("records"):
        cells = [html.Td(ui.fmt(r[c])) for c in (C.MODEL, C.HARDWARE, C.PHASE, "n_workloads")]
        for metric, scale in (
            ("agreement_pct", 1.0),
            ("median_regret_pct", 1.0),
            ("mean_regret_pct", 1.0),
        ):
            base = r[f"{metric}_published"]
            for name in SETS:
                v = r[f"{metric}_{name}"]
                text = "—" if pd.isna(v) else f"{scale * float(v):.1f}"
                worse = (
                    metric == "agreement_pct"
                    and not pd.isna(v)
                    and not pd.isna(base)
                    and v < base - 1e-9
                )
                cells.append(
                    html.Td(text, style={"color": "#b42318", "fontWeight": 600} if worse else None)
                )
        rows.append(html.Tr(cells))
    return html.Table(
        [html.Thead([html.Tr(head1), html.Tr(head2)]), html.Tbody(rows)],
        className="small",
        **ui.attrs(data_testid="th-agreement"),
    )


def overall_line(report: ThresholdReport) -> html.P:
    parts = []
    for r in report.trees.overall.to_dict("records"):
        pct = "—" if pd.isna(r["agreement_pct"]) else f"{r['agreement_pct']:.1f} %"
        parts.append(f"{r['thresholds']}: {pct} of {r['n_workloads']} workloads")
    return html.P(
        "Overall agreement — " + "; ".join(parts) + ".",
        className="status",
        **ui.attrs(data_testid="th-overall"),
    )


def decisions_list(report: ThresholdReport) -> html.Ul:
    """Why each threshold is (not) in the validated set."""
    items = [
        html.Li([html.Strong(r["name"]), f": {r['reason']}"])
        for r in report.trees.decisions.to_dict("records")
    ]
    return html.Ul(items, **ui.attrs(data_testid="th-decisions"))


def evidence_named(report: ThresholdReport, name: str) -> tuple[Any, dcc.Graph.Config]:
    """(:func:`evidence`, its ``dcc.Graph`` config): title and PNG name say which
    threshold and the slice of its votes (model · GPU · quant · world size · phase)."""
    ev = report.check.evidence
    votes = ev[ev["name"] == name] if len(ev) else pd.DataFrame()
    where, what = slice_of(votes), f"evidence for {name}"
    fig = evidence(report, name)
    # keep the threshold's description and interval from the figure's own title
    fig = named_figure(fig, f"evidence for {fig.layout.title.text or name}", where)
    return fig, ui.graph_config(filename=file_stem(what, where))


def evidence(report: ThresholdReport, name: str) -> Any:
    """The votes of one threshold along its axis (y = rank 1's margin), published and
    derived marked; an empty chart for an unknown name."""
    t = report.check.table
    row = t[t["name"] == name] if len(t) else t
    ev = report.check.evidence
    if row.empty or ev.empty:
        return evidence_figure(pd.DataFrame(), C.ACTIVATED_TOKENS_PER_RANK, None, None, None, name)
    r = row.iloc[0]
    votes = ev[(ev["name"] == name) & ev["margin_pct"].notna()]
    derived = float(r["derived"]) if np.isfinite(r["derived"]) else None
    bracket = (float(r["bracket_lo"]), float(r["bracket_hi"])) if derived is not None else None
    title = f"{name}: {r['description']} — 95 % interval {r['interval'] or '—'}"
    return evidence_figure(votes, str(r["axis"]), float(r["published"]), derived, bracket, title)


def no_evidence() -> Any:
    """The evidence chart's empty state."""
    return evidence_figure(pd.DataFrame(), C.ACTIVATED_TOKENS_PER_RANK, None, None, None, "")


def tree_block(text: str, title: str, test_id: str) -> html.Div:
    return html.Div(
        [
            html.H3(title),
            html.Pre(
                text,
                className="code",
                tabIndex="0",
                **ui.attrs(data_testid=test_id, aria_label=f"tree with {title}"),
            ),
        ],
        className="half",
    )
