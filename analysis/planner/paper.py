"""The paper's own experiments, recomputed by the model (MegaScale-Infer §7.4).

``micro_batch_ablation`` is Figure 14: the micro-batch size is held constant (so Ta, Te
and Tc stay those of the plan) and only the number of micro-batches m changes, so the
global batch is ``ba*m*na`` and the iteration time is paper Eq. 5 with the pipeline unit
of :func:`~analysis.planner.perf_model.pipeline_unit_ms`. ``PAPER_RESULTS`` holds the
numbers the paper reports, for tests and docs/planner.md to compare against.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.planner.perf_model import total_latency_ms
from analysis.planner.plans import Plan

# Figure 14, m = 2 -> 3 throughput ratio per model; m = 1 -> 2 is "1.9x" for all.
PAPER_M2_TO_M3: dict[str, float] = {"mixtral_8x22b": 1.10, "dbrx": 1.28, "scaled_moe": 1.38}
PAPER_M1_TO_M2 = 1.9
# Figure 15: DBRX, m = 3, throughput per GPU peaks at attention DP = 8 of 1..16.
PAPER_DBRX_PEAK_DP = 8


def micro_batch_ablation(plan: Plan, layers: int, ms: Sequence[int] = (1, 2, 3, 4)) -> pd.DataFrame:
    """Throughput (tokens/s) of ``plan`` at each m with its micro-batch size fixed.

    Columns: m, batch (``ba*m*na``), t_total_ms (Eq. 5), throughput, ratio_to_previous
    (throughput over the previous row's; NaN on the first row).
    """
    rows = []
    for m in ms:
        batch = plan.ba * m * plan.na
        t = total_latency_ms(plan.ta_ms, plan.te_ms, plan.tc_ms, m, layers)
        rows.append({"m": m, "batch": batch, "t_total_ms": t, "throughput": batch / (t / 1e3)})
    out = pd.DataFrame(rows)
    out["ratio_to_previous"] = out["throughput"] / out["throughput"].shift(1)
    return out
