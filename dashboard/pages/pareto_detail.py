"""The Pareto page's point detail: a clicked candidate's recipe, workload and exportable
config, with YAML and env downloads.

The config comes from ``service.point_export`` -- the function behind
``GET /api/v1/runs/{run_id}/candidates/{candidate_index}/export`` -- so a download holds
the same bytes the API answers, under the same file name.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from dash import dcc, html

from analysis import columns as C
from dashboard import components as ui
from service.errors import ServiceError
from service.frames import Cell, DashData
from service.pareto import point_at
from service.point_confidence import point_confidence
from service.point_export import PointExport, cell_point_export

_FACTS = (
    C.BACKEND,
    C.COMM,
    C.COMM_REQUESTED,
    C.PARALLEL_MODE,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.CUDA_GRAPH,
    C.LOW_PRECISION_COMBINE,
    C.NUM_TOKENS,
    C.WORLD_SIZE,
    C.ATTN,
    C.DISPATCH,
    C.PHASE,
    C.SCORE_MS,
    C.TOKENS_PER_S_PER_GPU,
    C.ACTIVATED_TOKENS_PER_RANK,
    C.DISPATCH_KB,
    C.STATUS,
)
_FACT_LABELS = {
    C.COMM_REQUESTED: "comm requested",
    C.LOW_PRECISION_COMBINE: "low-precision combine",
    C.ATTN: "attention",
    C.DISPATCH: "routing (dispatch pattern)",
}


def _key(value: Any) -> int | None:
    """A customdata key (an int, or an integral float from a decoded typed array)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        f = float(value)
    except ValueError:
        return None
    return int(f) if math.isfinite(f) and f == int(f) else None


def point_from_click(
    data: DashData, cell_key: str | None, click: dict[str, Any] | None
) -> str | None:
    """A clicked point (``{"points": [{"customdata": [key, ...]}]}``, customdata already
    a plain list) -> ``"<run_id>:<candidate_index>"``; None when it cannot be resolved."""
    cell = Cell.from_key(cell_key)
    if cell is None or not click or not click.get("points"):
        return None
    custom = click["points"][0].get("customdata")
    return point_at(data, cell, _key(custom[0] if isinstance(custom, list) and custom else None))


def _attention(value: Any) -> str:
    return {"D": "DP", "T": "TP"}.get(str(value), "unknown")


def _facts(export: PointExport) -> dict[str, Any]:
    row = export.row
    out = {}
    for col in _FACTS:
        value = row.get(col)
        if col == C.ATTN:
            value = _attention(value)
        elif isinstance(value, np.bool_ | bool):
            # numpy booleans would print as True/False
            value = ("on" if value else "off") if col == C.CUDA_GRAPH else bool(value)
        out[_FACT_LABELS.get(col, ui.label(col))] = value
    return out


def render_detail(data: DashData, cell_key: str | None, point: str | None) -> Any:
    """The facts, the run link, the trtllm-serve YAML and the env line of candidate
    ``point``, with YAML and env download buttons; the reason instead of downloads when
    the service refuses to export it."""
    cell = Cell.from_key(cell_key)
    if cell is None or not point:
        return html.P("Click a point to see its recipe and exportable config.", className="muted")
    try:
        export = cell_point_export(data, cell, point)
    except ServiceError as err:
        return ui.empty_state(f"Candidate {point} cannot be exported: {err.msg}", test_id="export")
    if export is None:
        return ui.empty_state(f"Candidate {point} is not in {cell.label}.")
    run_id = export.run_id
    return html.Div(
        [
            html.H2(f"Candidate {export.candidate_index} of run {run_id}"),
            html.Div(
                [
                    html.Div(
                        [
                            ui.kv_table(_facts(export), "pareto-facts"),
                            _confidence(data, cell, export),
                            dcc.Link(f"all candidates of run {run_id} →", href=f"/run?id={run_id}"),
                        ],
                        className="half",
                    ),
                    html.Div(_config(export), className="half"),
                ],
                className="row",
            ),
        ],
        **ui.attrs(data_testid="pareto-point-detail"),
    )


def _confidence(data: DashData, cell: Cell, export: PointExport) -> Any:
    """The confidence panel: this point against its workload's pick, and the pick's
    verdict in the Best page's words (``service.point_confidence``)."""
    found = point_confidence(data, cell, export.row)
    if found is None:
        return html.P(
            "No confidence verdict: this candidate's workload has no successful ranking.",
            className="muted",
            **ui.attrs(data_testid="pareto-confidence"),
        )
    standing = (
        "the pick of its workload"
        if found.is_pick
        else f"{found.slower_pct:.1f} % slower than its workload's pick ({found.pick})"
    )
    facts = {
        "this configuration": standing,
        "verdict (for the pick)": found.verdict,
        "why": found.note,
    }
    return html.Div(
        [html.H3("Confidence"), ui.kv_table(facts, "pareto-confidence-facts")],
        **ui.attrs(data_testid="pareto-confidence"),
    )


def _config(export: PointExport) -> list[Any]:
    """The YAML, env line and downloads -- or, when TensorRT-LLM cannot run the
    candidate, the reasons instead of a download; capability warnings either way."""
    warnings = (
        [html.Ul([html.Li(w) for w in export.warnings], className="notes")]
        if export.warnings
        else []
    )
    if not export.deployable:
        reasons = ui.empty_state(
            "Not exportable as a TensorRT-LLM config:",
            list(export.errors),
            test_id="pareto-not-deployable",
        )
        return [html.H3("trtllm-serve config"), reasons, *warnings]
    api = f"/api/v1/runs/{export.run_id}/candidates/{export.candidate_index}/export"
    return [
        html.H3("trtllm-serve config (extra_llm_api_options)"),
        *warnings,
        html.Pre(export.yaml, id="pareto-yaml", className="code"),
        html.H3("environment (every rank)"),
        html.Pre(export.env, id="pareto-env", className="code"),
        ui.download_button("pareto-download-btn", "Download YAML"),
        ui.download_button("pareto-env-btn", "Download env"),
        html.P(
            f"files: {export.yaml_filename}, {export.env_filename}; the API serves the "
            f"same: {api}?format=yaml|env",
            className="muted",
        ),
    ]


def _export(data: DashData, cell_key: str | None, point: str | None) -> PointExport | None:
    cell = Cell.from_key(cell_key)
    if cell is None:
        return None
    try:
        export = cell_point_export(data, cell, point)
    except ServiceError:
        return None
    return export if export is not None and export.deployable else None


def download_yaml(data: DashData, cell_key: str | None, point: str | None) -> dict[str, Any] | None:
    """The ``dcc.Download`` payload of candidate ``point``'s YAML (None if unknown or
    not deployable)."""
    export = _export(data, cell_key, point)
    if export is None:
        return None
    return {"content": export.yaml, "filename": export.yaml_filename, "type": "text/yaml"}


def download_env(data: DashData, cell_key: str | None, point: str | None) -> dict[str, Any] | None:
    """The ``dcc.Download`` payload of candidate ``point``'s env file (None if unknown or
    not deployable)."""
    export = _export(data, cell_key, point)
    if export is None:
        return None
    return {"content": export.env, "filename": export.env_filename, "type": "text/plain"}
