"""The routing-skew view: one workload under a balanced and a skewed routing pattern.

:func:`routing_skew` is what ``GET /api/v1/routing-skew`` and the ``/routing`` page both
show. It reads the workload's rows from the cached cell frame (the frame every page
reads), checks each parameter against what is stored -- an unknown value is an
:class:`~service.errors.InvalidQuery` naming the parameter and listing the stored values
-- and hands the rows to ``analysis.routing_skew.compare_patterns`` and
``analysis.routing_advice.skew_advice``. A workload with one routing pattern stored is
not an error: the answer has no comparison and says which pattern is there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from analysis import columns as C
from analysis.derived import as_float, rankable_mask
from analysis.identity import Repeats, default_dispatch
from analysis.routing_advice import Advice, WorkloadFacts, skew_advice
from analysis.routing_skew import TABLE_COLUMNS, SkewComparison, compare_patterns
from analysis.tables import plain_value, to_csv_text, to_json_records
from service.errors import InvalidQuery
from service.filenames import file_part
from service.frames import Cell, DashData
from service.scope import provenance

Phase = Literal["decode", "prefill"]
Attention = Literal["dp", "tp"]


class SkewQuery(BaseModel):
    """One workload and the two routing patterns to compare. ``balanced`` unset: the
    label "balanced" where stored, else the pattern with the most rows; ``skewed``
    unset: the first other pattern stored for the workload (alphabetically)."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(..., max_length=100, description="bench_moe model name")
    hardware: str = Field(..., max_length=32)
    quant: str = Field(..., max_length=64)
    world_size: int = Field(..., ge=1, le=100000)
    num_tokens: int = Field(..., ge=1, le=10**9)
    phase: Phase = Field("decode", description="decode = CUDA graph on, prefill = off")
    attention: Attention = Field("dp", description="dp = attention data parallel")
    balanced: str | None = Field(None, max_length=64, description="baseline dispatch label")
    skewed: str | None = Field(None, max_length=64, description="skewed dispatch label")
    repeats: Repeats = Field("median", description="repeat runs: median or latest run")

    @property
    def cell(self) -> Cell:
        return Cell(self.model, self.hardware.upper(), self.quant)


@dataclass(frozen=True)
class RoutingSkew:
    """The answer: the workload, the patterns stored for it, the two compared (None
    when fewer than two are stored), the comparison, the advice and the provenance."""

    query: SkewQuery
    patterns: list[str]
    balanced: str | None
    skewed: str | None
    comparison: SkewComparison | None
    advice: tuple[Advice, ...]
    facts: WorkloadFacts
    provenance: dict[str, Any]
    synthetic: bool

    @property
    def filename(self) -> str:
        """``routing_skew_<model>_<gpu>_<quant>_ws<N>_<tokens>tok_<phase>_<attn>_<a>_vs_<b>.csv``."""
        q = self.query
        parts = (
            "routing_skew",
            q.model,
            q.cell.hardware,
            q.quant,
            f"ws{q.world_size}",
            f"{q.num_tokens}tok",
            q.phase,
            q.attention,
            self.balanced or "none",
            "vs",
            self.skewed or "none",
        )
        return "_".join(file_part(p) for p in parts) + ".csv"

    def csv(self) -> str:
        """The comparison table as CSV (header only when there is no comparison)."""
        if self.comparison is None:
            return ",".join(TABLE_COLUMNS) + "\n"
        return to_csv_text(self.comparison.table)

    @property
    def message(self) -> str | None:
        if self.comparison is not None:
            return None
        stored = ", ".join(self.patterns) or "none"
        return (
            f"only one routing pattern is stored for this workload ({stored}); store a run "
            "of the same workload under another pattern (bench_moe --comm_pattern / "
            "--expert_pattern / --routing_pattern_file, or upload with --dispatch) to compare"
        )


def _allowed(values: Any) -> str:
    items = [str(v) for v in values]
    return ", ".join(items) if items else "none"


def _check(field: str, value: Any, allowed: list[Any], what: str) -> None:
    if value not in allowed:
        raise InvalidQuery(
            field, f"{what} {value!r} is not stored; stored: {_allowed(allowed)}", "unknown_value"
        )


def _workload_rows(data: DashData, q: SkewQuery) -> pd.DataFrame:
    """The rankable rows of the query's workload; InvalidQuery naming the first
    parameter (in query order) whose value is not stored."""
    cells = data.cells()
    _check("model", q.model, sorted({c.model for c in cells}), "model")
    _check(
        "hardware",
        q.hardware.upper(),
        sorted({c.hardware for c in cells if c.model == q.model}),
        "hardware",
    )
    _check(
        "quant",
        q.quant,
        sorted({c.quant for c in cells if (c.model, c.hardware) == (q.model, q.cell.hardware)}),
        "quant",
    )
    frame = data.cell_frame(q.cell)
    rows = frame.loc[rankable_mask(frame)]
    steps: list[tuple[str, str, Any, Any]] = [
        ("world_size", C.WORLD_SIZE, q.world_size, int),
        ("phase", C.PHASE, q.phase, str),
        ("attention", C.ATTN, "D" if q.attention == "dp" else "T", str),
        ("num_tokens", C.NUM_TOKENS, q.num_tokens, int),
    ]
    shown = {"D": "dp", "T": "tp"}
    for field, col, value, kind in steps:
        stored = sorted({kind(v) for v in rows[col].dropna().unique()})
        if field == "attention":
            stored = [shown.get(v, v) for v in stored if v in shown]
            _check(field, q.attention, stored, "attention")
        else:
            _check(field, value, stored, field.replace("_", " "))
        if kind is int:
            mask = as_float(rows[col]) == value
        else:
            mask = (rows[col].astype(str) == value).to_numpy(dtype=bool)
        rows = rows.loc[mask]
    return rows


def _pick(field: str, value: str | None, patterns: list[str], default: str | None) -> str | None:
    if value is None:
        return default
    if value not in patterns:
        raise InvalidQuery(
            field,
            f"unknown dispatch label {value!r} for this workload; known: {_allowed(patterns)}",
            "unknown_dispatch",
        )
    return value


def _facts(rows: pd.DataFrame, q: SkewQuery) -> WorkloadFacts:
    def first(col: str) -> float | None:
        vals = as_float(rows[col]) if col in rows else np.zeros(0)
        vals = vals[np.isfinite(vals)]
        return float(vals[0]) if len(vals) else None

    return WorkloadFacts(
        phase=q.phase,
        world_size=q.world_size,
        local_batch=first(C.LOCAL_BATCH),
        activated_tokens_per_rank=first(C.ACTIVATED_TOKENS_PER_RANK),
    )


def routing_skew(data: DashData, q: SkewQuery) -> RoutingSkew:
    """The workload of ``q`` under ``q.balanced`` vs ``q.skewed`` (see the module
    docstring). Raises InvalidQuery for a value that is not stored (model, hardware,
    quant, world_size, phase, attention, num_tokens, then balanced / skewed: an unknown
    dispatch label lists the labels stored for the workload)."""
    rows = _workload_rows(data, q)
    patterns = sorted({str(v) for v in rows[C.DISPATCH].dropna().unique()})
    balanced = _pick("balanced", q.balanced, patterns, default_dispatch(rows[C.DISPATCH]))
    others = [p for p in patterns if p != balanced]
    skewed = _pick("skewed", q.skewed, patterns, others[0] if others else None)
    if skewed is not None and skewed == balanced:
        raise InvalidQuery(
            "skewed",
            f"skewed must differ from balanced ({balanced!r}); other patterns stored: "
            f"{_allowed(others)}",
            "same_dispatch",
        )
    facts = _facts(rows, q)
    used = rows[rows[C.DISPATCH].astype(str).isin([p for p in (balanced, skewed) if p])]
    comparison = None
    advice: tuple[Advice, ...] = ()
    if balanced is not None and skewed is not None:
        comparison = compare_patterns(rows, balanced, skewed, q.repeats)
        advice = skew_advice(comparison, facts)
    return RoutingSkew(
        query=q,
        patterns=patterns,
        balanced=balanced,
        skewed=skewed,
        comparison=comparison,
        advice=advice,
        facts=facts,
        provenance=provenance(used.reset_index(drop=True)),
        synthetic=data.is_synthetic(q.cell),
    )


def skew_workloads(data: DashData, cell: Cell) -> pd.DataFrame:
    """The workloads of ``cell`` with their stored routing patterns: world_size, phase,
    attention ("dp"/"tp"), num_tokens, ``patterns`` (sorted labels joined by ", ") and
    ``n_patterns``; those with two or more patterns first, then by the workload."""
    frame = data.cell_frame(cell)
    rows = frame.loc[rankable_mask(frame)]
    cols = [C.WORLD_SIZE, C.PHASE, C.ATTN, C.NUM_TOKENS]
    if rows.empty:
        return pd.DataFrame(columns=[*cols, "patterns", "n_patterns"])
    grouped = rows.dropna(subset=[C.DISPATCH]).groupby(cols, observed=True, sort=True)[C.DISPATCH]
    out = grouped.agg(lambda s: ", ".join(sorted({str(v) for v in s}))).rename("patterns")
    out = out.reset_index()
    out = out[out[C.ATTN].astype(str).isin(["D", "T"])]
    out["attention"] = out[C.ATTN].astype(str).map({"D": "dp", "T": "tp"})
    out["n_patterns"] = out["patterns"].str.count(",") + 1
    out = out.sort_values(
        ["n_patterns", C.WORLD_SIZE, C.PHASE, "attention", C.NUM_TOKENS],
        ascending=[False, True, True, True, True],
        kind="mergesort",
    )
    return out.drop(columns=[C.ATTN]).reset_index(drop=True)


def _advice_json(a: Advice) -> dict[str, Any]:
    return {
        "technique": a.technique,
        "verdict": a.verdict,
        "summary": a.summary,
        "checks": [
            {"condition": c.condition, "observed": c.observed, "met": c.met} for c in a.checks
        ],
        "details": list(a.details),
    }


def skew_json(ans: RoutingSkew) -> dict[str, Any]:
    """The answer as JSON-ready values (``items``: the comparison table's rows, NaN as
    None); what the API returns and the page's tables hold."""
    cmp = ans.comparison
    facts = ans.facts
    return {
        "workload": ans.query.model_dump(exclude={"balanced", "skewed", "repeats"})
        | {"hardware": ans.query.cell.hardware},
        "repeats": ans.query.repeats,
        "patterns": ans.patterns,
        "balanced": ans.balanced,
        "skewed": ans.skewed,
        "message": ans.message,
        "facts": {
            C.LOCAL_BATCH: facts.local_batch,
            C.ACTIVATED_TOKENS_PER_RANK: facts.activated_tokens_per_rank,
        },
        "summary": None if cmp is None else {k: plain_value(v) for k, v in cmp.summary.items()},
        "items": [] if cmp is None else to_json_records(cmp.table),
        "advice": [_advice_json(a) for a in ans.advice],
        "provenance": ans.provenance,
    }
