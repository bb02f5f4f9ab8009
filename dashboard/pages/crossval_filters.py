"""The /crossval filters and their URL: ``?model=&hardware=&phase=prefill|decode&status=
Match|Mismatch|no data|not mappable&tol=<token tolerance>&band=<±band %>&rule=exact|
backend|within_noise|same_layout&noise=<noise band %>&show=all&rows=all`` (``show=all``:
also the rows without mapped workloads; ``rows=all``: every ledger row in the grid, not
only the first page).

Ranges are the API's (``service.crossval.TOL_RANGE``/``BAND_RANGE``): a value outside
them, or not a number, falls back to its default with a note; an unknown phase or status
means all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from analysis.crossval import DEFAULT_BAND_PCT, DEFAULT_TOKEN_TOLERANCE
from analysis.crossval_rules import DEFAULT_NOISE_PCT, DEFAULT_RULE, RULES
from dashboard import components as ui
from service.crossval import BAND_RANGE, NOISE_RANGE, PHASES, STATUSES, TOL_RANGE

ALL = "all"
SHOW_ALL = "all"  # the "show rows without mapped workloads" toggle's value
AGENTIC = "agentic"  # the "include agentic-coding traces" toggle's value (guide fit)
ALL_ROWS = "all"  # the "every ledger row in the grid" toggle's value


@dataclass(frozen=True)
class Filters:
    """The page's filters (None: all); ``query``/``search`` write them into the URL."""

    model: str | None = None
    hardware: str | None = None
    phase: str | None = None
    status: str | None = None
    tol: float = DEFAULT_TOKEN_TOLERANCE
    band: float = DEFAULT_BAND_PCT
    rule: str = DEFAULT_RULE
    noise: float = DEFAULT_NOISE_PCT
    show_empty: bool = False
    all_rows: bool = False
    agentic: bool = False  # the guide fit counts agentic traces (the guide: fixed ISL/OSL)

    def query(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "hardware": self.hardware,
            "phase": self.phase,
            "status": self.status,
            "tol": _txt(self.tol),
            "band": _txt(self.band),
            # defaults left out: permalinks made before the rules existed stay the same
            "rule": None if self.rule == DEFAULT_RULE else self.rule,
            "noise": None if self.noise == DEFAULT_NOISE_PCT else _txt(self.noise),
            "show": SHOW_ALL if self.show_empty else None,
            "rows": ALL_ROWS if self.all_rows else None,
            "traces": AGENTIC if self.agentic else None,
        }

    def search(self) -> str:
        return ui.search_string(self.query())


def _txt(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _number(value: Any, lo: float, hi: float) -> float | None:
    """``value`` as a finite float within [lo, hi], else None."""
    if value is None or isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
        return None
    try:
        out = float(str(value).strip())
    except ValueError:
        return None
    return out if math.isfinite(out) and lo <= out <= hi else None


def make_filters(
    model: Any = None,
    hardware: Any = None,
    phase: Any = None,
    status: Any = None,
    tol: Any = None,
    band: Any = None,
    rule: Any = None,
    noise: Any = None,
    show: Any = None,
    rows: Any = None,
    traces: Any = None,
) -> tuple[Filters, list[str]]:
    """Filters from raw control or query values, and notes on values that were replaced
    by their default (out of range or not a number). Unknown phase/status -> all."""
    notes: list[str] = []
    tol_v = _number(tol, *TOL_RANGE)
    if tol_v is None:
        if tol not in (None, ""):
            notes.append(
                f"token tolerance must be a number from {TOL_RANGE[0]:g} to "
                f"{TOL_RANGE[1]:g}; using x{DEFAULT_TOKEN_TOLERANCE:g}"
            )
        tol_v = DEFAULT_TOKEN_TOLERANCE
    band_v = _number(band, *BAND_RANGE)
    if band_v is None:
        if band not in (None, ""):
            notes.append(
                f"band must be a number from {BAND_RANGE[0]:g} to {BAND_RANGE[1]:g} %;"
                f" using ±{DEFAULT_BAND_PCT:g} %"
            )
        band_v = DEFAULT_BAND_PCT
    noise_v = _number(noise, *NOISE_RANGE)
    if noise_v is None:
        if noise not in (None, ""):
            notes.append(
                f"noise band must be a number from {NOISE_RANGE[0]:g} to {NOISE_RANGE[1]:g} %;"
                f" using {DEFAULT_NOISE_PCT:g} %"
            )
        noise_v = DEFAULT_NOISE_PCT
    rule_v = ui.choice(rule, RULES)
    if rule_v is None and ui.choice(rule) is not None:
        notes.append(f"match rule must be one of {', '.join(RULES)}; using {DEFAULT_RULE}")
    shown = show if isinstance(show, list) else [show]
    all_rows = rows if isinstance(rows, list) else [rows]
    hw = ui.choice(hardware)
    return Filters(
        model=ui.choice(model),
        hardware=hw.upper() if hw else None,
        phase=ui.choice(phase, PHASES),
        status=ui.choice(status, STATUSES),
        tol=tol_v,
        band=band_v,
        rule=rule_v or DEFAULT_RULE,
        noise=noise_v,
        show_empty=SHOW_ALL in shown,
        all_rows=ALL_ROWS in all_rows,
        agentic=AGENTIC in shown or ui.choice(traces) == AGENTIC,
    ), notes


def parse_query(query: dict[str, Any]) -> tuple[Filters, list[str]]:
    """:func:`make_filters` of a parsed query string (first value of each key)."""
    keys = (
        "model", "hardware", "phase", "status", "tol", "band", "rule", "noise", "show", "rows",
        "traces",
    )  # fmt: skip
    q = {k: ui.first(query, k) for k in keys}
    return make_filters(**q)
