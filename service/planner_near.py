"""Plans close to the best: how many, how far apart, and the smallest deployment.

A search returns hundreds of plans within a few per cent of the best, spanning very
different sizes (issue 16 found 111 within 2 % spanning 354-2,984 GPUs). This summary
makes that visible and names the smallest deployment that is nearly as good.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis.tables import to_json_records

NEAR_COLUMNS: tuple[str, ...] = (
    "attention_gpu",
    "expert_gpu",
    "tpa",
    "tpe",
    "na",
    "m",
    "experts_per_node",
    "gpus",
    "batch",
    "tbt_ms",
    "throughput",
    "tput_per_cost",
)


def near_best(alternatives: pd.DataFrame, pct: float) -> dict[str, Any]:
    """Plans meeting all pipeline constraints whose tokens/s per cost is within ``pct`` %
    of the best such plan (all plans if none meets them).

    Returns ``pct``, ``count``, the spread of GPUs (``gpus_min``, ``gpus_max``) and of
    tokens/s per cost (``tput_per_cost_min``/``max``, per normalised cost unit), and
    ``smallest``: the plan with the fewest GPUs among them (ties: higher tokens/s per
    cost, then the alternatives' order). Empty frame: count 0 and None everywhere.
    """
    empty: dict[str, Any] = {
        "pct": pct,
        "count": 0,
        "gpus_min": None,
        "gpus_max": None,
        "tput_per_cost_min": None,
        "tput_per_cost_max": None,
        "smallest": None,
    }
    if alternatives.empty:
        return empty
    pool = alternatives
    if "constraints_met" in pool and pool["constraints_met"].astype(bool).any():
        pool = pool.loc[pool["constraints_met"].astype(bool)]
    top = float(pool["tput_per_cost"].max())
    near = pool.loc[pool["tput_per_cost"] >= top * (1 - pct / 100.0)]
    ordered = near.assign(_neg=-near["tput_per_cost"]).sort_values(["gpus", "_neg"], kind="stable")
    smallest = to_json_records(ordered[list(NEAR_COLUMNS)].head(1))
    return {
        "pct": pct,
        "count": len(near),
        "gpus_min": int(near["gpus"].min()),
        "gpus_max": int(near["gpus"].max()),
        "tput_per_cost_min": float(near["tput_per_cost"].min()),
        "tput_per_cost_max": top,
        "smallest": smallest[0] if smallest else None,
    }
