"""What the /history and /compare pages offer before the user chooses: the slices
(model · GPU · quant · world size · phase) with how many TensorRT-LLM versions each
holds, the default slice (the one with the most versions), the slice dropdowns'
options and the labelled control wrapper both pages use.

The version counts come from ``service.slices.stored_slices`` (the runs table and one
grouped read of the phases each run holds, cached per store version), so opening
either page reads no candidate frame.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import html

from analysis import columns as C
from service.compare import compare_options
from service.frames import DashData
from service.scope import Scope
from service.slices import KEYS, N_VERSIONS, stored_slices

ALL = "all"
PHASE_LABELS = {"decode": "decode (CUDA graph on)", "prefill": "prefill (CUDA graph off)"}


def slice_table(data: DashData) -> pd.DataFrame:
    """One row per stored slice (:data:`KEYS`) with its number of distinct TensorRT-LLM
    versions and runs; most versions first (then most runs, then the slice's values)."""
    return data.cached(("history-slices",), lambda: stored_slices(data))


def side_choices(data: DashData, scope: Scope) -> dict[str, Any]:
    """``service.compare.compare_options`` (versions, runs, routing of a slice), cached
    per scope and store version: both pages ask it for several controls per update."""
    return data.cached(
        ("side-choices", scope.key()), lambda: compare_options(data, scope), where=scope.filters()
    )


def default_slice(data: DashData) -> dict[str, Any]:
    """{model, hardware, quant, world_size, phase} of the slice with the most versions
    (ties: most runs, then alphabetical); ``{}`` on an empty database."""
    table = slice_table(data)
    if table.empty:
        return {}
    row = table.iloc[0]
    return {
        "model": str(row[C.MODEL]),
        "hardware": str(row[C.HARDWARE]),
        "quant": str(row[C.QUANT]),
        "world_size": int(row[C.WORLD_SIZE]),
        "phase": str(row[C.PHASE]),
    }


def is_stored(data: DashData, values: dict[str, Any]) -> bool:
    """Whether a slice (``{model, hardware, quant, world_size, phase}``) holds runs."""
    table = slice_table(data)
    mask = pd.Series(True, index=table.index)
    for key, col in zip(("model", "hardware", "quant", "world_size", "phase"), KEYS, strict=True):
        mask &= table[col] == values.get(key)
    return bool(mask.any())


def _values(table: pd.DataFrame, col: str) -> list[Any]:
    return sorted(table[col].unique().tolist()) if len(table) else []


def slice_options(
    data: DashData, chosen: dict[str, Any], all_for: tuple[str, ...] = ()
) -> dict[str, list[dict[str, Any]]]:
    """Dropdown options per slice key: the values stored given the keys chosen before it
    (model narrows GPU, GPU narrows quant, ...), each labelled with its version count;
    keys in ``all_for`` lead with "all". A chosen value that is not stored stays as
    "(not stored)" so the control shows what the URL asked."""
    table = slice_table(data)
    out: dict[str, list[dict[str, Any]]] = {}
    narrowed = table
    for key, col in zip(("model", "hardware", "quant", "world_size", "phase"), KEYS, strict=True):
        opts: list[dict[str, Any]] = [{"label": "all", "value": ALL}] if key in all_for else []
        for value in _values(narrowed, col):
            n = int(narrowed.loc[narrowed[col] == value, N_VERSIONS].max())
            text = PHASE_LABELS.get(
                str(value), f"{value} GPUs" if key == "world_size" else str(value)
            )
            opts.append({"label": f"{text} — {n} version{'s' if n != 1 else ''}", "value": value})
        current = chosen.get(key)
        if current is not None and current not in [o["value"] for o in opts]:
            opts.append({"label": f"{current} (not stored)", "value": current})
        out[key] = opts
        if current is not None and len(narrowed):
            narrowed = narrowed[narrowed[col] == current]
    return out


def control(text: str, comp: Any, wide: bool = False) -> html.Div:
    """A control with its visible label tied to it (``htmlFor``)."""
    return html.Div(
        [html.Label(text, htmlFor=comp.id), comp], className="control wide" if wide else "control"
    )


def version_options(versions: pd.DataFrame) -> list[dict[str, Any]]:
    """One option per version (``analysis.versions.version_table`` rows, in order):
    "1.2.0rc27 · 2 runs · 2026-09-01"."""
    opts = []
    for row in versions.itertuples(index=False):
        runs = int(row.n_runs)
        date = f" · {row.first_run_date}" if row.first_run_date else ""
        opts.append(
            {
                "label": f"version {row.version} · {runs} run{'s' if runs != 1 else ''}{date}",
                "value": str(row.version),
            }
        )
    return opts


def with_asked(options: list[dict[str, Any]], *asked: str | None) -> list[dict[str, Any]]:
    """``options`` plus one "(not stored)" entry per asked value they do not hold, so a
    dropdown keeps what a URL asked (and the page can say why it is not answerable)."""
    values = {o["value"] for o in options}
    extra = [a for a in dict.fromkeys(asked) if a is not None and a not in values]
    return [*options, *({"label": f"{a} (not stored)", "value": a} for a in extra)]


def run_options(runs: pd.DataFrame) -> list[dict[str, Any]]:
    """One option per run (newest first): "run 12 · 1.2.0rc28 · 2026-09-15 · c0ffee3"."""
    opts = []
    for row in runs.to_dict("records"):
        bits = [f"run {int(row[C.RUN_ID])}"]
        for col in (C.TRTLLM_VERSION, C.RUN_DATE, C.TRTLLM_COMMIT):
            value = row.get(col)
            if value is not None and not pd.isna(value):
                bits.append(str(value))
        opts.append({"label": " · ".join(bits), "value": str(int(row[C.RUN_ID]))})
    return opts
