"""How the best plan moves when prices or the sequence length change by ±20 %.

Each variant re-runs the same search (same Te fits: they do not depend on price or
sequence length) with one input scaled: the price of each GPU type the best plan uses,
then the average sequence length. A row says which plan wins then and whether it is the
same deployment (GPU pair, tpa, tpe, na, m, experts per node) as the base plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from analysis.planner import Budget, Fit, PlanResult

FACTORS: tuple[float, ...] = (0.8, 1.2)
KEY_FIELDS: tuple[str, ...] = ("attention_gpu", "expert_gpu", "tpa", "tpe", "na", "m")


def variants(res: Any, best: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(label, resolved inputs) per variant: each used GPU's price x0.8 / x1.2, then the
    sequence length x0.8 / x1.2. ``res`` is a ``service.planner_request.Resolved``."""
    out: list[tuple[str, Any]] = []
    for name in dict.fromkeys([best["attention_gpu"], best["expert_gpu"]]):
        for f in FACTORS:
            gpus = tuple(
                dataclasses.replace(g, price=g.price * f) if g.name == name else g for g in res.gpus
            )
            out.append((f"{name} price x{f:g}", dataclasses.replace(res, gpus=gpus)))
    for f in FACTORS:
        wl = dataclasses.replace(res.workload, seq_len=res.workload.seq_len * f)
        out.append((f"sequence length x{f:g}", dataclasses.replace(res, workload=wl)))
    return out


def sensitivity(
    res: Any,
    best: Mapping[str, Any] | None,
    efits: Mapping[str, Fit],
    run: Callable[[Any, Mapping[str, Fit], Budget], PlanResult],
    budget: Callable[[], Budget],
) -> list[dict[str, Any]]:
    """One row per :func:`variants` entry: the variant's best plan (or None), its tokens/s
    per cost (per normalised cost unit, at the variant's prices), and ``same_plan``.
    ``run`` is the service's search; ``budget`` makes a fresh budget per variant.
    Empty when there is no base plan."""
    if not best:
        return []
    rows = []
    base = tuple(best[k] for k in KEY_FIELDS) + (best["experts_per_node"],)
    for label, var in variants(res, best):
        b = budget()
        found = run(var, efits, b).best
        row: dict[str, Any] = {"variant": label, "truncated": b.truncated}
        if found is None:
            row.update(same_plan=False, gpus=None, tput_per_cost=None, plan="nothing fits")
        else:
            key = tuple(getattr(found, k) for k in KEY_FIELDS) + (found.experts_per_node,)
            row.update(
                same_plan=key == base,
                gpus=found.gpus,
                tput_per_cost=found.tput_per_cost,
                plan=f"{found.na}x {found.attention_gpu} TP{found.tpa} + {found.expert_nodes}x "
                f"{found.expert_gpu} TP{found.tpe}, m={found.m}",
            )
        rows.append(row)
    return rows
