"""One plain verdict on an answer's confidence, the same words wherever it is shown.

Recommend, Best and the export all end on a pick; how far to trust it is one of three
words:

* ``deploy``: the pick is measured (or predicted with P(fastest) >= :data:`SURE`) and
  its margin over the runner-up is beyond the noise band a re-run could open
  (``analysis.noise``): a re-run would not change the answer.
* ``tie: either``: measured, the margin is inside the band; predicted, the pick is
  the likeliest fastest (P >= :data:`LIKELY`) but not sure enough: the first two are
  interchangeable on this evidence; take either.
* ``measure first``: the answer rests on too little -- predicted with P(fastest) below
  :data:`LIKELY`, or extrapolated beyond the measured token counts.

:func:`verdict` is scalar; :func:`verdicts` applies it to a frame's columns.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

DEPLOY, TIE, MEASURE_FIRST = "deploy", "tie: either", "measure first"
VERDICTS: tuple[str, ...] = (DEPLOY, TIE, MEASURE_FIRST)
SURE = 0.8  # a predicted pick this likely the fastest is as good as measured
LIKELY = 0.5  # below this, a predicted pick that is not a tie is a guess


def verdict(
    measured: bool,
    margin_pct: float | None,
    band_pct: float | None,
    p_fastest: float | None = None,
    extrapolated: bool = False,
) -> str:
    """The confidence word of one answer (module docstring). ``margin_pct``: how much
    slower the runner-up is (None without one); ``band_pct``: the noise band of that
    margin (None when unknown: then the margin alone decides, any positive margin
    counts); ``p_fastest``: the pick's probability of being fastest (predicted
    answers); ``extrapolated``: predicted beyond the measured token counts."""
    if not measured and (extrapolated or p_fastest is None or math.isnan(p_fastest)):
        return MEASURE_FIRST
    has_margin = margin_pct is not None and not math.isnan(margin_pct)
    known_band = band_pct is not None and not math.isnan(band_pct)
    inside = has_margin and known_band and margin_pct <= band_pct  # type: ignore[operator]
    if measured:
        return TIE if inside else DEPLOY
    p = float(p_fastest)  # type: ignore[arg-type]
    if p >= SURE and not inside:
        return DEPLOY
    return MEASURE_FIRST if p < LIKELY else TIE


def verdicts(
    frame: pd.DataFrame,
    measured: str,
    margin: str,
    band: str,
    p_fastest: str | None = None,
    extrapolated: str | None = None,
) -> pd.Series:
    """:func:`verdict` of every row of ``frame`` from the named columns (a missing
    ``p_fastest`` / ``extrapolated`` column: None / False)."""

    def value(row: pd.Series, col: str | None, default: object) -> object:
        if col is None or col not in row or (row[col] is None) or pd.isna(row[col]):
            return default
        return row[col]

    out = [
        verdict(
            bool(value(row, measured, False)),
            value(row, margin, None),  # type: ignore[arg-type]
            value(row, band, None),  # type: ignore[arg-type]
            value(row, p_fastest, None),  # type: ignore[arg-type]
            bool(value(row, extrapolated, False)),
        )
        for _, row in frame.iterrows()
    ]
    return pd.Series(np.array(out, dtype=object), index=frame.index, name="verdict")


# Columns :func:`with_evidence` adds to a Best table (one per workload).
MEASURED = "measured"
CONFIDENCE = "confidence"
EVIDENCE_RUNS = "evidence_runs"
EVIDENCE_VERSIONS = "evidence_versions"
EVIDENCE_DATE = "evidence_date"
TOP3_ONLY = "top3_only"
CONFIDENCE_NOTE = "confidence_note"
EVIDENCE_COLUMNS: tuple[str, ...] = (
    MEASURED,
    CONFIDENCE,
    EVIDENCE_RUNS,
    EVIDENCE_VERSIONS,
    EVIDENCE_DATE,
    TOP3_ONLY,
    CONFIDENCE_NOTE,
)
TOP3_SOURCES = frozenset({"nvidia_dashboard"})  # sources that keep the top 3 per workload


def _run_ids(value: object, fallback: object) -> list[int]:
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    ids = [int(x) for x in text.replace(" ", "").split(",") if x.strip().lstrip("-").isdigit()]
    numeric = isinstance(fallback, int | float | np.integer | np.floating)
    if not ids and numeric and not math.isnan(float(fallback)):  # type: ignore[arg-type]
        ids = [int(fallback)]  # type: ignore[call-overload]
    return ids


def note(row: pd.Series | dict[str, object]) -> str:
    """The confidence panel in one line, the same words on the page, in the API and in
    the export's comments: verdict, margin against the band and its source, the runs,
    versions and date of the evidence, and "top 3 per workload only" when the source
    keeps no more."""
    get = row.get
    margin, band = get("margin_pct"), get("noise_band_pct")
    parts = [str(get(CONFIDENCE))]
    if margin is None or pd.isna(margin):
        parts.append("no runner-up measured")
    else:
        rel = "inside" if band is not None and float(margin) <= float(band) else "beyond"  # type: ignore[arg-type]
        parts.append(
            f"margin {float(margin):.1f} % {rel} the noise band {float(band):.1f} % "  # type: ignore[arg-type]
            f"({get('noise_source')})"
        )
    runs = get(EVIDENCE_RUNS)
    parts.append(f"{runs} run{'s' if runs != 1 else ''}")
    versions, date = get(EVIDENCE_VERSIONS), get(EVIDENCE_DATE)
    if versions:
        parts.append(f"TensorRT-LLM {versions}" + (f" ({date})" if date else ""))
    if get(TOP3_ONLY):
        parts.append("top 3 per workload only")
    parts.append("measured" if get(MEASURED) else "predicted")
    return "; ".join(parts)


def with_evidence(table: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """``table`` (an ``analysis.best.best_by_workload`` result over ``frame``'s rows)
    plus :data:`EVIDENCE_COLUMNS`: measured (always: every Best row is), the plain
    :func:`verdict` of its margin against its noise band, the winner's runs (how many),
    their TensorRT-LLM versions and newest run date, whether those runs come from a
    source that keeps only the top 3 per workload (a missing runner-up then means "not
    listed", not "not measured"), and the one-line :func:`note`."""
    out = table.copy()
    if out.empty:
        for col in EVIDENCE_COLUMNS:
            out[col] = pd.Series(dtype=object)
        return out
    facts = frame[
        [c for c in ("run_id", "trtllm_version", "run_date", "source_format") if c in frame]
    ]
    facts = facts.drop_duplicates("run_id").set_index("run_id")
    runs_col = out.get("best_repeat_run_ids", pd.Series([None] * len(out), index=out.index))
    ids = [_run_ids(v, f) for v, f in zip(runs_col, out["best_run_id"], strict=True)]

    def fact(col: str, run_ids: list[int]) -> list[str]:
        if col not in facts:
            return []
        vals = facts[col].reindex(run_ids).dropna().astype(str)
        return sorted(set(vals))

    out[MEASURED] = True
    out[CONFIDENCE] = verdicts(out, MEASURED, "margin_pct", "noise_band_pct").to_numpy()
    out[EVIDENCE_RUNS] = [len(r) for r in ids]
    out[EVIDENCE_VERSIONS] = [", ".join(fact("trtllm_version", r)) or None for r in ids]
    out[EVIDENCE_DATE] = [(fact("run_date", r) or [""])[-1] or None for r in ids]
    out[TOP3_ONLY] = [bool(set(fact("source_format", r)) & TOP3_SOURCES) for r in ids]
    out[CONFIDENCE_NOTE] = [note(row) for _, row in out.iterrows()]
    return out
