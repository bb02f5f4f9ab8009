"""What to measure next: the unmeasured workloads whose winner is least certain.

For one workload group's fitted curves (``analysis.predict.fit_group``), the candidate
token counts are the geometric midpoints between neighbouring measured counts and one
doubling beyond each end. At each, the predicted pick's **expected regret** is the mean,
over joint draws of every configuration's score (``scipy.stats.norm``, log scale, each
conformal interval read as a normal band, as ``P(fastest)``), of how much slower the
pick is than the draw's fastest. The list is ranked by it, most uncertain first, each
with the bench_moe command that would measure it (``analysis.crossval_sweeps``: the
pick's family of parallel modes, CUDA graph mode and attention).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from analysis import columns as C
from analysis import predict as P
from analysis.crossval_sweeps import row_command
from analysis.derived import as_float

N_DRAWS = 2000


def expected_regret(
    log_pred: np.ndarray,
    log_lo: np.ndarray,
    log_hi: np.ndarray,
    conf: float,
    seed: int = 0,
    pick: int | None = None,
) -> float:
    """Mean over joint draws of ``score(pick) / min(score) - 1``, in percent, where the
    pick is position ``pick`` (default: the smallest ``log_pred``)."""
    if len(log_pred) < 2:
        return 0.0
    z = float(stats.norm.ppf(0.5 + conf / 2))
    scale = np.maximum((log_hi - log_lo) / (2 * z), 1e-9)
    draws = stats.norm.rvs(
        loc=log_pred, scale=scale, size=(N_DRAWS, len(log_pred)), random_state=seed
    )
    pick = int(np.argmin(log_pred)) if pick is None else pick
    return float(100.0 * np.mean(np.expm1(draws[:, pick] - draws.min(axis=1))))


def candidates(tokens: np.ndarray) -> list[int]:
    """Unmeasured token counts worth asking about: geometric midpoints of neighbouring
    measured counts, and one doubling beyond each end (at least 1)."""
    measured = np.unique(tokens[np.isfinite(tokens) & (tokens > 0)])
    if len(measured) < 2:
        return []
    mids = np.rint(np.sqrt(measured[1:] * measured[:-1])).astype(int)
    edges = [max(1, int(measured[0] // 2)), int(measured[-1] * 2)]
    out = sorted({int(t) for t in (*mids, *edges)} - {int(t) for t in measured})
    return out


def measure_next(
    fit: P.GroupModel, cell: dict[str, Any], limit: int = 10, seed: int = 0
) -> pd.DataFrame:
    """The group's candidate token counts ranked by expected regret (module docstring):
    world_size, attention, phase, num_tokens, pick, p_fastest (of the pick), expected_regret_pct,
    extrapolated, command. ``cell``: model, hardware, quant (for the command)."""
    cols = ["world_size", "attention", "phase", "num_tokens", "pick", "p_fastest",
            "expected_regret_pct", "extrapolated", "command"]  # fmt: skip
    if fit.model is None:
        return pd.DataFrame(columns=cols)
    rows = []
    for t in candidates(as_float(fit.group[C.NUM_TOKENS])):
        got = P.predict_workload(fit.group, t, fit.world_size, fitted=fit, seed=seed)
        if got.pick is None or got.measured:
            continue
        table = got.rows[np.isfinite(got.rows[P.LO_MS].to_numpy(float))]  # with a band
        log_pred = np.log(table[P.PRED_MS].to_numpy(float))
        regret = expected_regret(
            log_pred,
            np.log(table[P.LO_MS].to_numpy(float)),
            np.log(table[P.HI_MS].to_numpy(float)),
            fit.confidence,
            seed,
            pick=0,  # the answer's pick is its first row
        )
        first = table.iloc[0].to_dict()
        key = {**first, **cell, C.WORLD_SIZE: fit.world_size, C.NUM_TOKENS: t}
        if fit.cuda_graph is not None:
            key[C.CUDA_GRAPH] = fit.cuda_graph
        rows.append(
            {
                "world_size": fit.world_size,
                "attention": None
                if fit.attention_dp is None
                else ("dp" if fit.attention_dp else "tp"),
                "phase": None
                if fit.cuda_graph is None
                else ("decode" if fit.cuda_graph else "prefill"),
                "num_tokens": t,
                "pick": got.pick,
                "p_fastest": float(first[P.P_FASTEST]),
                "expected_regret_pct": regret,
                "extrapolated": any("extrapolated" in n for n in got.notes),
                "command": row_command(key),
            }
        )
    out = pd.DataFrame(rows, columns=cols)
    out = out.sort_values(["expected_regret_pct", "num_tokens"], ascending=[False, True])
    return out.head(limit).reset_index(drop=True)
