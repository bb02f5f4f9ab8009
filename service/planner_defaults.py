"""Where the /planner page starts: a catalogue model and GPU the store has sweeps of.

The planner's own defaults (Mixtral 8x22B on H20, the paper's preset) rest on a roofline
estimate. A page opened without a model or GPU in its URL plans what the store measured
instead, so its first Te comes from stored sweeps: :func:`store_default`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import columns as C
from analysis.planner import GPUS, MODELS
from service.frames import DashData


def store_default(data: DashData) -> tuple[str, str] | None:
    """``(model, GPU)`` of the catalogue with the most stored sweep candidates in the
    model's expert quant (the Te fit's rule) on that GPU's hardware label; ties go to
    the GPU later in the catalogue (the newer one), then the model name. None when the
    store holds no sweep of a catalogue model on a catalogue GPU (or cannot be read):
    the page then opens on the paper's preset. Synthetic runs count only when nothing
    else is stored."""
    try:
        cov = data.coverage()
    except Exception:  # noqa: BLE001 - an empty or unavailable store: the paper's preset
        return None
    ranked = rank_defaults(cov)
    return ranked[0] if ranked else None


def rank_defaults(coverage: pd.DataFrame) -> list[tuple[str, str]]:
    """Every stored (catalogue model, catalogue GPU), best first (:func:`store_default`)."""
    if coverage.empty:
        return []
    cov = coverage
    if C.SYNTHETIC in cov and (~cov[C.SYNTHETIC].astype(bool)).any():
        cov = cov.loc[~cov[C.SYNTHETIC].astype(bool)]
    order = {name: i for i, name in enumerate(GPUS)}
    totals: dict[tuple[str, str], int] = {}
    for row in cov.to_dict(orient="records"):
        model, gpu = str(row[C.MODEL]), str(row[C.HARDWARE]).upper()
        spec = MODELS.get(model)
        if spec is None or gpu not in GPUS or str(row[C.QUANT]) != spec.expert_quant:
            continue
        totals[(model, gpu)] = totals.get((model, gpu), 0) + _int(row.get("candidates"))
    return sorted(totals, key=lambda k: (-totals[k], -order[k[1]], k[0]))


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
