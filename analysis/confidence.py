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
