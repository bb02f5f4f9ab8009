"""The /history body: the score-over-versions chart and its points, the frontier of each
version overlaid, and the frontier change between two versions as numbers with units
(pure rendering of ``service.history`` answers; the page module owns the controls).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import dcc, html

from analysis import columns as C
from analysis.compare import CONFIG_LABEL
from analysis.history import CHANGE_VS_PREV, VERSION_ORDER, WORKLOAD_LABEL
from dashboard import components as ui
from dashboard.history_figures import history_figure
from dashboard.pages import history_slices as S
from dashboard.pages.compare_view import grid_height
from dashboard.pages.history_form import BEST, SLICE, Form, scope_of
from dashboard.pages.history_frontier import frontier_part
from service.errors import ServiceError
from service.frames import DashData
from service.history import (
    HistoryAnswer,
    HistoryFilter,
    history,
)

SERIES = "series"
POINT = "point"
RUN_AXIS = "run (TensorRT-LLM version · run id · date · commit), in version order"
PICK_CONFIG = "One point per run shows one configuration at a time: pick one under “configuration”."
HISTORY_CSV_COLUMNS: tuple[str, ...] = (
    C.MODEL,
    C.HARDWARE,
    C.QUANT,
    C.WORLD_SIZE,
    C.PHASE,
    C.ATTN,
    C.DISPATCH,
    C.NUM_TOKENS,
    WORKLOAD_LABEL,
    CONFIG_LABEL,
    C.BACKEND,
    C.COMM,
    C.PARALLEL_MODE,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.CUDA_GRAPH,
    C.TRTLLM_VERSION,
    C.TRTLLM_COMMIT,
    C.RUN_DATE,
    C.SCORE_MS,
    CHANGE_VS_PREV,
    C.TOKENS_PER_S_PER_GPU,
    "n_repeats",
    "repeat_run_ids",
    "score_spread",
    "spread_source",
)
GRID_COLUMNS: tuple[str, ...] = (
    WORKLOAD_LABEL,
    C.ATTN,
    CONFIG_LABEL,
    C.TRTLLM_VERSION,
    C.RUN_DATE,
    C.TRTLLM_COMMIT,
    C.SCORE_MS,
    CHANGE_VS_PREV,
    C.TOKENS_PER_S_PER_GPU,
    "n_repeats",
    "repeat_run_ids",
    "spread_pct",
    "spread_source",
)
HEADERS: dict[str, str] = {
    WORKLOAD_LABEL: "workload",
    CONFIG_LABEL: "configuration",
    C.TRTLLM_VERSION: "TensorRT-LLM version",
    C.RUN_DATE: "run date",
    CHANGE_VS_PREV: "change vs previous point (%)",
    C.TRTLLM_COMMIT: "commit",
    "n_repeats": "runs pooled",
    "repeat_run_ids": "run ids",
    "spread_pct": "spread (%)",
    "spread_source": "spread from",
}
_ATTN = {"D": "attention DP", "T": "attention TP"}


def versions_frame(data: DashData, form: Form) -> pd.DataFrame:
    """The slice's versions in version order (``analysis.versions.version_table``);
    empty when the slice is not complete or not stored."""
    if not form.complete():
        return pd.DataFrame(columns=["version", "n_runs", "first_run_date"])
    try:
        table: pd.DataFrame = S.side_choices(data, scope_of(form))["versions"]
    except ServiceError:
        return pd.DataFrame(columns=["version", "n_runs", "first_run_date"])
    return table


def version_list(data: DashData, form: Form) -> list[str]:
    return [str(v) for v in versions_frame(data, form)["version"]]


def series_choices(data: DashData, form: Form) -> tuple[list[str], list[int], list[str]]:
    """(routing patterns of the slice, its num_tokens, the configuration labels of the
    chosen workload -- or of every workload), each sorted."""
    if not form.complete():
        return [], [], []
    try:
        known = list(S.side_choices(data, scope_of(form))["routing"].known)
        items = history(data, scope_of(form), None, repeats=form.repeats).items  # type: ignore[arg-type]
    except ServiceError:
        return [], [], []
    tokens = sorted({int(t) for t in items[C.NUM_TOKENS].dropna()}) if len(items) else []
    if form.num_tokens is not None and len(items):
        items = items[items[C.NUM_TOKENS] == form.num_tokens]
    configs = sorted({str(c) for c in items[CONFIG_LABEL]}) if len(items) else []
    return known, tokens, configs


def history_answer(data: DashData, form: Form) -> HistoryAnswer | str | None:
    """The score history for the form (the service's message when it refuses; None
    when the slice is not complete)."""
    if not form.complete():
        return None
    if form.by == "run" and form.config == BEST:
        return PICK_CONFIG
    flt = HistoryFilter(
        num_tokens=form.num_tokens, config=None if form.config == BEST else form.config
    )
    try:
        return history(
            data,
            scope_of(form),
            flt,
            by=form.by,  # type: ignore[arg-type]
            repeats=form.repeats,  # type: ignore[arg-type]
            best_only=form.config == BEST,
        )
    except ServiceError as err:
        return f"{err.field}: {err.msg}"


def run_points(items: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``by="run"`` points with a ``point`` label per run ("1.2.0rc27 · run 3 ·
    2026-09-02 · c0ffee2") and the labels in order (version order, date, run id)."""
    if items.empty:
        return items.assign(**{POINT: pd.Series(dtype=object)}), []

    def text(row: dict[str, Any]) -> str:
        bits = [str(row[C.TRTLLM_VERSION]), f"run {int(row[C.RUN_ID])}"]
        bits += [str(row[c]) for c in (C.RUN_DATE, C.TRTLLM_COMMIT) if pd.notna(row.get(c))]
        return " · ".join(bits)

    labels = [text(r) for r in items.to_dict("records")]
    out = items.assign(**{POINT: labels})
    keys = (
        out[[VERSION_ORDER, C.RUN_DATE, C.RUN_ID, POINT]]
        .astype({C.RUN_DATE: str})
        .drop_duplicates(POINT)
    )
    order = keys.sort_values([VERSION_ORDER, C.RUN_DATE, C.RUN_ID], kind="mergesort")[POINT]
    return out, [str(p) for p in order]


def with_series(items: pd.DataFrame) -> pd.DataFrame:
    """History points with a ``series`` label (workload and attention family) and the
    spread in %."""
    if items.empty:
        return items.assign(**{SERIES: pd.Series(dtype=object), "spread_pct": []})
    attn = items[C.ATTN].astype(object).map(lambda a: _ATTN.get(str(a), "attention ?"))
    series = items[WORKLOAD_LABEL].astype(str) + " · " + attn
    return items.assign(**{SERIES: series, "spread_pct": 100.0 * items["score_spread"]})


def _history_part(data: DashData, form: Form, title: str) -> list[Any]:
    got = history_answer(data, form)
    if got == PICK_CONFIG:
        return [ui.empty_state(got, [], test_id="hist-pick-config")]
    if isinstance(got, str):
        return [ui.empty_state(got, ["pick a stored value"], test_id="hist-invalid")]
    if got is None:
        return [ui.empty_state("Pick a model, GPU, quant, world size and phase.")]
    items = with_series(got.items)
    order = [str(v) for v in got.versions["version"]]
    x_col = C.TRTLLM_VERSION
    if form.by == "run":
        items, points = run_points(items)
        x_col = POINT
    what = "best configuration per workload" if form.config == BEST else form.config
    line = (
        f"{len(order)} version{'s' if len(order) != 1 else ''} "
        f"({', '.join(order) or '—'}); {items[SERIES].nunique() if len(items) else 0} "
        f"series of {what}; {len(items):,} points. Routing: {got.routing.label}."
    )
    summary: html.P | html.Div = html.P(
        ui.with_synthetic_note(bool(got.provenance["synthetic"]), line),
        className="status",
        **ui.attrs(data_testid="hist-summary"),
    )
    if len(order) < 2:
        summary = html.Div(
            [
                summary,
                html.P(
                    "One TensorRT-LLM version in this slice, so each series is a single "
                    "point. Upload a run of another version to see a history "
                    "(`moedash upload out/*.json --trtllm-version …`).",
                    className="status",
                    **ui.attrs(data_testid="hist-one-version"),
                ),
            ]
        )
    if items.empty:
        return [
            summary,
            ui.empty_state(
                f"No successful measurement of {what} in {title}.",
                ["pick “every workload”", "pick the best configuration", "upload more runs"],
                test_id="hist-empty",
            ),
        ]
    fig = history_figure(
        items,
        x_col=x_col,
        series_col=SERIES,
        order=order if form.by == "version" else points,
        x_title=None if form.by == "version" else RUN_AXIS,
        title=f"score over versions: {title} — {what}",
        spread_col="score_spread",
        text_col=CONFIG_LABEL,
    )
    overrides: dict[str, dict[str, Any]] = {c: {"headerName": h} for c, h in HEADERS.items()}
    overrides[CONFIG_LABEL] = {"headerName": HEADERS[CONFIG_LABEL], "minWidth": 260}
    return [
        summary,
        dcc.Graph(id="hist-graph", figure=fig, config=ui.graph_config(form.filename("scores"))),
        ui.grid(
            "hist-grid",
            items,
            list(GRID_COLUMNS),
            page_size=25,
            height=grid_height(min(len(items), 10)),
            col_overrides=overrides,
        ),
    ]


def render(data: DashData, form: Form) -> Any:
    """The page body for ``form``."""
    if not form.complete():
        return ui.empty_state(
            "Pick a model, GPU, quant, world size and phase.", test_id="hist-empty"
        )
    title = ui.slice_label(
        pd.DataFrame(
            {
                C.MODEL: [form.model],
                C.HARDWARE: [form.hardware],
                C.QUANT: [form.quant],
                C.WORLD_SIZE: [form.world_size],
                C.PHASE: [form.phase],
            }
        )
    )
    if not S.is_stored(data, {k: getattr(form, k) for k in SLICE}):
        return ui.empty_state(
            f"No runs of {title} are stored.",
            ["pick a slice from the lists (each says how many versions it holds)"],
            test_id="hist-invalid",
        )
    return html.Div([*_history_part(data, form, title), *frontier_part(data, form, title)])
