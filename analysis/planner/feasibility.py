"""Which plans are offered, and why nothing is when nothing fits.

A plan is **offered** only when it fits memory, the GPU cap, the SLO and the Te fit's
range *and* meets the three ping-pong pipeline constraints (MegaScale-Infer §4: Ta ≈ Te,
Tc < Tf, m ≥ 2(1 + Tc/Tf)). Plans that fit but break a constraint are listed apart
(:func:`broken_frame`) with the constraints they break. When no plan is offered,
:func:`binding_reason` names what binds: the TP choices, memory, the GPU count, the SLO,
the Te fit range, or the pipeline constraints.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.planner.evaluate import REJECTION_REASONS, Rejections
from analysis.planner.plans import ALTERNATIVE_COLUMNS, Plan, SearchOptions

CONSTRAINT_LABELS: dict[str, str] = {
    "balance": "Ta ≈ Te",
    "comm_hidden": "Tc < Tf",
    "pipeline_depth": "m ≥ 2·(1 + Tc/Tf)",
}
REASON_LABELS: dict[str, str] = {**REJECTION_REASONS, "pipeline": "pipeline constraints"}
BROKEN_COLUMNS: tuple[str, ...] = (*ALTERNATIVE_COLUMNS, "broken")


def broken_constraints(plan: Plan) -> list[str]:
    """Labels of the pipeline constraints ``plan`` breaks (empty: it meets all three)."""
    return [CONSTRAINT_LABELS.get(c.name, c.name) for c in plan.constraints if not c.met]


def broken_frame(rows: Sequence[dict[str, object]], plans: Sequence[Plan]) -> pd.DataFrame:
    """The alternatives' rows of plans that break a constraint, with a ``broken`` column
    naming the constraints (``"; "``-joined), in the given order."""
    pairs = zip(rows, plans, strict=True)
    out = [{**r, "broken": "; ".join(broken_constraints(p))} for r, p in pairs]
    return pd.DataFrame(out, columns=list(BROKEN_COLUMNS))


def binding_reason(
    *,
    setups: int,
    setup_why: Rejections,
    plan_why: Rejections,
    broken: Sequence[Plan],
    min_gpus: int | None,
    options: SearchOptions,
    smallest: str = "",
    slo_ms: float,
) -> tuple[str, str]:
    """``(code, sentence)`` of what keeps every plan out; code in :data:`REASON_LABELS`.

    Order: no setup at all (TP choices that fit no node, else weights that fit no node),
    the GPU cap below the smallest setup, plans that fit but break a pipeline constraint,
    else the most frequent reason plans were refused (ties: SLO, memory, Te range, GPU
    count), each with its numbers.
    """
    if setups == 0:
        code = "tp_choice" if setup_why.counts["tp_choice"] else "memory"
        other = [v for k, v in setup_why.examples.items() if k != code]
        text = setup_why.examples.get(code, "no setup fits")
        return code, text + (f" (also: {other[0]})" if other else "")
    if options.max_gpus is not None and min_gpus is not None and min_gpus > options.max_gpus:
        return (
            "gpu_count",
            f"the smallest plan that holds the model needs {min_gpus} GPUs"
            + (f" ({smallest})" if smallest else "")
            + f", over max_gpus {options.max_gpus}",
        )
    if broken:
        counts: dict[str, int] = {}
        for p in broken:
            for label in broken_constraints(p):
                counts[label] = counts.get(label, 0) + 1
        most = sorted(counts, key=lambda k: (-counts[k], k))
        spread = ", ".join(f"{k} in {counts[k]}" for k in most)
        return (
            "pipeline",
            f"{len(broken)} plan(s) fit memory and the SLO but each breaks a ping-pong "
            f"pipeline constraint ({spread}); the best of them breaks "
            f"{'; '.join(broken_constraints(broken[0]))}",
        )
    order = ("slo", "memory", "te_range", "gpu_count")
    code = max(order, key=lambda k: (plan_why.counts[k], -order.index(k)))
    if not plan_why.counts[code]:
        return "slo", "no plan was evaluated"
    example = plan_why.examples.get(code, "")
    if code == "slo":
        return (
            "slo",
            f"even one sequence per attention node misses the {slo_ms:g} ms TBT SLO "
            f"(the fastest takes {plan_why.min_tbt_ms:.3g} ms)",
        )
    return code, f"{REASON_LABELS[code]}: {example}"
