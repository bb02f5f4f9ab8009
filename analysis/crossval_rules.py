"""Match rules, causes and a reason on every ledger row.

A rule decides Match / Mismatch on a ledger (``analysis.crossval.ledger``) that already
holds everything it needs, so applying one never re-ranks candidates:

* ``exact`` - the best candidate equals the deployed config in backend, EP size, TP size
  and comm (comm only when the recipe forces one). The ledger's own status.
* ``backend`` - the best candidate has the deployed backend (layout and comm ignored).
* ``within_noise`` - the deployed config was measured and its score is within
  ``noise_pct`` % of the best score (``deployed_gap_pct <= noise_pct``; an exact Match
  has gap 0). Default 3 %: the guide's own ±3 % band for a Flat end-to-end change.
* ``same_layout`` - only candidates of the deployed layout family compete (EP, TP or
  hybrid, ``analysis.crossval.layout_family``; the guide's tree always deploys EP): the
  best of them equals the deployed config (the exact fields).

"no data" and "not mappable" rows keep their status under every rule.

Cause of a row that is not an exact Match (first that applies, in this order):
``no data``; ``rule`` - a Match under ``same_layout`` (only another layout family wins,
a choice the guide's tree never makes); ``tie within noise`` - the deployed config is
within ``noise_pct`` % of the best; ``different winner`` - another config of the
deployed family wins by more than the band, or the deployed config was not measured.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from analysis import columns as c
from analysis import crossval_columns as cc

RULES: tuple[str, ...] = ("exact", "backend", "within_noise", "same_layout")
DEFAULT_RULE = "exact"
DEFAULT_NOISE_PCT = 3.0
RULE_DEFINITIONS: dict[str, str] = {
    "exact": "Match when the fastest bench_moe candidate has the deployed backend, EP "
    "size and TP size (and comm, where the recipe forces one).",
    "backend": "Match when the fastest bench_moe candidate has the deployed backend; "
    "layout and comm are ignored.",
    "within_noise": "Match when the deployed configuration was measured and its own score "
    "is within N % of the fastest (N = noise band, default 3 %, the guide's Flat band).",
    "same_layout": "Only candidates of the deployed layout family (EP, TP or hybrid TPxEP) "
    "compete; Match when the fastest of them is the deployed configuration. The "
    "guide's tree always deploys EP.",
}
CAUSES: tuple[str, ...] = ("no data", "rule", "tie within noise", "different winner")


def _flags(lg: pd.DataFrame, noise_pct: float) -> dict[str, pd.Series]:
    """Per rule, a boolean Series: the row is a Match under that rule."""
    compared = lg[cc.STATUS].isin([cc.MATCH, cc.MISMATCH])
    exact = lg[cc.STATUS] == cc.MATCH
    backend = compared & (
        lg[cc.BEST_BACKEND].astype("string").str.upper()
        == lg[c.BACKEND].astype("string").str.upper()
    ).fillna(False)
    gap = pd.to_numeric(lg[cc.DEPLOYED_GAP_PCT], errors="coerce")
    noise = compared & (gap <= noise_pct + 1e-9).fillna(False)
    layout = compared & lg[cc.LAYOUT_BEST_BACKEND].notna() & lg[cc.LAYOUT_DIFFERS].isna()
    return {
        "exact": exact.astype(bool),
        "backend": backend.astype(bool),
        "within_noise": (noise | exact).astype(bool),
        "same_layout": (layout | exact).astype(bool),
    }


def match_flags(lg: pd.DataFrame, noise_pct: float = DEFAULT_NOISE_PCT) -> pd.DataFrame:
    """One boolean column per rule (``RULES``), True where the row is a Match."""
    return pd.DataFrame(_flags(lg, noise_pct), index=lg.index)


def causes(lg: pd.DataFrame, noise_pct: float = DEFAULT_NOISE_PCT) -> pd.Series:
    """The cause (``CAUSES``, see the module doc) of each row that is not an exact Match;
    None on exact Matches and on not-mappable rows."""
    flags = _flags(lg, noise_pct)
    gap = pd.to_numeric(lg[cc.DEPLOYED_GAP_PCT], errors="coerce")
    out = pd.Series([None] * len(lg), index=lg.index, dtype=object)
    mism = lg[cc.STATUS] == cc.MISMATCH
    out[lg[cc.STATUS] == cc.NO_DATA] = "no data"
    out[mism] = "different winner"
    out[mism & (gap <= noise_pct + 1e-9).fillna(False)] = "tie within noise"
    out[mism & flags["same_layout"]] = "rule"
    return out


def check_rule(rule: str) -> str:
    """``rule`` if it is one of ``RULES``, else ``ValueError`` naming the allowed ones."""
    if rule not in RULES:
        raise ValueError(f"rule: must be one of {', '.join(RULES)}, got {rule!r}")
    return rule


def apply_rule(
    lg: pd.DataFrame,
    rule: str = DEFAULT_RULE,
    noise_pct: float = DEFAULT_NOISE_PCT,
    command: Callable[[Mapping[str, Any]], str] | None = None,
) -> pd.DataFrame:
    """A copy of the ledger with status decided by ``rule`` and ``RULED_COLUMNS`` added:
    the rule, the cause (:func:`causes`), and for "no data" rows ``command(row)`` (the
    bench_moe command that would fill it; None without ``command``). ``reason`` is
    rewritten on every compared row by :func:`reason`."""
    check_rule(rule)
    out = lg.copy()
    flags = _flags(lg, noise_pct)
    compared = lg[cc.STATUS].isin([cc.MATCH, cc.MISMATCH])
    out.loc[compared, cc.STATUS] = flags[rule][compared].map({True: cc.MATCH, False: cc.MISMATCH})
    out[cc.RULE] = rule
    out[cc.CAUSE] = causes(lg, noise_pct)
    cmds: list[str | None] = [None] * len(out)
    reasons = out[cc.REASON].astype(object).tolist()
    # Not-mappable rows keep the mapping's reason: only the others are visited.
    todo = [i for i, s in enumerate(out[cc.STATUS].tolist()) if s != cc.NOT_MAPPABLE]
    for i, rec in zip(todo, out.iloc[todo].to_dict("records"), strict=True):
        if rec[cc.STATUS] == cc.NO_DATA and command is not None:
            cmds[i] = command(rec)
        reasons[i] = reason(rec, rule, noise_pct, reasons[i], cmds[i])
    out[cc.SWEEP_COMMAND] = cmds
    out[cc.REASON] = reasons
    return out


def _pct(v: float) -> str:
    return f"{v:.1f} %"


def reason(
    row: Mapping[str, Any],
    rule: str,
    noise_pct: float,
    base: Any = None,
    command: str | None = None,
) -> str:
    """One line saying why the row has its status (``row`` is a ruled ledger record).

    Match: the deployed config's rank and gap. Mismatch: the fields that differ
    (deployed -> best of the rule's field) and by how much the best beats the deployed
    config, or "deployed config not measured". no data: the key that failed and the
    command to run. not mappable: the mapping's reason (``base``).
    """
    status = row[cc.STATUS]
    if status == cc.NOT_MAPPABLE:
        return str(base or "not mappable")
    if status == cc.NO_DATA:
        return f"{base}; run: {command}" if command else str(base or "no data")
    gap = _num(row.get(cc.DEPLOYED_GAP_PCT))
    rank = row.get(cc.DEPLOYED_RANK)
    n = row.get(cc.N_CANDIDATES)
    measured = (
        f"deployed config rank {rank} of {n}, {_pct(gap)} slower than the best"
        if gap is not None and gap > 0
        else f"deployed config is the fastest of {n}"
        if gap is not None
        else "deployed config not measured"
    )
    if status == cc.MATCH:
        why = {
            "exact": "best candidate = deployed config",
            "backend": f"best candidate has the deployed backend {row.get(c.BACKEND)}",
            "within_noise": f"within the ±{noise_pct:g} % noise band",
            "same_layout": "best of the deployed layout family = deployed config",
        }[rule]
        return f"Match ({rule}): {why}; {measured}"
    if rule == "same_layout" and row.get(cc.LAYOUT_BEST_BACKEND) is None:
        return "Mismatch (same_layout): no candidate of the deployed layout family measured"
    field = cc.LAYOUT_DIFFERS if rule == "same_layout" else cc.DIFFERS
    differs = row.get(field) or row.get(cc.DIFFERS) or "same fields"
    if rule == "within_noise" and gap is not None:
        return f"Mismatch (within_noise): {measured} (> {noise_pct:g} %); differs: {differs}"
    return f"Mismatch ({rule}): differs {differs}; {measured}"


def _num(v: Any) -> float | None:
    if v is None:
        return None
    try:
        return None if pd.isna(v) else float(v)
    except (TypeError, ValueError):
        return None
