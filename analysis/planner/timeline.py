"""Ping-pong timeline of a plan: when each micro-batch occupies each lane (ms)."""

from __future__ import annotations

import pandas as pd

from analysis.planner.plans import Plan

LANES: tuple[str, ...] = ("attention", "M2N", "expert", "N2M")
TIMELINE_COLUMNS: tuple[str, ...] = ("lane", "micro_batch", "layer", "start_ms", "end_ms")


def timeline(plan: Plan, layers: int = 1) -> pd.DataFrame:
    """Rows (lane, micro_batch, layer, start_ms, end_ms) for ``layers`` MoE layers.

    Each lane (attention node, M2N link, expert node, N2M link) serves one micro-batch at a
    time, in micro-batch order within a layer and layer order overall; micro-batch ``i``
    may start layer ``l+1`` attention only after its layer-``l`` N2M transfer arrives.
    Durations are the plan's Ta, Tc, Te, Tc. Micro-batches are numbered from 1 and layers
    from 1, as in the paper's Figure 4. Rows are ordered by start time, then lane order.
    """
    if layers < 1:
        raise ValueError("layers must be >= 1")
    free = dict.fromkeys(LANES, 0.0)
    ready = [0.0] * plan.m
    durations = {
        "attention": plan.ta_ms,
        "M2N": plan.tc_ms,
        "expert": plan.te_ms,
        "N2M": plan.tc_ms,
    }
    rows = []
    for layer in range(1, layers + 1):
        for i in range(plan.m):
            t = ready[i]
            for lane in LANES:
                start = max(t, free[lane])
                end = start + durations[lane]
                free[lane] = end
                rows.append((lane, i + 1, layer, start, end))
                t = end
            ready[i] = t
    df = pd.DataFrame(rows, columns=list(TIMELINE_COLUMNS))
    df["_lane"] = df["lane"].map({lane: k for k, lane in enumerate(LANES)})
    df = df.sort_values(["start_ms", "_lane", "micro_batch"], kind="stable")
    return df.drop(columns="_lane").reset_index(drop=True)
