"""The Pareto page's CSV downloads (frontier / all points) of what the controls show.

Files are named ``pareto-frontier-<slice>.csv`` / ``pareto-points-<slice>.csv``, the
slice being :func:`dashboard.components.slice_label` of the rows (model · GPU · quant ·
world size · phase) through :func:`~dashboard.components.file_slug`; the rows come from
``service.pareto_csv``.
"""

from __future__ import annotations

from typing import Any

from dash import html

from dashboard import components as ui
from dashboard.pages.pareto_query import ParetoQuery
from service.frames import DashData
from service.pareto_csv import Which, pareto_csv, pareto_rows

BUTTONS: dict[str, str] = {"frontier": "pareto-csv-frontier-btn", "points": "pareto-csv-points-btn"}
DOWNLOADS: dict[str, str] = {"frontier": "pareto-csv-frontier", "points": "pareto-csv-points"}


def csv_buttons() -> html.Div:
    """The two CSV buttons (their ``dcc.Download`` targets sit in the page layout)."""
    return html.Div(
        [
            ui.download_button(BUTTONS["frontier"], "Download frontier (CSV)"),
            " ",
            ui.download_button(BUTTONS["points"], "Download all points (CSV)"),
        ],
        className="downloads",
    )


def csv_filename(which: Which, q: ParetoQuery, rows: Any) -> str:
    """``pareto-<frontier|points>-<slice>.csv``; the slice from the rows, or from the
    query (cell, world size, phase) when there are none."""
    label = ui.slice_label(rows) if len(rows) else ""
    if not label and q.cell is not None:
        ws = f"{q.ws} GPUs" if q.ws is not None else "all world sizes"
        label = f"{q.cell.label} · {ws} · {q.phase}"
    return f"pareto-{which}-{ui.file_slug(label, 'empty')}.csv"


def csv_download(data: DashData, which: Which, q: ParetoQuery) -> dict[str, Any] | None:
    """The ``dcc.Download`` payload of the frontier or of every point under ``q``
    (None without a cell)."""
    if q.cell is None:
        return None
    rows = pareto_rows(data, q.cell, q.filter, q.axes, which)
    return {
        "content": pareto_csv(rows),
        "filename": csv_filename(which, q, rows),
        "type": "text/csv",
    }
