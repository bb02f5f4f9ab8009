"""The /compare body: which sides were compared, the counts per verdict, the change
chart, the per workload x configuration grid and the workloads whose best configuration
changed (pure rendering of a ``service.compare.compare`` answer; the page module owns
the controls).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from dash import dcc, html

from analysis import columns as C
from analysis import compare as K
from analysis.derived import as_float
from dashboard import components as ui
from dashboard.history_figures import change_figure
from dashboard.pages.compare_form import Form
from service.compare import CompareAnswer, Side
from service.errors import ServiceError
from service.frames import DashData

# (verdict key, what the summary calls it); the first six are the headline counts
COUNTS: tuple[tuple[str, str], ...] = (
    (K.REGRESSION, "regressions"),
    (K.IMPROVEMENT, "improvements"),
    (K.UNCHANGED, "unchanged"),
    (K.NEW_FAILURE, "newly failing"),
    (K.NEWLY_SKIPPED, "newly skipped"),
    (K.BEST_CHANGED, "best changed"),
    (K.INCONCLUSIVE, "inside the noise band"),
    (K.RECOVERED, "recovered"),
    (K.STILL_UNSUCCESSFUL, "still unsuccessful"),
    (K.ONLY_BASE, "only in base"),
    (K.ONLY_HEAD, "only in head"),
)
# grid order: what needs attention first
_SEVERITY = {
    v: i
    for i, v in enumerate(
        (
            K.REGRESSION,
            K.NEW_FAILURE,
            K.NEWLY_SKIPPED,
            K.IMPROVEMENT,
            K.INCONCLUSIVE,
            K.RECOVERED,
            K.ONLY_HEAD,
            K.ONLY_BASE,
            K.STILL_UNSUCCESSFUL,
            K.UNCHANGED,
        )
    )
}
GRID_COLUMNS: tuple[str, ...] = (
    C.NUM_TOKENS,
    K.CONFIG_LABEL,
    K.VERDICT,
    K.CHANGE_PCT,
    K.NOISE_PCT,
    K.BASELINE_CHANGE_PCT,
    K.RUN_SPREAD_PCT,
    K.BASE_MS,
    K.HEAD_MS,
    K.BASE_STATUS,
    K.HEAD_STATUS,
    C.WORLD_SIZE,
    C.PHASE,
    C.ATTN,
    C.DISPATCH,
    C.CUDA_GRAPH,
    K.NOISE_SOURCE,
    K.BASE_N,
    K.HEAD_N,
    K.BASE_RUN_IDS,
    K.HEAD_RUN_IDS,
    K.BASE_VERSION,
    K.HEAD_VERSION,
)
HEADERS: dict[str, str] = {
    K.CONFIG_LABEL: "configuration",
    K.BASE_MS: "base score (ms)",
    K.HEAD_MS: "head score (ms)",
    K.CHANGE_PCT: "change (%)",
    K.NOISE_PCT: "noise band (%)",
    K.BASELINE_CHANGE_PCT: "change vs baseline (%)",
    K.RUN_SPREAD_PCT: "run-to-run spread (%)",
    K.VERDICT: "verdict",
    K.NOISE_SOURCE: "noise from",
    K.BASE_STATUS: "base status",
    K.HEAD_STATUS: "head status",
    K.BASE_N: "base: runs",
    K.HEAD_N: "head: runs",
    K.BASE_RUN_IDS: "base run ids",
    K.HEAD_RUN_IDS: "head run ids",
    K.BASE_VERSION: "base version",
    K.HEAD_VERSION: "head version",
    K.BASE_BEST: "base best",
    K.HEAD_BEST: "head best",
    K.BASE_BEST_MS: "base best (ms)",
    K.HEAD_BEST_MS: "head best (ms)",
    K.BASE_BEST_ON_HEAD_MS: "base best on head (ms)",
    K.GAIN_PCT: "head best faster by (%)",
    K.WITHIN_NOISE: "within noise",
}
BEST_COLUMNS: tuple[str, ...] = (
    C.NUM_TOKENS,
    K.BASE_BEST,
    K.HEAD_BEST,
    K.GAIN_PCT,
    K.WITHIN_NOISE,
    K.BASE_BEST_MS,
    K.HEAD_BEST_MS,
    K.BASE_BEST_ON_HEAD_MS,
    C.WORLD_SIZE,
    C.PHASE,
    C.ATTN,
    C.DISPATCH,
)
_BAD = (K.REGRESSION, K.NEW_FAILURE, K.NEWLY_SKIPPED)
_GOOD = (K.IMPROVEMENT, K.RECOVERED)


def side_text(side: Side) -> str:
    """``1.2.0rc27 (runs 2, 3)`` / ``run 4 (1.2.0rc28)``."""
    runs = ", ".join(str(r) for r in side.run_ids)
    if side.kind == "run":
        return f"run {side.text} ({side.version or 'no version'})"
    return f"{side.version} (run{'s' if len(side.run_ids) != 1 else ''} {runs})"


def attention_first(rows: pd.DataFrame) -> pd.DataFrame:
    """The grid's order: regressions, new failures, newly skipped, improvements, ...,
    unchanged last; within a verdict the largest change first (stable otherwise)."""
    if rows.empty:
        return rows
    rank = rows[K.VERDICT].map(_SEVERITY).fillna(len(_SEVERITY)).to_numpy(dtype=float)
    change = np.abs(as_float(rows[K.CHANGE_PCT]))
    order = np.lexsort((-np.nan_to_num(change, nan=-1.0), rank))
    return rows.iloc[order].reset_index(drop=True)


def _counts(counts: dict[str, int]) -> html.Table:
    head = html.Tr([html.Th(text) for _, text in COUNTS])
    body = html.Tr(
        [
            html.Td(str(counts.get(key, 0)), **ui.attrs(data_testid=f"cmp-count-{key}"))
            for key, _ in COUNTS
        ]
    )
    return html.Table(
        [html.Thead(head), html.Tbody(body)],
        className="small",
        **ui.attrs(data_testid="cmp-counts"),
    )


def _grid(grid_id: str, frame: pd.DataFrame, columns: tuple[str, ...]) -> Any:
    overrides: dict[str, dict[str, Any]] = {c: {"headerName": h} for c, h in HEADERS.items()}
    overrides[K.VERDICT] = {
        "headerName": HEADERS[K.VERDICT],
        "cellClassRules": {
            "verdict-disagrees": f"{list(_BAD)}.includes(params.value)",
            "verdict-agrees": f"{list(_GOOD)}.includes(params.value)",
        },
    }
    overrides[K.CONFIG_LABEL] = {"headerName": HEADERS[K.CONFIG_LABEL], "minWidth": 260}
    overrides[K.BASE_BEST] = {"headerName": HEADERS[K.BASE_BEST], "minWidth": 260}
    overrides[K.HEAD_BEST] = {"headerName": HEADERS[K.HEAD_BEST], "minWidth": 260}
    cols = [c for c in columns if c in frame]
    return ui.grid(
        grid_id, frame, cols, page_size=50, height=grid_height(len(frame)), col_overrides=overrides
    )


def grid_height(n_rows: int) -> str:
    """Room for ``n_rows`` rows (header, filters and pager included), at most 520 px."""
    return f"{min(520, 150 + 42 * max(n_rows, 1))}px"


def invalid(err: ServiceError) -> html.Div:
    return ui.empty_state(
        f"{err.field}: {err.msg}",
        ["pick a base and a head from the lists (versions or runs stored in this slice)"],
        test_id="cmp-invalid",
    )


def render(data: DashData, form: Form, got: CompareAnswer | ServiceError) -> Any:
    """The body for ``form``'s answer (or why there is none)."""
    if form.base is None or form.head is None:
        return ui.empty_state(
            "This slice holds a single run: nothing to compare yet.",
            [
                "upload a run of another TensorRT-LLM version of this model · GPU · quant "
                "(`moedash upload out/*.json --trtllm-version …`)",
                "or pick another slice",
            ],
            test_id="cmp-empty",
        )
    if isinstance(got, ServiceError):
        return invalid(got)
    rows = got.rows
    title_slice = ui.slice_label(rows) or " · ".join(
        str(v) for v in (form.model, form.hardware, form.quant) if v
    )
    synthetic = bool(got.provenance["base"]["synthetic"] or got.provenance["head"]["synthetic"])
    line = (
        f"base {side_text(got.base)} → head {side_text(got.head)}. Threshold "
        f"{ui.fmt(got.threshold_pct)} %; routing {got.routing.label}; repeats: "
        f"{'median over repeat runs' if got.repeats == 'median' else 'latest run only'}. "
        f"{len(rows):,} workload × configuration rows."
    )
    api = html.Span(
        [
            " The same answer from the API: ",
            html.A("JSON", href=form.api_href(), target="_blank", rel="noopener"),
            " · ",
            html.A("CSV", href=form.api_href("csv"), target="_blank", rel="noopener"),
            ".",
        ]
    )
    summary = html.P(
        [*ui.with_synthetic_note(synthetic, line), api],
        className="status",
        **ui.attrs(data_testid="cmp-summary"),
    )
    if rows.empty:
        return html.Div(
            [
                summary,
                ui.empty_state(
                    f"Neither side has candidates in {title_slice}.",
                    ["choose “all” world sizes or phases", "pick another routing pattern"],
                    test_id="cmp-empty",
                ),
            ]
        )
    title = f"{title_slice} — {got.base.label} → {got.head.label}"
    figure = change_figure(
        rows,
        change_col=K.CHANGE_PCT,
        verdict_col=K.VERDICT,
        threshold_pct=got.threshold_pct,
        title=f"change per configuration: {title}",
    )
    best = got.best_changes
    best_part: Any = (
        _grid("cmp-best-grid", best, BEST_COLUMNS)
        if len(best)
        else html.P("No workload's best configuration changed.", className="status")
    )
    return html.Div(
        [
            summary,
            _counts(got.counts),
            html.H2("Change per workload × configuration"),
            dcc.Graph(
                id="cmp-graph",
                figure=figure,
                config=ui.graph_config(f"compare {title}"),
            ),
            _grid("cmp-grid", attention_first(rows), GRID_COLUMNS),
            html.H2("Workloads whose best configuration changed"),
            best_part,
        ]
    )
