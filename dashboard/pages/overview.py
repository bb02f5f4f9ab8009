"""Overview: what is in the database.

URL: ``/`` (no parameters). The coverage matrix (model x hardware x precision rows,
world-size columns, cell = distinct workloads with a success) links each cell to its
Pareto view; recent uploads list their metadata; synthetic data carries a badge.
"""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import html

from analysis import columns as C
from dashboard import components as ui
from dashboard.static_html import El, StaticHtml, link, table
from service.filenames import display_filename
from service.frames import DashData

PATH = "/"


def coverage_matrix(cov: pd.DataFrame) -> StaticHtml:
    """Rows model x hardware x quant, columns world size; each cell is the number of
    workloads, linked to ``/pareto`` for that model/hardware/quant/world size."""
    sizes = sorted(int(w) for w in cov[C.WORLD_SIZE].unique())
    head = ["model", "hardware", "precision", *[f"ws {w}" for w in sizes], "data"]
    body = []
    for (model, hw, quant), part in cov.groupby([C.MODEL, C.HARDWARE, C.QUANT], sort=True):
        by_ws = {int(r[C.WORLD_SIZE]): r for r in part.to_dict("records")}
        cells: list[Any] = []
        for w in sizes:
            r = by_ws.get(w)
            if r is None:
                cells.append(El("td", "", className="cov-empty"))
                continue
            href = "/pareto" + ui.search_string(
                {"model": model, "hardware": hw, "quant": quant, "world_size": w}
            )
            title = f"{int(r['runs'])} run(s), {int(r['candidates']):,} candidates"
            cells.append(
                El("td", link(f"{int(r['workloads'])}", href, title=title), className="cov-cell")
            )
        synthetic = bool(part[C.SYNTHETIC].any())
        kind = ("synthetic", "synthetic") if synthetic else ("measured", "measured")
        body.append([str(model), str(hw), str(quant), *cells, _badge(*kind)])
    return StaticHtml(table(head, body, className="coverage"), **ui.attrs(data_testid="coverage"))


def _badge(text: str, kind: str) -> El:
    return El("span", text, className=f"badge badge-{kind}")


def _link_or_text(url: Any) -> Any:
    text = ui.fmt(url)
    if isinstance(url, str) and url.startswith(("https://", "http://")):
        return El("a", text, href=url, target="_blank", rel="noopener noreferrer")
    return text


def recent_table(runs: pd.DataFrame) -> StaticHtml:
    cols = (
        "run",
        "file",
        "uploaded",
        "run date",
        "TRT-LLM",
        "hardware",
        "model",
        "precision",
        "ws",
        "candidates (ok/failed/skipped)",
        "CI",
        "notes",
        "data",
    )
    rows = []
    for r in runs.to_dict("records"):
        uploaded = r.get("uploaded_at")
        rows.append(
            [
                link(str(r[C.RUN_ID]), f"/run?id={r[C.RUN_ID]}"),
                El("td", ui.fmt(display_filename(r.get("filename"))), className="wrap"),
                str(uploaded)[:16] if uploaded is not None else "—",
                ui.fmt(r.get(C.RUN_DATE)),
                ui.fmt(r.get(C.TRTLLM_VERSION)),
                ui.fmt(r.get(C.HARDWARE)),
                ui.fmt(r.get(C.MODEL)),
                ui.fmt(r.get(C.QUANT)),
                ui.fmt(r.get(C.WORLD_SIZE)),
                f"{r['n_candidates']} ({r['n_success']}/{r['n_failed']}/{r['n_skipped']})",
                El("td", _link_or_text(r.get("ci_url")), className="wrap"),
                El("td", ui.fmt(r.get("notes")), className="wrap notes"),
                _badge("synthetic", "synthetic") if r.get(C.SYNTHETIC) else "",
            ]
        )
    return StaticHtml(table(cols, rows, className="recent"), **ui.attrs(data_testid="recent"))


def layout(data: DashData, **query: Any) -> html.Div:
    cov = data.coverage()
    if cov.empty:
        return html.Div(
            [
                html.H1("What is in the database"),
                ui.empty_state(
                    "No runs yet.",
                    [
                        "upload a bench_moe JSON: POST /api/v1/runs with a token from "
                        "`moedash token create`",
                        "or load local files: `moedash ingest FILE.json --hardware GB300`",
                        "or the demo: `moedash demo`",
                    ],
                ),
            ]
        )
    runs = data.recent_runs(20)
    n_syn = int(cov[C.SYNTHETIC].sum())
    return html.Div(
        [
            html.H1("What is in the database"),
            html.P(
                [
                    f"{int(cov['runs'].sum())} runs, {int(cov['candidates'].sum()):,} "
                    f"candidates over {len(cov)} model × hardware × precision × world-size "
                    "combinations. Numbers are distinct workloads (num_tokens × parallel mode "
                    "× CUDA graph) with a successful candidate; click one for its Pareto view.",
                    html.Br(),
                    (
                        html.Span(
                            [
                                ui.badge("synthetic"),
                                " rows are generated demo data, not measurements.",
                            ]
                        )
                        if n_syn
                        else ""
                    ),
                ],
                className="lead",
            ),
            coverage_matrix(cov),
            html.H2("Recent uploads"),
            html.Div(recent_table(runs), className="scroll-x"),
        ]
    )


def register(app: dash.Dash, data: DashData) -> None:
    """The overview has no callbacks: it is rebuilt from the (cached) store on every
    visit, so uploads appear on the next page load."""
