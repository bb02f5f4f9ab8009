"""A configuration frame encoded once for many explorer questions.

:class:`ConfigIndex` holds a configuration frame
(``analysis.identity.configuration_frame``: one row per workload x configuration,
repeat runs pooled to their median) as numpy arrays: score (ms), relative spread, its
source, repeats, a dense series id over the series columns (one row of
``series_frame`` per id), and -- built on first use and kept -- per option dimension the
option ids with their labels and alphabetical rank, and per axis the sorted distinct
axis values with each configuration's position among them. A question then costs a mask
and a few array passes (``analysis.crossovers.rank_one_on_index``) instead of
re-grouping text columns. Read-only after construction (the lazy parts are
deterministic, so two threads building one at the same time store equal values).
The small encoders an answer uses live here too: readable series labels, text columns
as categoricals from codes, dense ids of int keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis import noise as N
from analysis.derived import as_float, group_codes
from analysis.identity import N_REPEATS, SCORE_SPREAD, SPREAD_SOURCE

OPTION_SEP = " + "


def text_values(series: pd.Series) -> np.ndarray:
    """Values as Python strings (missing as "—"), an object array."""
    out: np.ndarray = (
        series.astype(object).where(series.notna(), "—").astype(str).to_numpy(dtype=object)
    )
    return out


@dataclass(frozen=True)
class OptionCodes:
    """Per configuration an option id (-1: an option column is missing), and per id its
    label (values joined by " + ") and alphabetical rank (0 = first)."""

    ids: np.ndarray
    labels: np.ndarray
    rank: np.ndarray


@dataclass(frozen=True)
class AxisCodes:
    """Per configuration the position of its axis value among ``values`` (the sorted
    distinct finite values > 0; -1 for the others)."""

    ids: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class ConfigIndex:
    """See the module docstring. ``configs`` is the table itself (row i = configuration
    i of every array)."""

    configs: pd.DataFrame
    series_cols: tuple[str, ...]
    series_id: np.ndarray
    series_frame: pd.DataFrame
    score: np.ndarray
    spread: np.ndarray
    repeats: np.ndarray
    source: np.ndarray
    source_codes: np.ndarray
    source_names: np.ndarray
    # the noise model's run-to-run spread (log units, NaN where it has no evidence or
    # prior) and its source ("repeats", "history", "prior" ...; None where NaN)
    run_spread: np.ndarray | None = None
    run_source: np.ndarray | None = None
    _options: dict[tuple[str, ...], OptionCodes] = field(default_factory=dict, repr=False)
    _axes: dict[str, AxisCodes] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.configs)

    def options(self, cols: Sequence[str]) -> OptionCodes:
        """Option ids over ``cols`` (built once per tuple of columns)."""
        key = tuple(cols)
        if key not in self._options:
            self._options[key] = _option_codes(self.configs, key)
        return self._options[key]

    def axis(self, col: str) -> AxisCodes:
        """Axis positions of ``col`` (built once per column)."""
        if col not in self._axes:
            x = as_float(self.configs[col])
            ok = np.isfinite(x) & (x > 0)
            codes, values = pd.factorize(x[ok], sort=True)
            ids = np.full(len(x), -1, dtype=np.int64)
            ids[ok] = codes
            self._axes[col] = AxisCodes(ids, np.asarray(values, dtype=float))
        return self._axes[col]


def _option_codes(configs: pd.DataFrame, cols: tuple[str, ...]) -> OptionCodes:
    n = len(configs)
    known = np.ones(n, dtype=bool)
    for col in cols:
        known &= configs[col].notna().to_numpy()
    ids = np.full(n, -1, dtype=np.int64)
    pos = np.flatnonzero(known)
    if len(pos) == 0:
        return OptionCodes(ids, np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64))
    sub = configs[list(cols)].iloc[pos]
    ids[pos] = group_codes(sub, list(cols))
    n_o = int(ids.max()) + 1
    rep = np.zeros(n_o, dtype=np.int64)
    rep[ids[pos]] = pos  # every row of an option carries the same values
    frame = configs[list(cols)].iloc[rep]
    labels = text_values(frame[cols[0]])
    for col in cols[1:]:
        labels = labels + OPTION_SEP + text_values(frame[col])
    rank = np.argsort(np.argsort(labels.astype(str), kind="stable"), kind="stable")
    return OptionCodes(ids, np.asarray(labels, dtype=object), rank.astype(np.int64))


def build_index(
    configs: pd.DataFrame, series_cols: Sequence[str], noise: N.NoiseModel | None = None
) -> ConfigIndex:
    """Encode a configuration frame (``series_cols`` absent from it are skipped).
    Missing score_spread / n_repeats / spread_source columns read as unknown / 1 /
    "unknown". ``noise``: the noise model of the runs behind ``configs``
    (``analysis.noise.estimate_noise``): each configuration's modelled run-to-run
    spread, used for the switches' bands where both sides have one."""
    scols = tuple(c for c in series_cols if c in configs)
    n = len(configs)
    sid = group_codes(configs[list(scols)], list(scols)) if n else np.zeros(0, np.int64)
    n_s = int(sid.max()) + 1 if n else 0
    rep = np.zeros(n_s, dtype=np.int64)
    rep[sid] = np.arange(n)
    series_frame = configs[list(scols)].iloc[rep].reset_index(drop=True)
    spread = as_float(configs[SCORE_SPREAD]) if SCORE_SPREAD in configs else np.full(n, np.nan)
    repeats = as_float(configs[N_REPEATS]) if N_REPEATS in configs else np.ones(n)
    source = (
        configs[SPREAD_SOURCE].astype(object).to_numpy()
        if SPREAD_SOURCE in configs
        else np.full(n, "unknown", dtype=object)
    )
    codes, names = pd.factorize(pd.Series(source, dtype=object), sort=True)
    run_spread, run_source = None, None
    if noise is not None and n:
        found = N.noise_for(noise, configs)
        modelled = (found[N.SOURCE] != N.WITHIN).to_numpy() & np.isfinite(as_float(found[N.SPREAD]))
        run_spread = np.where(modelled, as_float(found[N.SPREAD]), np.nan)
        run_source = np.where(
            modelled, found[N.SOURCE].to_numpy(object), np.array(None, dtype=object)
        )
    return ConfigIndex(
        configs=configs,
        series_cols=scols,
        series_id=sid,
        series_frame=series_frame,
        score=as_float(configs[C.SCORE_MS]) if n else np.zeros(0),
        spread=spread,
        repeats=repeats.astype(np.int64),
        source=source,
        source_codes=np.asarray(codes, dtype=np.int64),
        source_names=np.asarray(names, dtype=object),
        run_spread=run_spread,
        run_source=run_source,
    )


def series_labels(frame: pd.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """Readable series names: the values of ``cols`` joined by " · " (world size as
    "ws N", CUDA graph as decode/prefill, attention as "attention DP/TP")."""
    parts: list[np.ndarray] = []
    for col in cols:
        s = frame[col]
        if col == C.WORLD_SIZE:
            parts.append("ws " + text_values(s))
        elif col == C.CUDA_GRAPH:
            on = s.astype("boolean")
            word = np.where(on.fillna(False).to_numpy(dtype=bool), "decode", "prefill")
            parts.append(np.where(on.isna().to_numpy(), "phase ?", word).astype(object))
        elif col == C.ATTN:
            family = pd.Series(text_values(s)).map({"D": "DP", "T": "TP"}).fillna("?")
            parts.append("attention " + family.to_numpy(dtype=object))
        else:
            parts.append(text_values(s))
    if not parts:
        return np.full(len(frame), "all", dtype=object)
    out = parts[0]
    for part in parts[1:]:
        out = out + " · " + part
    return np.asarray(out, dtype=object)


def labelled(codes: np.ndarray, labels: np.ndarray) -> pd.Categorical | np.ndarray:
    """Text per row as a categorical over ``labels`` (no Python string per row); an
    object array when two codes share a label (a categorical needs unique ones)."""
    if len(set(labels.tolist())) == len(labels):
        return pd.Categorical.from_codes(codes, categories=pd.Index(labels, dtype=object))
    return labels[codes]


def dense_ids(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dense ids, sorted distinct keys) of non-negative int64 keys; a presence table
    when the key range is small (no sort), else a sort."""
    top = int(key.max()) + 1 if len(key) else 0
    if top <= 4 * len(key) + 1024:
        present = np.zeros(top, dtype=bool)
        present[key] = True
        uniq = np.flatnonzero(present)
        return (np.cumsum(present) - 1)[key], uniq
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.astype(np.int64), uniq
