"""Thresholds: the guide's five thresholds re-derived from the stored sweeps, per slice,
with intervals, verdicts, leave-one-model-out, the tree with published / derived /
validated thresholds side by side and the re-derived tree to take away.

URL: ``/thresholds?model=&hardware=&quant=&dispatch=&by=none|model|hardware|quant
&check=<threshold name>&tree=derived|validated``.

Every number comes from ``service.thresholds.threshold_report`` (the answer behind
``/api/v1/thresholds``, ``/thresholds/validation``, ``/thresholds/agreement``) and the
downloads from ``service.thresholds.tree_download`` (behind ``/api/v1/thresholds/tree``).
The blocks are laid out by :mod:`dashboard.pages.thresholds_view`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from analysis import columns as C
from analysis.tables import to_csv_text
from dashboard import components as ui
from dashboard.labelled import control, scroll_box
from dashboard.pages import thresholds_view as V
from service.errors import InvalidQuery
from service.frames import DashData
from service.threshold_slice import FILTERS, ThresholdSlice, allowed_values, threshold_slice
from service.thresholds import RULE_TEXT, names, threshold_report, tree_download

PATH = "/thresholds"
ALL = "all"
BYS = ("none", C.MODEL, C.HARDWARE, C.QUANT)
TREES = ("derived", "validated")
_LABELS = {
    C.MODEL: "model",
    C.HARDWARE: "hardware",
    C.QUANT: "precision",
    C.DISPATCH: "dispatch pattern",
}


@dataclass(frozen=True)
class View:
    """The page state (all of it lives in the URL)."""

    model: str | None = None
    hardware: str | None = None
    quant: str | None = None
    dispatch: str | None = None
    by: str = "none"
    check: str = names()[0]
    tree: str = "derived"

    def search(self) -> str:
        return ui.search_string(
            {
                "model": self.model,
                "hardware": self.hardware,
                "quant": self.quant,
                "dispatch": self.dispatch,
                "by": None if self.by == "none" else self.by,
                "check": self.check,
                "tree": None if self.tree == "derived" else self.tree,
            }
        )


def make_view(*values: Any) -> View:
    """Control values (model, hardware, quant, dispatch, by, check, tree) -> View;
    "all" and unknown choices fall back to the defaults."""
    model, hardware, quant, dispatch, by, check, tree = (list(values) + [None] * 7)[:7]

    def one(v: Any) -> str | None:
        return None if v in (None, "", ALL) else str(v)

    return View(
        one(model),
        one(hardware),
        one(quant),
        one(dispatch),
        by if by in BYS else "none",
        check if check in names() else names()[0],
        tree if tree in TREES else "derived",
    )


def _slice(data: DashData, v: View) -> ThresholdSlice:
    return threshold_slice(data, v.model, v.hardware, v.quant, v.dispatch)


def update(data: DashData, *values: Any) -> tuple[Any, Any, Any, str]:
    """Controls -> (body, evidence figure, its graph config (PNG name), URL search)."""
    v = make_view(*values)
    try:
        s = _slice(data, v)
    except InvalidQuery as err:
        return (
            ui.empty_state(err.msg, ["choose “all” or a stored value"], "th-invalid"),
            V.no_evidence(),
            ui.graph_config(),
            v.search(),
        )
    # the page's answer once per view and data version (the bootstrap behind it takes
    # seconds; the evidence figure alone most of a second), shared by every visitor
    key = ("thresholds-page", v.by, v.check, v.tree, s.key())
    return data.cached(key, lambda: _answer(data, s, v), where=s.filters())


def _answer(data: DashData, s: ThresholdSlice, v: View) -> tuple[Any, Any, Any, str]:
    report = threshold_report(data, s)
    prov = report.provenance
    if not prov["n_candidates"]:
        empty = ui.empty_state(
            f"No successful candidates in {s.label}.",
            [
                "upload bench_moe sweeps (or `moedash ingest` NVIDIA's data.js)",
                "choose “all” filters",
            ],
            "th-empty",
        )
        return empty, *V.evidence_named(report, v.check), v.search()
    versions = ", ".join(prov["trtllm_versions"]) or "unknown"
    status = html.P(
        ui.with_synthetic_note(
            prov["synthetic"],
            f"{s.label}: {prov['n_candidates']:,} successful candidates from "
            f"{len(prov['run_ids'])} runs (TensorRT-LLM {versions}).",
        ),
        className="status",
        **ui.attrs(data_testid="th-status"),
    )
    published = tree_download(data, s, "published", "text").content
    rederived = tree_download(data, s, v.tree, "text").content  # type: ignore[arg-type]
    body = html.Div(
        [
            status,
            html.H2("Published vs re-derived thresholds"),
            scroll_box(V.thresholds_table(report), "published vs re-derived thresholds"),
            *(
                [
                    html.H2(f"Per {_LABELS[v.by]}"),
                    scroll_box(V.groups_table(report, v.by), f"thresholds per {_LABELS[v.by]}"),
                ]
                if v.by != "none"
                else []
            ),
            html.H2("Leave one model out"),
            V.loo_table(report),
            html.H2("The tree with published, derived and validated thresholds"),
            V.overall_line(report),
            scroll_box(V.agreement_table(report), "tree agreement per slice"),
            html.H3("Validated set: derived only where validation says it helps"),
            V.decisions_list(report),
            html.H2("The guide's tree: published vs re-derived"),
            html.Div(
                [
                    V.tree_block(published, "published thresholds", "th-tree-published"),
                    V.tree_block(rederived, f"{v.tree} thresholds", "th-tree-rederived"),
                ],
                className="row",
            ),
        ]
    )
    return body, *V.evidence_named(report, v.check), v.search()


def download(data: DashData, which: str, *values: Any) -> dict[str, Any] | None:
    """The ``dcc.Download`` payload: the re-derived tree as text or JSON, or the
    thresholds table as CSV (None for an invalid slice)."""
    v = make_view(*values)
    try:
        s = _slice(data, v)
    except InvalidQuery:
        return None
    if which == "csv":
        table = threshold_report(data, s).check.table
        return {
            "content": to_csv_text(table),
            "filename": f"moedash-thresholds-{s.stem}.csv",
            "type": "text/csv",
        }
    out = tree_download(data, s, v.tree, "json" if which == "json" else "text")  # type: ignore[arg-type]
    return {"content": out.content, "filename": out.filename, "type": out.media_type}


def _dropdown(cid: str, values: list[str], value: str | None, label: str) -> Any:
    opts = [{"label": "all", "value": ALL}, *ui.options(values)]
    return control(
        label,
        dcc.Dropdown(
            id=cid, options=opts, value=value if value in values else ALL, clearable=False
        ),
    )


def layout(data: DashData, **query: Any) -> html.Div:
    v = make_view(
        *(
            ui.first(query, k)
            for k in ("model", "hardware", "quant", "dispatch", "by", "check", "tree")
        )
    )
    allowed = {c: allowed_values(data, c) for c in FILTERS}
    chosen = {c: getattr(v, c) for c in FILTERS}
    if chosen[C.HARDWARE]:
        chosen[C.HARDWARE] = chosen[C.HARDWARE].upper()
    dropped = [
        f"{c} {val!r} is not stored; showing all"
        for c, val in chosen.items()
        if val and val not in allowed[c]
    ]
    radio = [
        control(
            "breakdown",
            dcc.RadioItems(
                id="th-by",
                options=[
                    {"label": "none" if b == "none" else f"per {_LABELS[b]}", "value": b}
                    for b in BYS
                ],
                value=v.by,
                inline=True,
            ),
        ),
        control(
            "re-derived tree",
            dcc.RadioItems(id="th-tree", options=ui.options(TREES), value=v.tree, inline=True),
        ),
    ]
    controls = html.Div(
        [*[_dropdown(f"th-{c}", allowed[c], chosen[c], _LABELS[c]) for c in FILTERS], *radio],
        className="controls",
    )
    # The first answer comes with the page (cached per view and data version, warmed at
    # start): no callback round trip before the tables; the callback runs on changes.
    shown = [val if val and val in allowed[c] else ALL for c, val in chosen.items()]
    body, figure, config, _ = update(data, *shown, v.by, v.check, v.tree)
    downloads = html.Div(
        [
            ui.download_button("th-txt-btn", "Download tree (text)"),
            ui.download_button("th-json-btn", "Download tree (JSON)"),
            ui.download_button("th-csv-btn", "Download thresholds (CSV)"),
        ]
    )
    return html.Div(
        [
            dcc.Location(id="th-url", refresh=False),
            html.H1("Thresholds: the guide's values re-derived from the data"),
            html.P(
                "Each threshold is asked in the guide's own terms — is rank 1 the option the "
                "tree switches to (X) or not — of every workload the tree sends through it, so "
                "top-3-only data count. One switch is fitted along the tree's axis.",
                className="lead",
            ),
            html.P(RULE_TEXT, className="lead", **ui.attrs(data_testid="th-rule")),
            html.Ul(
                [html.Li(d) for d in dropped],
                className="notes",
                **ui.attrs(data_testid="th-dropped"),
            )
            if dropped
            else None,
            controls,
            downloads,
            control(
                "evidence for threshold",
                dcc.Dropdown(
                    id="th-check", options=ui.options(names()), value=v.check, clearable=False
                ),
                wide=True,
            ),
            ui.loading(
                dcc.Graph(id="th-evidence", figure=figure, config=config), "th-evidence-loading"
            ),
            ui.loading(html.Div(body, id="th-body"), "th-loading"),
            dcc.Download(id="th-download"),
        ]
    )


CONTROLS = ("th-model", "th-hardware", "th-quant", "th-dispatch", "th-by", "th-check", "th-tree")


def register(app: dash.Dash, data: DashData) -> None:
    @app.callback(
        Output("th-body", "children"),
        Output("th-evidence", "figure"),
        Output("th-evidence", "config"),
        Output("th-url", "search"),
        *[Input(c, "value") for c in CONTROLS],
        prevent_initial_call=True,  # layout() drew the first answer
    )
    def _update(*values: Any) -> tuple[Any, Any, Any, str]:
        return update(data, *values)

    @app.callback(
        Output("th-download", "data"),
        Input("th-txt-btn", "n_clicks"),
        Input("th-json-btn", "n_clicks"),
        Input("th-csv-btn", "n_clicks"),
        *[State(c, "value") for c in CONTROLS],
        prevent_initial_call=True,
    )
    def _download(n_txt: int | None, n_json: int | None, n_csv: int | None, *values: Any) -> Any:
        if not (n_txt or n_json or n_csv):
            return dash.no_update
        which = {"th-json-btn": "json", "th-csv-btn": "csv"}.get(str(dash.ctx.triggered_id), "text")
        return download(data, which, *values)
