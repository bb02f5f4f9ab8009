"""Derived per-candidate quantities and the small frame helpers every analysis shares.

``add_derived`` adds the columns ``activated_tokens_per_rank``, ``dispatch_kb``,
``tokens_per_s_per_gpu``, ``local_batch`` and ``phase`` (see ``analysis.columns``).

Attention mode matters because bench_moe's ``num_tokens`` means different things:

* attention DP (DEP, DTP, DTP<k>EP<m>, CUSTOM+DP): ``num_tokens`` is the global total of
  unique tokens, split across ranks.
  ``activated_tokens_per_rank = num_tokens * top_k / world_size`` -- exactly the guide's
  axis (the guide defines it for pure EP; for DP hybrids we keep the same per-GPU
  normalisation so every DP row sits on the axis the published thresholds use).
* attention TP (TEP, TTP, TTP<k>EP<m>): every rank holds the same ``num_tokens`` tokens,
  so the group has ``num_tokens`` unique tokens and the experts are split by EP only.
  Each rank therefore processes ``num_tokens * top_k / moe_ep_size`` token-expert
  assignments (TEP: ``/ world_size``; TTP: all ``num_tokens * top_k``).

Throughput: in both modes one forward serves ``num_tokens`` unique tokens for the whole
group (under TP the ranks replicate the same tokens, they do not serve more), so
``tokens_per_s_per_gpu = num_tokens / (score_ms / 1000) / world_size``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analysis import columns as C

_PHASE_NAMES = pa.array(["prefill", "decode"])  # index = cuda_graph
_HYBRID = re.compile(r"^([DT])TP(\d+)EP(\d+)$")


def parse_parallel_mode(mode: str | None, world_size: int) -> tuple[bool | None, int, int] | None:
    """(attention_dp, moe_ep_size, moe_tp_size) implied by a bench_moe parallel mode name.

    Returns None for CUSTOM, unknown or missing names (their sizes must come from the
    row itself). ``attention_dp`` is True for D* modes, False for T* modes.
    """
    if not mode:
        return None
    m = mode.upper()
    named = {
        "DEP": (True, world_size, 1),
        "TEP": (False, world_size, 1),
        "DTP": (True, 1, world_size),
        "TTP": (False, 1, world_size),
    }
    if m in named:
        return named[m]
    hit = _HYBRID.match(m)
    if hit:
        return hit.group(1) == "D", int(hit.group(3)), int(hit.group(2))
    return None


def as_float(series: pd.Series) -> np.ndarray:
    """Column as a float64 array; missing or non-numeric values become NaN."""
    if series.dtype.kind in "iufb" and not isinstance(series.dtype, pd.CategoricalDtype):
        # already numeric (numpy or nullable): no parsing needed
        numeric: np.ndarray = series.to_numpy(dtype=float, na_value=np.nan)
        return numeric
    if isinstance(series.dtype, pd.CategoricalDtype):  # convert each category once
        cats = as_float(pd.Series(series.cat.categories))
        codes = series.cat.codes.to_numpy()
        decoded: np.ndarray = np.append(cats, np.nan)[codes]  # code -1 (missing) -> NaN
        return decoded
    out: np.ndarray = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return out


def as_bool(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(values, known) arrays for a nullable boolean column (None/NA -> known False)."""
    s = series.astype("boolean")
    known = ~s.isna().to_numpy()
    return s.fillna(False).to_numpy(dtype=bool), known


def attention_dp_array(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(is_dp, known): attention_dp, else inferred from ``attn`` ('D'/'T'), else from the
    first letter of ``parallel_mode`` (D*/T*); unknown where none of them says."""
    n = len(df)
    is_dp = np.zeros(n, dtype=bool)
    known = np.zeros(n, dtype=bool)
    if C.ATTENTION_DP in df:
        v, k = as_bool(df[C.ATTENTION_DP])
        is_dp[k], known[k] = v[k], True
    for col in (C.ATTN, C.PARALLEL_MODE):
        if col in df and not known.all():
            first = (
                df[col].astype("string").str.upper().str[:1].to_numpy(dtype=object, na_value=None)
            )
            d, t = first == "D", first == "T"
            fill = ~known & (d | t)
            is_dp[fill], known[fill] = d[fill], True
    return is_dp, known


def ep_size_array(df: pd.DataFrame) -> np.ndarray:
    """moe_ep_size as float; missing values filled from the named parallel mode."""
    ep = as_float(df[C.MOE_EP_SIZE]) if C.MOE_EP_SIZE in df else np.full(len(df), np.nan)
    missing = np.isnan(ep)
    if missing.any() and C.PARALLEL_MODE in df and C.WORLD_SIZE in df:
        ws = as_float(df[C.WORLD_SIZE])
        modes = df[C.PARALLEL_MODE].astype("string").to_numpy(dtype=object, na_value=None)
        keys = pd.DataFrame({"m": modes[missing], "w": ws[missing]})
        filled = np.full(len(keys), np.nan)
        for (mode, w), idx in keys.groupby(["m", "w"], dropna=True).indices.items():
            parsed = parse_parallel_mode(mode, int(w)) if np.isfinite(w) else None
            if parsed is not None:
                filled[idx] = parsed[1]
        ep[missing] = filled
    return ep


def activated_tokens_per_rank(
    num_tokens: float,
    top_k: float,
    world_size: float,
    attention_dp: bool,
    moe_ep_size: float | None = None,
) -> float:
    """Scalar form of the derived column (token-expert assignments per rank).

    DP: num_tokens * top_k / world_size. TP: num_tokens * top_k / moe_ep_size
    (moe_ep_size defaults to world_size, i.e. pure EP). NaN on non-positive divisors.
    """
    div = world_size if attention_dp else (world_size if moe_ep_size is None else moe_ep_size)
    if not div or div <= 0:
        return float("nan")
    return float(num_tokens) * float(top_k) / float(div)


def add_derived(df: pd.DataFrame) -> pd.DataFrame:
    """Return a copy of ``df`` with the five derived columns added (input untouched).

    Units: activated_tokens_per_rank in token-expert assignments; dispatch_kb in KiB
    (``BYTES_PER_ELEM[quant]``; unknown/missing quant -> NaN); tokens_per_s_per_gpu in
    tokens/s/GPU (NaN unless score_ms is finite and > 0); local_batch (nullable Int64)
    is tokens per rank: num_tokens / world_size under DP (NA when not integral),
    num_tokens under TP; phase is "decode" when cuda_graph is true, "prefill" when
    false, NA when unknown. Rows whose attention mode is unknown get NaN/NA everywhere
    except phase and dispatch-independent inputs.
    """
    nt = as_float(df[C.NUM_TOKENS])
    top_k = as_float(df[C.TOP_K])
    ws = as_float(df[C.WORLD_SIZE])
    is_dp, dp_known = attention_dp_array(df)
    ep = ep_size_array(df)
    with np.errstate(divide="ignore", invalid="ignore"):
        divisor = np.where(is_dp, ws, ep)
        divisor = np.where(dp_known & (divisor > 0), divisor, np.nan)
        atpr = nt * top_k / divisor
        bpe = (
            df[C.QUANT].map(C.BYTES_PER_ELEM)
            if C.QUANT in df
            else pd.Series(np.nan, index=df.index)
        )
        dispatch_kb = atpr * as_float(df[C.HIDDEN_SIZE]) * as_float(bpe) / 1024.0
        score = as_float(df[C.SCORE_MS]) if C.SCORE_MS in df else np.full(len(df), np.nan)
        good = np.isfinite(score) & (score > 0) & (ws > 0)
        tps = np.where(good, nt / (score / 1000.0) / ws, np.nan)
        per_rank = nt / ws
        integral = np.isfinite(per_rank) & (np.floor(per_rank) == per_rank)
    lb_values = np.where(is_dp, per_rank, nt)
    lb_ok = dp_known & np.isfinite(nt) & np.where(is_dp, integral, True)
    local_batch = pd.array(np.where(lb_ok, lb_values, 0).astype(np.int64), dtype="Int64")
    local_batch[~lb_ok] = pd.NA
    graph, graph_known = (
        as_bool(df[C.CUDA_GRAPH])
        if C.CUDA_GRAPH in df
        else (np.zeros(len(df), bool), np.zeros(len(df), bool))
    )
    # "decode"/"prefill"/NA built by Arrow (no Python string object per row).
    codes = pa.array(graph.astype(np.int8), mask=~graph_known)
    phase = pd.Series(pd.array(pc.take(_PHASE_NAMES, codes), dtype="string"), index=df.index)
    return df.assign(
        **{
            C.ACTIVATED_TOKENS_PER_RANK: atpr,
            C.DISPATCH_KB: dispatch_kb,
            C.TOKENS_PER_S_PER_GPU: tps,
            C.LOCAL_BATCH: pd.Series(local_batch, index=df.index),
            C.PHASE: phase,
        }
    )


def ensure_derived(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` itself when every derived column is present, else ``add_derived(df)``."""
    needed = (
        C.ACTIVATED_TOKENS_PER_RANK,
        C.DISPATCH_KB,
        C.TOKENS_PER_S_PER_GPU,
        C.LOCAL_BATCH,
        C.PHASE,
    )
    return df if all(c in df for c in needed) else add_derived(df)


def _text_match(series: pd.Series, test: Callable[[pd.Series], pd.Series]) -> np.ndarray:
    """Apply a string predicate; on categoricals only to the categories (fast)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        cats = test(pd.Series(series.cat.categories).astype("string")).fillna(False)
        codes = series.cat.codes.to_numpy()
        hit = np.append(cats.to_numpy(dtype=bool), False)  # code -1 (missing) -> False
        out: np.ndarray = hit[codes]
        return out
    res: np.ndarray = test(series.astype("string")).fillna(False).to_numpy(dtype=bool)
    return res


def rankable_mask(df: pd.DataFrame) -> np.ndarray:
    """Rows bench_moe would rank as a best: status "success", finite score_ms > 0, and
    autotune not failed (failure_category "autotune_failed" or autotune_status
    starting with "failed"; missing values count as not failed)."""
    ok = _text_match(df[C.STATUS], lambda s: s == "success")
    score = as_float(df[C.SCORE_MS])
    ok &= np.isfinite(score) & (score > 0)
    if C.FAILURE_CATEGORY in df:
        ok &= ~_text_match(df[C.FAILURE_CATEGORY], lambda s: s == "autotune_failed")
    if C.AUTOTUNE_STATUS in df:
        ok &= ~_text_match(df[C.AUTOTUNE_STATUS], lambda s: s.str.startswith("failed"))
    return ok


def group_codes(df: pd.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """Dense int64 group ids for ``cols`` (sorted key order, missing values form their
    own group); all zeros when ``cols`` is empty. Independent of row order."""
    if not cols:
        return np.zeros(len(df), dtype=np.int64)
    if all(_fast_key(df[c]) for c in cols):
        return _combined_codes(df, cols)
    grouped = df.groupby(list(cols), sort=True, dropna=False, observed=True)
    out: np.ndarray = grouped.ngroup().to_numpy(dtype=np.int64)
    return out


def _fast_key(series: pd.Series) -> bool:
    """Columns whose sorted factorization orders exactly like ``groupby(sort=True)``:
    numeric, boolean, categorical and string dtypes (not mixed-type object columns)."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _fast_key(pd.Series(dtype.categories))
    return dtype.kind in "iufb" or isinstance(dtype, pd.StringDtype)


def _combined_codes(df: pd.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """``group_codes`` by per-column sorted codes (missing last) combined into one key:
    no groupby machinery, same ids."""
    key = np.zeros(len(df), dtype=np.int64)
    for col in cols:
        s = df[col]
        if isinstance(s.dtype, pd.CategoricalDtype):  # sorted like groupby: by category
            codes = s.cat.codes.to_numpy().astype(np.int64)
            card = len(s.cat.categories)
            if len(codes) and codes.max(initial=-1) >= 0:
                # observed=True: only the categories present get ids
                present = np.zeros(card, dtype=bool)
                present[codes[codes >= 0]] = True
                remap = np.cumsum(present) - 1
                codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1)
                card = int(present.sum())
        else:
            codes, uniques = pd.factorize(s, sort=True, use_na_sentinel=True)
            codes, card = np.asarray(codes, dtype=np.int64), len(uniques)
        codes = np.where(codes < 0, card, codes)  # missing values sort last
        key = key * (card + 1) + codes
        if key.max(initial=0) > 1 << 40:  # keep the combined key small
            key = np.unique(key, return_inverse=True)[1].astype(np.int64)
    if len(key) and key.max() < 1 << 24:
        present = np.zeros(int(key.max()) + 1, dtype=bool)
        present[key] = True
        out: np.ndarray = (np.cumsum(present) - 1)[key]
        return out.astype(np.int64)
    return np.unique(key, return_inverse=True)[1].astype(np.int64)


def sort_codes(series: pd.Series) -> np.ndarray:
    """Order-preserving int codes of a column (sorted unique values; missing last), used
    as a deterministic tie-break key that does not depend on row order."""
    codes, _ = pd.factorize(series, sort=True, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    codes[codes < 0] = np.iinfo(np.int64).max
    return codes
