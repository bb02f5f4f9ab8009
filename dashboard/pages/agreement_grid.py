"""The /agreement page's grid: the columns (units in the headers), the regret definition
and each row's evidence links (the Pareto view of its workload, the run of its best)."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlencode

import pandas as pd

from analysis import columns as C
from dashboard import components as ui
from service.agreement_view import REGRET_DEFINITION, REGRET_PCT

EVIDENCE = "evidence"
COLUMNS: tuple[str, ...] = (
    C.MODEL,
    C.HARDWARE,
    C.QUANT,
    C.WORLD_SIZE,
    C.NUM_TOKENS,
    C.DISPATCH,
    C.ATTENTION_DP,
    C.PHASE,
    REGRET_PCT,
    "tree_backend",
    "tree_expected_comm",
    "best_backend",
    "best_comm",
    EVIDENCE,
    "best_parallel_mode",
    "best_score_ms",
    "pick_score_ms",
    "backend_agrees",
    "comm_agrees",
    "layout_agrees",
    "in_guide_coverage",
    "best_n_repeats",
    "best_run_id",
)
HEADERS = {
    C.ATTENTION_DP: "attention",
    "tree_backend": "tree backend",
    "tree_expected_comm": "tree comm (forced or AUTO's pick)",
    "best_backend": "measured best backend",
    "best_comm": "measured best comm",
    "best_parallel_mode": "measured best mode",
    "best_score_ms": "measured best score (ms)",
    "pick_score_ms": "tree's pick score (ms)",
    REGRET_PCT: "regret (%)",
    "backend_agrees": "backend agrees",
    "comm_agrees": "comm agrees",
    "layout_agrees": "best is pure EP",
    "in_guide_coverage": "in the guide's coverage",
    "best_n_repeats": "runs pooled (best)",
    "best_run_id": "run (best)",
    EVIDENCE: "evidence",
}


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return None if pd.isna(value) else str(value)


def evidence_links(row: dict[str, Any]) -> str:
    """Markdown links (our own paths, every value URL-encoded) to the Pareto view of the
    row's cell and workload and to the run of its measured best."""
    attn = row.get(C.ATTENTION_DP)
    params = {
        "model": _text(row.get(C.MODEL)),
        "hardware": _text(row.get(C.HARDWARE)),
        "quant": _text(row.get(C.QUANT)),
        "ws": _text(row.get(C.WORLD_SIZE)),
        "phase": _text(row.get(C.PHASE)),
        "attn": None if attn is None or pd.isna(attn) else ("D" if bool(attn) else "T"),
        "dispatch": _text(row.get(C.DISPATCH)),
    }
    pareto = "/pareto?" + urlencode({k: v for k, v in params.items() if v is not None})
    links = [f"[Pareto]({pareto})"]
    run = row.get("best_run_id")
    if run is not None and not pd.isna(run):
        links.append(f"[run {int(run)}](/run?id={int(run)})")
    return " · ".join(links)


def table_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with the evidence column, in :data:`COLUMNS` (those present)."""
    rows = rows.copy()
    rows[EVIDENCE] = [evidence_links(r) for r in rows.to_dict("records")]
    return rows[[c for c in COLUMNS if c in rows]]


def agreement_grid(rows: pd.DataFrame) -> Any:
    """The sortable, filterable grid of ``rows`` (agreement detail rows) with units in
    the headers, the regret definition on its header and the evidence links."""
    frame = table_frame(rows)
    overrides: dict[str, dict[str, Any]] = {c: {"headerName": h} for c, h in HEADERS.items()}
    overrides[EVIDENCE] = {
        "headerName": HEADERS[EVIDENCE],
        "cellRenderer": "markdown",
        "sortable": False,
        "filter": False,
        "minWidth": 160,
    }
    overrides[REGRET_PCT] = {
        "headerName": HEADERS[REGRET_PCT],
        "headerTooltip": REGRET_DEFINITION,
        "sort": "desc",
    }
    overrides[C.ATTENTION_DP] = {
        "headerName": HEADERS[C.ATTENTION_DP],
        "cellDataType": "text",
        "valueFormatter": {"function": "params.value == null ? '' : (params.value ? 'DP' : 'TP')"},
    }
    grid = ui.grid(
        "agreement-grid", frame, list(frame.columns), height="620px", col_overrides=overrides
    )
    return grid
