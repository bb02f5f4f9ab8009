"""Which match rule reproduces the guide's cross-validation table, row by row.

The guide's table (``analysis.crossval_guide.GUIDE_TABLE``) counts Matches per model,
hardware and phase; ours depend on the rule. Beyond the four ``crossval_rules.RULES``
this module tries per-phase candidate filters and a top-k compare (:data:`SPECS`):

* ``top k``: Match when the deployed configuration ranks k-th or better;
* ``no MegaMoE in prefill``: in prefill rows the MEGAMOE_* candidates are left out of
  the ranking (a fused-comm backend the guide's prefill deployments never use): the
  deployed config's rank counts only the faster candidates of other backends
  (``crossval_columns.FASTER_THAN_DEPLOYED``).

``fixed_only`` keeps the fixed-ISL/OSL workloads (the guide's table leaves out the
agentic-coding traces). A spec *reproduces* a guide row when our Match rate is within
:data:`REPRODUCE_POINTS` percentage points of the guide's; a row no spec reproduces is
explained by the backend that wins the measurement and its median margin over the
deployed config. The default rule is the spec with the smallest mean error over every
guide row we have workloads for (its fit stated beside it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import columns as c
from analysis import crossval_columns as cc
from analysis.crossval_guide import G_MATCH, G_N, guide_frame
from analysis.crossval_rules import match_flags

REPRODUCE_POINTS = 5.0
FIXED = "fixed-seq-len"


@dataclass(frozen=True)
class RuleSpec:
    """A match rule with its options: ``rule`` one of exact, backend, within_noise,
    same_layout, top_k; ``noise_pct`` for within_noise; ``k`` for top_k;
    ``prefill_no_megamoe``: MEGAMOE_* candidates left out of prefill rankings."""

    name: str
    rule: str
    noise_pct: float = 3.0
    k: int = 1
    prefill_no_megamoe: bool = False


SPECS: tuple[RuleSpec, ...] = (
    RuleSpec("exact", "exact"),
    RuleSpec("backend", "backend"),
    RuleSpec("within_noise 3 %", "within_noise", 3.0),
    RuleSpec("within_noise 5 %", "within_noise", 5.0),
    RuleSpec("within_noise 10 %", "within_noise", 10.0),
    RuleSpec("same_layout", "same_layout"),
    RuleSpec("top 2", "top_k", k=2),
    RuleSpec("top 3", "top_k", k=3),
    RuleSpec("exact, no MegaMoE in prefill", "top_k", k=1, prefill_no_megamoe=True),
    RuleSpec("top 2, no MegaMoE in prefill", "top_k", k=2, prefill_no_megamoe=True),
    RuleSpec("within_noise 3 %, no MegaMoE in prefill", "within_noise", 3.0, 1, True),
)


def _effective_rank(lg: pd.DataFrame, prefill_no_megamoe: bool) -> pd.Series:
    """1 + the faster candidates that stay in the ranking (NaN: deployed not measured)."""
    faster = lg.get(cc.FASTER_THAN_DEPLOYED, None)
    if faster is None:
        return pd.to_numeric(lg[cc.DEPLOYED_RANK], errors="coerce").astype(float)
    prefill = (lg[cc.PHASE] == "prefill").to_numpy()
    out = []
    for text, pre in zip(faster.tolist(), prefill, strict=True):
        if text is None or (isinstance(text, float) and np.isnan(text)) or text is pd.NA:
            out.append(np.nan)
            continue
        names = str(text).split()
        if prefill_no_megamoe and pre:
            names = [n for n in names if not n.upper().startswith("MEGAMOE")]
        out.append(1.0 + len(names))
    return pd.Series(out, index=lg.index, dtype=float)


def spec_flags(lg: pd.DataFrame, spec: RuleSpec) -> pd.Series:
    """True where a compared ledger row is a Match under ``spec``."""
    compared = lg[cc.STATUS].isin([cc.MATCH, cc.MISMATCH])
    if spec.rule == "top_k":
        rank = _effective_rank(lg, spec.prefill_no_megamoe)
        hit = (rank <= spec.k).fillna(False)
        if spec.k == 1:  # a tie the ledger resolved for the deployed config stays a Match
            hit |= lg[cc.STATUS] == cc.MATCH
        return (compared & hit).astype(bool)
    flags = match_flags(lg, spec.noise_pct)[spec.rule].astype(bool)
    if spec.prefill_no_megamoe:
        flags = flags | (compared & (_effective_rank(lg, True) == 1).fillna(False))
    return (compared & flags).astype(bool)


FIT_COLUMNS: tuple[str, ...] = ("spec", "mean_error_points", "n_rows", "n_reproduced")
ROW_COLUMNS: tuple[str, ...] = (
    c.MODEL,
    c.HARDWARE,
    cc.PHASE,
    G_MATCH,
    G_N,
    "ours_n",
    "reproduced_by",
    "explanation",
)


@dataclass(frozen=True)
class GuideFit:
    """``rows``: per guide row (model, hardware, phase) our Match count under every spec
    (columns named by the spec), the specs that reproduce it and, when none does, why;
    ``fit``: per spec the mean error in percentage points over the rows we have
    workloads for and how many it reproduces, best first; ``default``: the best spec;
    ``headline``: the gap explained in one paragraph."""

    rows: pd.DataFrame
    fit: pd.DataFrame
    default: str
    headline: str


def _explain(sub: pd.DataFrame, g_match: int, g_n: int) -> str:
    """Why no spec reproduces a row: the backend that wins our Mismatches and its margin."""
    mism = sub[sub[cc.STATUS] == cc.MISMATCH]
    if mism.empty:
        return f"every compared workload is an exact Match; the guide counts {g_match}/{g_n}"
    best = (
        mism[cc.BEST_BACKEND].astype(str)
        + " "
        + mism[cc.BEST_PARALLEL_MODE].astype(str)
        + " "
        + mism[cc.BEST_COMM].astype(str)
    )
    top = best.value_counts()
    winner, n = str(top.index[0]), int(top.iloc[0])
    won = mism[best == winner]
    gap = pd.to_numeric(won[cc.DEPLOYED_GAP_PCT], errors="coerce").dropna()
    deployed = ", ".join(
        sorted({f"{b} {m}" for b, m in zip(won[c.BACKEND], won[c.PARALLEL_MODE], strict=True)})
    )
    margin = f" by a median {gap.median():.1f} % (up to {gap.max():.1f} %)" if len(gap) else ""
    return (
        f"no rule reproduces the guide's {g_match}/{g_n}: {winner} is fastest in {n} of "
        f"{len(sub)} compared workloads, beating the deployed {deployed or 'config'}{margin}"
    )


def guide_fit(ledger_df: pd.DataFrame, fixed_only: bool = True) -> GuideFit:
    """Every :data:`SPECS` rule on the ledger, against every guide row (module doc)."""
    lg = ledger_df[ledger_df[cc.STATUS] != cc.NOT_MAPPABLE]
    if fixed_only and cc.SCENARIO in lg:
        lg = lg[lg[cc.SCENARIO].astype("string") == FIXED]
    compared = lg[lg[cc.STATUS].isin([cc.MATCH, cc.MISMATCH])]
    flags = {s.name: spec_flags(compared, s) for s in SPECS}
    hw = compared[c.HARDWARE].astype(str).str.upper()
    rows: list[dict[str, object]] = []
    errors: dict[str, list[float]] = {s.name: [] for s in SPECS}
    for g in guide_frame().to_dict("records"):
        sel = (
            (compared[c.MODEL] == g[c.MODEL])
            & (hw == g[c.HARDWARE])
            & (compared[cc.PHASE] == g[cc.PHASE])
        )
        n = int(sel.sum())
        row: dict[str, object] = {**g, "ours_n": n}
        reproduced = []
        for s in SPECS:
            m = int((sel & flags[s.name]).sum())
            row[s.name] = m
            if n:
                err = abs(100.0 * m / n - 100.0 * int(g[G_MATCH]) / int(g[G_N]))
                errors[s.name].append(err)
                if err <= REPRODUCE_POINTS:
                    reproduced.append(s.name)
        row["reproduced_by"] = "; ".join(reproduced) if reproduced else None
        row["explanation"] = (
            None
            if reproduced
            else "no workloads of ours to compare"
            if not n
            else _explain(compared[sel], int(g[G_MATCH]), int(g[G_N]))
        )
        rows.append(row)
    table = pd.DataFrame(
        rows, columns=[*ROW_COLUMNS[:6], *(s.name for s in SPECS), *ROW_COLUMNS[6:]]
    )
    fit = pd.DataFrame(
        [
            {
                "spec": s.name,
                "mean_error_points": float(np.mean(errors[s.name])) if errors[s.name] else np.nan,
                "n_rows": len(errors[s.name]),
                "n_reproduced": int(
                    table["reproduced_by"]
                    .fillna("")
                    .str.split("; ")
                    .apply(lambda xs, name=s.name: name in xs)
                    .sum()
                ),
            }
            for s in SPECS
        ],
        columns=list(FIT_COLUMNS),
    ).sort_values(["mean_error_points", "n_reproduced"], ascending=[True, False], kind="stable")
    fit = fit.reset_index(drop=True)
    default = str(fit["spec"].iloc[0]) if fit["n_rows"].iloc[0] else "exact"
    return GuideFit(table, fit, default, _headline(table, fit, default, fixed_only))


def _headline(table: pd.DataFrame, fit: pd.DataFrame, default: str, fixed_only: bool) -> str:
    """The gap first: ours vs the guide under exact and under the best-fitting rule, and
    the rows no rule reproduces with their winning backend."""
    have = table[table["ours_n"] > 0]
    if have.empty:
        return "No workload of the guide's table has bench_moe data here: nothing to compare."
    g_pct = 100.0 * have[G_MATCH].sum() / have[G_N].sum()
    n = int(have["ours_n"].sum())

    def ours(name: str) -> float:
        return 100.0 * float(have[name].sum()) / n

    err = fit.set_index("spec")["mean_error_points"]
    unexplained = have[have["reproduced_by"].isna()]
    parts = [
        f"Ours {ours('exact'):.1f} % Match (exact) vs the guide's {g_pct:.1f} % on the "
        f"{len(have)} guide rows we have data for ({n} workloads"
        + (", fixed ISL/OSL only" if fixed_only else ", agentic traces included")
        + ").",
        f"Best fit: {default} ({ours(default):.1f} %, mean error {err[default]:.1f} points "
        f"per row vs {err['exact']:.1f} for exact).",
    ]
    if not unexplained.empty:
        parts.append(
            "Not reproduced by any rule: "
            + "; ".join(
                f"{r[c.MODEL]} {r[c.HARDWARE]} {r[cc.PHASE]} ({r['explanation']})"
                for r in unexplained.to_dict("records")
            )
            + "."
        )
    return " ".join(parts)
