"""Routing skew: one workload under a balanced and a skewed routing pattern, side by side.

The guide ranks configurations under perfect (balanced) routing; a real router can be
skewed. :func:`compare_patterns` takes the rows of ONE workload (model, hardware, quant,
world size, num_tokens, phase, attention) measured under two dispatch labels and answers,
per configuration:

* its score under each pattern -- one value per configuration and pattern from
  ``analysis.identity.configuration_frame`` (median over repeat runs, or the latest run);
* its rank under each pattern (1 = lowest score_ms; equal scores ordered by the
  configuration columns, so the ranks never depend on row order) and the rank change
  ``skewed_rank - balanced_rank`` (positive: it falls behind under skew);
* ``slowdown_pct = (skewed_score / balanced_score - 1) * 100`` and its noise band
  ``100 * hypot(spread_balanced, spread_skewed)`` -- the spread of each side as
  ``configuration_frame`` gives it (run-to-run over repeats, else within-run), 3 % (the
  guide's "flat" band, ``analysis.best.DEFAULT_NOISE_PCT``) when either is unknown.

A configuration is paired across patterns on :data:`PAIR_COLUMNS` -- every configuration
column except ``low_precision_combine``: a skewed run made without
``--use_low_precision_moe_combine`` still measures the same configuration, and the
difference is what the low-precision note (``analysis.routing_advice``) is about.
Configurations measured under one pattern only keep their rank there and have no
slowdown (NaN). Missing values: a configuration column that is missing matches only
another missing value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.best import DEFAULT_NOISE_PCT
from analysis.derived import as_float, ensure_derived, sort_codes
from analysis.identity import (
    CONFIG_COLUMNS,
    N_REPEATS,
    REPEAT_RUN_IDS,
    SCORE_SPREAD,
    Repeats,
    configuration_frame,
    present,
)

BALANCED = "balanced"
PAIR_COLUMNS: tuple[str, ...] = tuple(c for c in CONFIG_COLUMNS if c != C.LOW_PRECISION_COMBINE)
SIDES = ("balanced", "skewed")
SLOWDOWN_PCT = "slowdown_pct"
NOISE_BAND_PCT = "noise_band_pct"
BEYOND_NOISE = "beyond_noise"
RANK_CHANGE = "rank_change"
CONFIGURATION = "configuration"  # readable label of the configuration
# per side: "<side>_<name>"
SIDE_VALUES: tuple[str, ...] = (
    "rank",
    C.SCORE_MS,
    N_REPEATS,
    REPEAT_RUN_IDS,
    C.LOW_PRECISION_COMBINE,
    C.TRTLLM_VERSION,
)

# Every column a comparison table can have, in its order (pair columns the input frame
# does not carry are left out of the table).
TABLE_COLUMNS: tuple[str, ...] = (
    CONFIGURATION,
    *PAIR_COLUMNS,
    *(f"{side}_{name}" for side in SIDES for name in SIDE_VALUES),
    RANK_CHANGE,
    SLOWDOWN_PCT,
    NOISE_BAND_PCT,
    BEYOND_NOISE,
)


@dataclass(frozen=True)
class SkewComparison:
    """``table``: one row per configuration (see :func:`compare_patterns`); ``summary``:
    the headline numbers; ``balanced`` / ``skewed``: the two dispatch labels."""

    balanced: str
    skewed: str
    table: pd.DataFrame
    summary: dict[str, Any]


def configuration_label(row: dict[str, Any] | pd.Series) -> str:
    """``BACKEND · COMM · MODE (EP e / TP t) · CUDA graph on|off``."""
    graph = row.get(C.CUDA_GRAPH)
    graph_text = "?" if graph is None or pd.isna(graph) else ("on" if bool(graph) else "off")
    return (
        f"{row.get(C.BACKEND)} · {row.get(C.COMM)} · {row.get(C.PARALLEL_MODE)} "
        f"(EP {row.get(C.MOE_EP_SIZE)} / TP {row.get(C.MOE_TP_SIZE)}) · CUDA graph {graph_text}"
    )


def _ranked(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """1-based rank by score_ms, equal scores ordered by the key columns."""
    tie = [sort_codes(frame[c]) for c in reversed(keys)]
    order = np.lexsort((*tie, as_float(frame[C.SCORE_MS])))
    rank = np.empty(len(frame), dtype=np.int64)
    rank[order] = np.arange(1, len(frame) + 1)
    return rank


def _text_keys(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The key columns as text ("<NA>", "nan" ... for missing), so that a missing value
    matches a missing value when merging."""
    return pd.DataFrame(
        {f"_k_{c}": frame[c].astype(object).astype(str).to_numpy() for c in keys},
        index=frame.index,
    )


def _side(agg: pd.DataFrame, label: str, side: str, keys: list[str]) -> pd.DataFrame:
    """One pattern's configurations, one row per pair key (when a configuration was
    measured with and without the low-precision flag: the flag-on row, as the guide
    measured), ranked, with the text keys ``_k_<col>`` for merging."""
    part = agg[agg[C.DISPATCH].astype(str) == label]
    text = _text_keys(part, keys)
    if len(part):
        flag = (
            part[C.LOW_PRECISION_COMBINE].astype("boolean").fillna(False).to_numpy(bool)
            if C.LOW_PRECISION_COMBINE in part
            else np.zeros(len(part), bool)
        )
        order = np.lexsort((as_float(part[C.SCORE_MS]), ~flag))
        first = ~text.iloc[order].duplicated().to_numpy()
        keep = np.sort(order[first])
        part, text = part.iloc[keep], text.iloc[keep]
    part, text = part.reset_index(drop=True), text.reset_index(drop=True)
    out = pd.concat([part[keys], text], axis=1)
    out[f"{side}_rank"] = _ranked(part, keys) if len(part) else np.zeros(0, np.int64)
    out[f"{side}_{C.SCORE_MS}"] = as_float(part[C.SCORE_MS])
    for name in SIDE_VALUES:
        if name not in ("rank", C.SCORE_MS):
            out[f"{side}_{name}"] = part[name].to_numpy() if name in part else None
    out[f"{side}_spread"] = as_float(part[SCORE_SPREAD]) if SCORE_SPREAD in part else np.nan
    return out


def compare_patterns(
    df: pd.DataFrame, balanced: str, skewed: str, repeats: Repeats = "median"
) -> SkewComparison:
    """Per configuration of ``df`` (one workload's rows, any dispatch labels; rows of
    other labels are ignored): scores, ranks, rank change, slowdown and noise band under
    ``balanced`` vs ``skewed``. Columns: :data:`CONFIGURATION`, the pair columns,
    ``<side>_rank``, ``<side>_score_ms``, ``<side>_n_repeats``,
    ``<side>_repeat_run_ids``, ``<side>_low_precision_combine``,
    ``<side>_trtllm_version`` for side in :data:`SIDES`, then ``rank_change``,
    ``slowdown_pct``, ``noise_band_pct``, ``beyond_noise``. Sorted by balanced rank
    (configurations measured only under skew last, by skewed rank). The input is not
    modified."""
    if balanced == skewed:
        raise ValueError("balanced and skewed must be different dispatch labels")
    rows = ensure_derived(df)
    rows = rows[rows[C.DISPATCH].astype(str).isin([balanced, skewed])]
    agg = configuration_frame(rows, repeats)
    keys = present(agg, PAIR_COLUMNS)
    on = [f"_k_{c}" for c in keys]
    left = _side(agg, balanced, "balanced", keys)
    right = _side(agg, skewed, "skewed", keys)
    union = pd.concat([left[keys + on], right[keys + on]], ignore_index=True)
    union = union.drop_duplicates(subset=on, keep="first")
    table = union.merge(left.drop(columns=keys), on=on, how="left").merge(
        right.drop(columns=keys), on=on, how="left"
    )
    table = table.drop(columns=on)
    b, s = as_float(table["balanced_score_ms"]), as_float(table["skewed_score_ms"])
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = (s / b - 1.0) * 100.0
    sb, ss = as_float(table["balanced_spread"]), as_float(table["skewed_spread"])
    known = np.isfinite(sb) & np.isfinite(ss)
    band = np.where(known, 100.0 * np.hypot(sb, ss), DEFAULT_NOISE_PCT)
    for side in SIDES:
        for name in ("rank", N_REPEATS):
            table[f"{side}_{name}"] = table[f"{side}_{name}"].astype("Int64")
    table[RANK_CHANGE] = table["skewed_rank"] - table["balanced_rank"]
    table[SLOWDOWN_PCT] = slowdown
    table[NOISE_BAND_PCT] = band
    table[BEYOND_NOISE] = np.isfinite(slowdown) & (slowdown > band)
    table = table.drop(columns=["balanced_spread", "skewed_spread"])
    table.insert(0, CONFIGURATION, [configuration_label(r) for r in table.to_dict("records")])
    table = table.sort_values(
        ["balanced_rank", "skewed_rank"], na_position="last", kind="mergesort"
    ).reset_index(drop=True)
    table = table[[c for c in TABLE_COLUMNS if c in table]]
    return SkewComparison(balanced, skewed, table, summarize(table))


def _best(table: pd.DataFrame, side: str) -> dict[str, Any] | None:
    ranked = table[table[f"{side}_rank"].fillna(0) == 1]
    if ranked.empty:
        return None
    row = ranked.iloc[0]
    return {
        CONFIGURATION: row[CONFIGURATION],
        C.BACKEND: row.get(C.BACKEND),
        C.COMM: row.get(C.COMM),
        C.PARALLEL_MODE: row.get(C.PARALLEL_MODE),
        C.MOE_EP_SIZE: None if pd.isna(row.get(C.MOE_EP_SIZE)) else int(row[C.MOE_EP_SIZE]),
        C.SCORE_MS: float(row[f"{side}_score_ms"]),
    }


def _versions(table: pd.DataFrame, side: str) -> list[str]:
    col = f"{side}_{C.TRTLLM_VERSION}"
    return sorted({str(v) for v in table[col].dropna()}) if col in table else []


def summarize(table: pd.DataFrame) -> dict[str, Any]:
    """Headline numbers of a comparison table: how many configurations were measured
    under each pattern and under both (``n_paired``); each pattern's best; whether the
    winner changes; the balanced winner's slowdown under skew; ``balanced_pick_regret_pct``
    = (skewed score of the balanced winner / skewed best - 1) * 100 (what deploying the
    balanced pick costs under this skew; NaN when it was not measured skewed); median and
    max slowdown and median noise band over the paired configurations; ``n_rank_changes``
    (paired configurations whose rank differs); ``trtllm_versions`` per side (a
    comparison across versions measures kernels as well as routing);
    ``imbalance_measured`` = the median slowdown exceeds the median noise band (False
    with no pair)."""
    paired = table[np.isfinite(as_float(table[SLOWDOWN_PCT]))]
    best_b, best_s = _best(table, "balanced"), _best(table, "skewed")
    slow = as_float(paired[SLOWDOWN_PCT])
    band = as_float(paired[NOISE_BAND_PCT])
    median_slow = float(np.median(slow)) if len(slow) else float("nan")
    median_band = float(np.median(band)) if len(band) else float("nan")
    top_b = table[table["balanced_rank"].fillna(0) == 1]
    winner_slow = float(as_float(top_b[SLOWDOWN_PCT])[0]) if len(top_b) else float("nan")
    regret = float("nan")
    if len(top_b) and best_s is not None:
        skew_of_pick = float(as_float(top_b["skewed_score_ms"])[0])
        regret = (skew_of_pick / best_s[C.SCORE_MS] - 1.0) * 100.0
    return {
        "n_balanced": int(table["balanced_rank"].notna().sum()),
        "n_skewed": int(table["skewed_rank"].notna().sum()),
        "n_paired": int(len(paired)),
        "balanced_best": best_b,
        "skewed_best": best_s,
        "winner_changes": bool(
            best_b is not None
            and best_s is not None
            and best_b[CONFIGURATION] != best_s[CONFIGURATION]
        ),
        "balanced_winner_slowdown_pct": winner_slow,
        "balanced_pick_regret_pct": regret,
        "median_slowdown_pct": median_slow,
        "max_slowdown_pct": float(slow.max()) if len(slow) else float("nan"),
        "median_noise_band_pct": median_band,
        "n_rank_changes": int((paired[RANK_CHANGE].fillna(0) != 0).sum()),
        "trtllm_versions": {side: _versions(table, side) for side in SIDES},
        "imbalance_measured": bool(len(slow) and median_slow > median_band),
    }
