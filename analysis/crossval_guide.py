"""The guide's published cross-validation table, and ours beside it row for row.

``GUIDE_TABLE`` carries the numbers of the TensorRT-LLM MoE performance guide's table
("Cross Validation of Microbenchmark with End-to-end Performance"): per model and
hardware the Match count split by phase and the end-to-end outcomes of the Mismatches.

:func:`compare` puts our ledger (under any match rule) beside it per (model, hardware,
phase) and breaks our shortfall down by cause (``analysis.crossval_rules.causes``):
workloads we have no bench_moe data for, exact-rule Mismatches that only another layout
family wins (rule), near-ties within the noise band, and different winners.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.crossval_rules import DEFAULT_NOISE_PCT, causes, match_flags


@dataclass(frozen=True)
class GuideRow:
    """One row of the guide's table (counts of workloads; outcomes out of Mismatches)."""

    model: str  # bench_moe model name
    hardware: str
    prefill_match: int
    prefill_n: int
    decode_match: int
    decode_n: int
    improvement: int
    flat: int
    regression: int
    regression_after_pr: int


GUIDE_TABLE: tuple[GuideRow, ...] = (
    GuideRow("deepseek_v4_pro", "GB300", 54, 54, 38, 54, 9, 6, 1, 0),
    GuideRow("kimi_k2", "GB200", 25, 25, 8, 25, 4, 10, 3, 0),
    GuideRow("kimi_k2", "GB300", 25, 25, 10, 25, 1, 13, 1, 0),
    GuideRow("glm_5", "GB200", 43, 46, 32, 46, 3, 13, 1, 0),
    GuideRow("glm_5", "GB300", 1, 45, 35, 45, 5, 49, 0, 0),
    GuideRow("deepseek_r1", "GB200", 49, 52, 43, 52, 5, 7, 0, 0),
)

PHASE_ROWS = ("prefill", "decode")
G_MATCH, G_N = "guide_match", "guide_n"
O_MATCH, O_N = "ours_match", "ours_n"
DELTA = "match_delta"  # guide_match - ours_match
N_NO_DATA = "n_no_data"
N_RULE = "n_rule"
N_TIE = "n_tie_within_noise"
N_WINNER = "n_different_winner"
GUIDE_COMPARE_COLUMNS: tuple[str, ...] = (
    cc.S_MODEL,
    c.MODEL,
    c.HARDWARE,
    cc.PHASE,
    G_MATCH,
    G_N,
    O_MATCH,
    O_N,
    DELTA,
    N_NO_DATA,
    N_RULE,
    N_TIE,
    N_WINNER,
)


def guide_frame() -> pd.DataFrame:
    """``GUIDE_TABLE`` as one row per (model, hardware, phase): guide_match, guide_n."""
    rows = []
    for g in GUIDE_TABLE:
        for phase, m, n in (
            ("prefill", g.prefill_match, g.prefill_n),
            ("decode", g.decode_match, g.decode_n),
        ):
            rows.append({c.MODEL: g.model, c.HARDWARE: g.hardware, cc.PHASE: phase,
                         G_MATCH: m, G_N: n})  # fmt: skip
    return pd.DataFrame(rows)


def compare(
    ledger_df: pd.DataFrame, rule: str = "exact", noise_pct: float = DEFAULT_NOISE_PCT
) -> pd.DataFrame:
    """The guide's rows with ours beside them (``GUIDE_COMPARE_COLUMNS``), in the guide's
    order. ``ours_n`` = our compared (Match + Mismatch) workloads of that model, hardware
    and phase; ``ours_match`` = Matches under ``rule``; the cause columns count our
    workloads that are not exact Matches, by cause (``crossval_rules.causes``): no data
    (mappable but unmeasured), rule, tie within noise, different winner. A row we have no
    workloads for has zeros everywhere on our side."""
    lg = ledger_df[ledger_df[cc.STATUS] != cc.NOT_MAPPABLE]
    hw = lg[c.HARDWARE].astype(str).str.upper()
    flags = match_flags(lg, noise_pct)[rule]
    cause = causes(lg, noise_pct)
    compared = lg[cc.STATUS].isin([cc.MATCH, cc.MISMATCH])
    out = []
    for g in guide_frame().to_dict("records"):
        sel = (lg[c.MODEL] == g[c.MODEL]) & (hw == g[c.HARDWARE]) & (lg[cc.PHASE] == g[cc.PHASE])
        n = int((sel & compared).sum())
        m = int((sel & compared & flags).sum())
        cs = cause[sel].value_counts()
        out.append(
            {
                cc.S_MODEL: cc.MODEL_DISPLAY.get(g[c.MODEL], g[c.MODEL]),
                **g,
                O_MATCH: m,
                O_N: n,
                DELTA: int(g[G_MATCH]) - m,
                N_NO_DATA: int(cs.get("no data", 0)),
                N_RULE: int(cs.get("rule", 0)),
                N_TIE: int(cs.get("tie within noise", 0)),
                N_WINNER: int(cs.get("different winner", 0)),
            }
        )
    return pd.DataFrame(out, columns=list(GUIDE_COMPARE_COLUMNS))


def guide_summary() -> pd.DataFrame:
    """The guide's table as published (``SUMMARY_COLUMNS`` display strings and counts)."""
    rows = []
    for g in GUIDE_TABLE:
        n, m = g.prefill_n + g.decode_n, g.prefill_match + g.decode_match
        k = n - m
        pct = f"{m / n * 100:.2f}".rstrip("0").rstrip(".")
        rows.append(
            {
                cc.S_MODEL: cc.MODEL_DISPLAY.get(g.model, g.model),
                cc.S_HARDWARE: g.hardware,
                cc.S_MATCH: f"{m}/{n} ({pct}%, prefill {g.prefill_match}/{g.prefill_n}, "
                f"decode {g.decode_match}/{g.decode_n})",
                cc.S_MISMATCH: f"{k}/{n}",
                cc.S_IMPROVEMENT: f"{g.improvement}/{k}",
                cc.S_FLAT: f"{g.flat}/{k}",
                cc.S_REGRESSION: f"{g.regression}/{k}",
                cc.S_REGRESSION_AFTER_PR: f"{g.regression_after_pr}/{k}",
            }
        )
    return pd.DataFrame(rows)
