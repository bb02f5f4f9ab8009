"""The Pareto page's point detail: a clicked candidate's recipe and exportable config."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from analysis import columns as C
from dashboard import components as ui
from service.export import candidate_export
from service.frames import Cell, DashData
from service.pareto import cell_point, point_at

_FACTS = (
    C.BACKEND,
    C.COMM,
    C.PARALLEL_MODE,
    C.MOE_EP_SIZE,
    C.MOE_TP_SIZE,
    C.CUDA_GRAPH,
    C.NUM_TOKENS,
    C.WORLD_SIZE,
    C.DISPATCH,
    C.SCORE_MS,
    C.TOKENS_PER_S_PER_GPU,
    C.ACTIVATED_TOKENS_PER_RANK,
    C.DISPATCH_KB,
    C.STATUS,
)


def point_from_click(
    data: DashData, cell_key: str | None, click: dict[str, Any] | None
) -> str | None:
    """clickData -> ``"<run_id>:<candidate_index>"`` (None when it cannot be resolved)."""
    cell = Cell.from_key(cell_key)
    if cell is None or not click or not click.get("points"):
        return None
    custom = click["points"][0].get("customdata")
    return point_at(
        data, cell, ui.as_int(custom[0] if isinstance(custom, list) and custom else None)
    )


def render_detail(data: DashData, cell_key: str | None, point: str | None) -> Any:
    """The facts, the run link and the trtllm-serve YAML of candidate ``point``."""
    cell = Cell.from_key(cell_key)
    if cell is None or not point:
        return html.P("Click a point to see its recipe and exportable config.", className="muted")
    row = cell_point(data, cell, point)
    if row is None:
        return ui.empty_state(f"Candidate {point} is not in {cell.label}.")
    export = candidate_export(row.to_dict())
    run_id = int(row[C.RUN_ID])
    facts = {ui.label(c): row[c] for c in _FACTS}
    return html.Div(
        [
            html.H3(f"Candidate {row[C.CANDIDATE_INDEX]} of run {run_id}"),
            html.Div(
                [
                    html.Div(
                        [
                            ui.kv_table(facts, "pareto-facts"),
                            dcc.Link(f"all candidates of run {run_id} →", href=f"/run?id={run_id}"),
                        ],
                        className="half",
                    ),
                    html.Div(
                        [
                            html.H4("trtllm-serve config (extra_llm_api_options)"),
                            html.Pre(export.yaml, id="pareto-yaml", className="code"),
                            html.Pre(
                                export.env or "comm: leave AUTO (no environment variable)",
                                className="code",
                            ),
                            ui.download_button("pareto-download-btn", "Download YAML"),
                        ],
                        className="half",
                    ),
                ],
                className="row",
            ),
        ]
    )


def download_yaml(data: DashData, cell_key: str | None, point: str | None) -> dict[str, Any] | None:
    """The ``dcc.Download`` payload of candidate ``point``'s YAML (None if unknown)."""
    cell = Cell.from_key(cell_key)
    row = cell_point(data, cell, point) if cell else None
    if row is None:
        return None
    name = f"moedash_run{int(row[C.RUN_ID])}_cand{int(row[C.CANDIDATE_INDEX])}.yaml"
    return {"content": candidate_export(row.to_dict()).yaml, "filename": name, "type": "text/yaml"}
