"""Small shared building blocks: labels with units, empty states, badges, key/value
tables, grids and URL query helpers.

User-supplied strings (notes, filenames, skip reasons ...) are only ever passed as Dash
children or AG Grid cell values, which React renders as text: no component here turns
text into HTML or markdown.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import dash
import dash_ag_grid as dag
import numpy as np
import pandas as pd
from dash import Input, Output, dcc, html

from analysis import columns as C
from analysis.tables import to_json_records

# Column -> human label with its unit. Every axis and grid column goes through here.
LABELS: dict[str, str] = {
    C.SCORE_MS: "latency, score (ms)",
    C.TOKENS_PER_S_PER_GPU: "throughput (tokens/s/GPU)",
    C.ACTIVATED_TOKENS_PER_RANK: "activated tokens per rank (tokens)",
    C.DISPATCH_KB: "dispatch (KiB)",
    C.NUM_TOKENS: "num_tokens (tokens)",
    C.LOCAL_BATCH: "local batch (tokens/rank)",
    C.WORLD_SIZE: "world size (GPUs)",
    C.MOE_EP_SIZE: "EP",
    C.MOE_TP_SIZE: "TP",
    C.CUDA_GRAPH: "CUDA graph",
    C.PARALLEL_MODE: "parallel mode",
    C.BACKEND: "backend",
    C.COMM: "comm",
    C.DISPATCH: "dispatch pattern",
    C.STATUS: "status",
    C.FAILURE_CATEGORY: "failure category",
    C.SKIP_REASON: "reason",
    C.RAW_SCORE_MS: "raw score (ms)",
    C.ITER_MEDIAN_MS: "iter median (ms)",
    C.ITER_STDEV_MS: "iter stdev (ms)",
    C.ITER_P90_MS: "iter p90 (ms)",
    C.OUTLIER_COUNT: "outliers",
    C.CANDIDATE_INDEX: "#",
    C.PHASE: "phase",
    C.ATTN: "attention",
}


def label(col: str) -> str:
    """Human label (with unit) of a column."""
    return LABELS.get(col, col.replace("_", " "))


def attrs(**kw: object) -> dict[str, Any]:
    """HTML attributes Python names cannot spell (``data-*``, ``aria-*``), from their
    Python names: ``attrs(data_testid="x", aria_label="y")`` is
    ``{"data-testid": "x", "aria-label": "y"}``. Dash accepts them as keyword arguments,
    but its typed signatures do not list them, so ``**attrs(...)`` is typed ``Any``."""
    return {k.replace("_", "-"): v for k, v in kw.items()}


def empty_state(message: str, hints: Sequence[str] = (), test_id: str = "empty") -> html.Div:
    """A visible "nothing here" box: what is empty and what to relax."""
    return html.Div(
        [html.Strong(message), html.Ul([html.Li(h) for h in hints]) if hints else None],
        className="empty-state",
        **attrs(data_testid=test_id),
    )


def badge(text: str, kind: str = "synthetic") -> html.Span:
    return html.Span(text, className=f"badge badge-{kind}")


def with_synthetic_note(synthetic: bool, *children: Any) -> list[Any]:
    """``children``, led by a badge and a sentence when the numbers shown include
    generated demo data."""
    if not synthetic:
        return list(children)
    note = html.Span(
        [badge("synthetic"), " includes generated demo data, not measurements. "],
        **attrs(data_testid="synthetic-note"),
    )
    return [note, *children]


def kv_table(values: Mapping[str, Any], test_id: str | None = None) -> html.Table:
    """Two-column table of plain-text values (None shown as an em dash)."""
    rows = [html.Tr([html.Th(k), html.Td(fmt(v))]) for k, v in values.items()]
    extra = attrs(data_testid=test_id) if test_id else {}
    return html.Table(html.Tbody(rows), className="kv", **extra)


def fmt(value: Any) -> str:
    """Display text for one value: None/NaN -> "—", floats with 4 significant digits."""
    if value is None:
        return "—"
    try:
        if pd.isna(value):
            return "—"
    except (TypeError, ValueError):
        pass
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.4g}"
    return str(value)


def options(values: Iterable[Any], labels: Mapping[Any, str] | None = None) -> list[dict[str, Any]]:
    """Dropdown options from values (labels default to the value's text)."""
    return [{"label": (labels or {}).get(v, fmt(v)), "value": v} for v in values]


def grid(
    grid_id: str,
    frame: pd.DataFrame,
    columns: Sequence[str],
    page_size: int = 50,
    height: str = "520px",
    col_overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> dag.AgGrid:
    """A sortable, filterable AG Grid over ``frame[columns]`` (cells render as text)."""
    return dag.AgGrid(
        id=grid_id,
        rowData=records(frame, columns),
        columnDefs=column_defs(frame, columns, col_overrides),
        defaultColDef={
            "sortable": True,
            "filter": True,
            "resizable": True,
            "floatingFilter": True,
            "minWidth": 90,
        },
        dashGridOptions={
            "pagination": True,
            "paginationPageSize": page_size,
            "paginationPageSizeSelector": [20, 25, 50, 100],
            "rowSelection": {
                "mode": "singleRow",
                "checkboxes": False,
                "enableClickSelection": True,
            },
            "enableCellTextSelection": True,
        },
        columnSize="autoSize",
        style={"height": height},
        className="ag-theme-alpine",
    )


def column_defs(
    frame: pd.DataFrame,
    columns: Sequence[str],
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    defs = []
    for col in columns:
        d: dict[str, Any] = {"field": col, "headerName": label(col), "headerTooltip": col}
        if col in frame and pd.api.types.is_bool_dtype(frame[col]):
            # AG Grid draws booleans as disabled checkboxes; words read better
            yes, no = ("on", "off") if col.endswith("cuda_graph") else ("yes", "no")
            d["cellDataType"] = "text"
            d["valueFormatter"] = {
                "function": f"params.value == null ? '' : (params.value ? '{yes}' : '{no}')"
            }
        elif (
            col in frame
            and pd.api.types.is_numeric_dtype(frame[col])
            and not pd.api.types.is_bool_dtype(frame[col])
        ):
            d["filter"] = "agNumberColumnFilter"
            if pd.api.types.is_float_dtype(frame[col]):
                d["valueFormatter"] = {
                    "function": "params.value == null ? '' : d3.format('.4~g')(params.value)"
                }
        d.update((overrides or {}).get(col, {}))
        defs.append(d)
    return defs


def records(frame: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    """JSON-safe row dicts (NaN/NA -> None, numpy scalars -> Python)."""
    return to_json_records(frame, [c for c in columns if c in frame])


# ----------------------------------------------------------------- URL query helpers
def first(query: Mapping[str, Any], key: str, default: str | None = None) -> str | None:
    """One query value (parse_qs gives lists; the router passes plain strings)."""
    value = query.get(key, default)
    if isinstance(value, list):
        value = value[0] if value else default
    return None if value is None else str(value)


def choice(
    value: Any, allowed: tuple[str, ...] | None = None, all_value: str = "all"
) -> str | None:
    """A dropdown or URL query value as a filter: the first item of a list, stripped; None
    when missing, empty, ``all_value`` (the dropdown's "everything" entry) or, when
    ``allowed`` is given, not one of ``allowed``."""
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None:
        return None
    text = str(value).strip()
    if not text or text == all_value:
        return None
    if allowed is not None and text not in allowed:
        return None
    return text


def as_int(value: str | None, default: int | None = None) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


def as_flag(value: str | None) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


def search_string(params: Mapping[str, Any]) -> str:
    """``?a=1&b=x`` from the non-empty params (lists become repeated keys, bools 1)."""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None or value == "" or value == [] or value is False:
            continue
        if isinstance(value, list | tuple):
            pairs.extend((key, str(v)) for v in value)
        elif value is True:
            pairs.append((key, "1"))
        else:
            pairs.append((key, str(value)))
    return "?" + urlencode(pairs) if pairs else ""


def download_button(button_id: str, text: str) -> html.Button:
    return html.Button(text, id=button_id, className="button", n_clicks=0)


def download_note(note_id: str) -> html.Span:
    """Where a download button says why nothing was downloaded (a polite live region, so
    a screen reader reads it too): a click must never just do nothing."""
    return html.Span(id=note_id, className="status download-note", role="status")


def download_or_reason(got: dict[str, Any] | str) -> tuple[Any, str]:
    """(``dcc.Download`` data, note) from a page's download answer: the file, or no
    download and the reason there is nothing to download for the current view."""
    if isinstance(got, str):
        return dash.no_update, f"Nothing to download for this view: {got}"
    return got, ""


# While an area reloads its previous content stays in place, dimmed, under the spinner:
# the page does not jump, and what is being replaced stays readable.
LOADING_OVERLAY: dict[str, Any] = {"visibility": "visible", "opacity": 0.45}
# An answer (which configuration to run) is different: a quick reader would take the
# previous one, dimmed or not, for the answer to the new question. It is hidden at once,
# its space kept, until the new answer arrives.
ANSWER_OVERLAY: dict[str, Any] = {"visibility": "hidden"}


def loading(
    children: Any,
    loading_id: str,
    target_components: Mapping[str, Any] | None = None,
    *,
    answer: bool = False,
) -> dcc.Loading:
    """The default wrapper of any area that can take longer than 300 ms to fill:
    ``dcc.Loading`` whose spinner only shows after 300 ms (fast updates stay calm), over
    the dimmed previous content. ``answer=True``: the area holds an answer to the
    controls above it, so the previous content is hidden and the spinner shown at once
    (:data:`ANSWER_OVERLAY`). ``target_components`` ({component id: prop or list of
    props}) limits it to those outputs, so e.g. the page-wide wrapper does not also spin
    for every inner callback."""
    extra: dict[str, Any] = {}
    if target_components:
        extra["target_components"] = dict(target_components)
    return dcc.Loading(
        children,
        id=loading_id,
        type="default",
        delay_show=0 if answer else 300,
        overlay_style=ANSWER_OVERLAY if answer else LOADING_OVERLAY,
        **extra,
    )


# The Plotly toolbar keeps only local actions: no "send data to cloud" / Chart Studio
# upload (it posts the chart's data to a third-party service) and no plotly.com logo link.
# plotly.js 4 names the button "sendChartToCloud" ("Share chart..."); older builds
# "sendDataToCloud" ("Edit in Chart Studio"). Both are removed.
MODEBAR_REMOVE: tuple[str, ...] = ("sendChartToCloud", "sendDataToCloud")
# (label of a column's several values, column): how slice_label names a mixed slice
_SLICE_PARTS: tuple[tuple[str, str], ...] = (
    ("models", C.MODEL),
    ("GPUs", C.HARDWARE),
    ("quants", C.QUANT),
    ("world sizes", C.WORLD_SIZE),
    ("phases", C.PHASE),
)


def slice_label(*frames: pd.DataFrame) -> str:
    """``model · GPU · quant · world size · phase`` of the rows in ``frames``: a column
    with one value shows it (world size as ``N GPUs``), several values show their count
    (``3 world sizes``); a missing or all-null column is left out. No rows: ``""``."""
    parts: list[str] = []
    for plural, col in _SLICE_PARTS:
        found: set[str] = set()
        for frame in frames:
            if col in frame and len(frame):
                found.update(str(v) for v in frame[col].dropna().unique())
        values = sorted(found)
        if len(values) == 1:
            parts.append(f"{values[0]} GPUs" if col == C.WORLD_SIZE else values[0])
        elif values:
            parts.append(f"{len(values)} {plural}")
    return " · ".join(parts)


def file_slug(text: str, default: str = "chart") -> str:
    """``text`` as a file name stem: lower case, runs of other than ``a-z0-9._`` → ``-``,
    at most 120 characters; ``default`` when nothing is left."""
    out, dash = [], False
    for ch in text.lower():
        if ch.isascii() and (ch.isalnum() or ch in "._"):
            out.append(ch)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    return "".join(out).strip("-")[:120].strip("-") or default


def graph_config(filename: str | None = None) -> dcc.Graph.Config:
    """``dcc.Graph`` config: no cloud button, no logo link; the PNG download is named
    ``file_slug(filename)`` when given (plotly otherwise names it from the title)."""
    config: dcc.Graph.Config = {
        "displaylogo": False,
        "showSendToCloud": False,
        "modeBarButtonsToRemove": list(MODEBAR_REMOVE),
    }
    if filename:
        config["toImageButtonOptions"] = {"format": "png", "filename": file_slug(filename)}
    return config


GRAPH_CONFIG: dcc.Graph.Config = graph_config()


# ------------------------------------------------------------------------- log axes
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# mantissas labelled per decade, by how many decades the data spans: wide ranges label
# the powers of ten only, narrower ones 1-2-5, under one decade every leading digit
_MAJOR_MANTISSAS = ((3.0, (1,)), (1.0, (1, 2, 5)), (0.0, (1, 2, 3, 4, 5, 6, 7, 8, 9)))
_MINOR_GRID = "#eef0f3"


def tick_text(value: float) -> str:
    """A log-axis tick label: ``1``, ``20``, ``500``, ``1k``, ``300k``, ``1.5M``,
    ``0.01`` (SI suffixes from a thousand up; never the leading digit alone)."""
    for scale, suffix in _SI:
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str], list[float]]:
    """(major tick values, their labels, minor gridline values) for a log axis over the
    positive data range ``lo``..``hi``. The ticks cover the whole decades around the
    data (plotly pads the range a little); values are ``m × 10^k`` rounded to 12
    significant digits so labels never read ``0.30000000000000004``. Data within less
    than a third of a decade gets evenly spaced round ticks instead."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi <= 0:
        raise ValueError(f"log axis range must be positive and finite, got {lo}..{hi}")
    lo, hi = min(lo, hi), max(lo, hi)
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    last = max(last, first + 1)
    span = math.log10(hi / lo)
    mantissas = next(m for floor_, m in _MAJOR_MANTISSAS if span > floor_ or floor_ == 0.0)
    majors: list[float] = []
    minors: list[float] = []
    for exp in range(first, last + 1):
        for m in range(1, 10):
            if exp == last and m > 1:
                break
            (majors if m in mantissas else minors).append(_round(m * 10.0**exp))
    if span <= 1.0:  # under one decade: only the labels near the data
        majors = [v for v in majors if lo / 2 <= v <= hi * 2] or majors
    if span < 0.5 and hi > lo:
        majors = _even_ticks(lo, hi)
        minors = []
    return majors, [tick_text(v) for v in majors], minors


def _round(value: float) -> float:
    return float(f"{value:.12g}")


def _even_ticks(lo: float, hi: float) -> list[float]:
    """Round, evenly spaced ticks (step 1, 2 or 5 × 10^k, about four of them) from just
    below ``lo`` to just above ``hi``."""
    raw = (hi - lo) / 4
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    start = math.floor(lo / step) * step
    count = math.ceil((hi - start) / step) + 1
    return [_round(start + i * step) for i in range(count + 1) if start + i * step > 0]


def log_axis(title: str, *values: Any) -> dict[str, Any]:
    """Layout properties of a log axis titled ``title`` (units belong in the title):
    ticks read 1, 10, 100, 1k, 10k … over the positive finite entries of the array-likes
    ``values`` (1-2-5 and finer when the data spans few decades), light minor gridlines
    between them. With no positive value: plotly's own ticks, one per decade, SI
    suffixes."""
    arr = _positive(values)
    axis: dict[str, Any] = {"type": "log", "title": {"text": title}}
    if not arr.size:
        return {**axis, "dtick": 1, "exponentformat": "SI"}
    majors, texts, minors = log_ticks(float(arr.min()), float(arr.max()))
    return {
        **axis,
        "tickmode": "array",
        "tickvals": majors,
        "ticktext": texts,
        "minor": {
            "tickmode": "array",
            "tickvals": minors,
            "showgrid": True,
            "gridcolor": _MINOR_GRID,
            "ticks": "",
        },
    }


def axis(title: str, *values: Any, log: bool = False) -> dict[str, Any]:
    """:func:`log_axis` when ``log``, else a linear axis titled ``title``."""
    return log_axis(title, *values) if log else {"type": "linear", "title": {"text": title}}


def _positive(values: Sequence[Any]) -> np.ndarray:
    parts = [
        pd.to_numeric(pd.Series(np.asarray(v, dtype=object).ravel()), errors="coerce").to_numpy(
            float
        )
        for v in values
    ]
    arr = np.concatenate(parts) if parts else np.empty(0)
    return arr[np.isfinite(arr) & (arr > 0)]


def sync_url(app: Any, location_id: str, store_id: str) -> None:
    """Put the search a page's layout computed (``store_id``'s data) into the browser's
    URL on load, without a server round trip, so a page laid out with its first answer
    still shows its full state in the URL (a permalink), as it did when a callback wrote
    it. Written as the page's ``dcc.Location`` ``href`` a tick after it mounted (it
    records the URL it mounted with first; an earlier write, or one that bypasses it, is
    pushed back by it later)."""
    app.clientside_callback(
        """function (search) {
            var noUpdate = window.dash_clientside.no_update;
            return new Promise(function (resolve) {
                setTimeout(function () {
                    var loc = window.location;
                    if (!search || loc.search === search) { resolve(noUpdate); return; }
                    resolve(loc.origin + loc.pathname + search + loc.hash);
                }, 0);
            });
        }""",
        Output(location_id, "href", allow_duplicate=True),
        Input(store_id, "data"),
        prevent_initial_call="initial_duplicate",
    )
