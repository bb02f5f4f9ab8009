"""Short texts naming a configuration or a workload, for tables, legends and filters.

``config_label``: ``"TRTLLM · NVLINK_ONE_SIDED · DEP EP8 TP1"`` (backend, comm, parallel
mode, EP and TP sizes); ``workload_label``: ``"256 tok · decode · balanced"``. Missing
values show as "?".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.derived import group_codes

WORKLOAD_LABEL = "workload"

_LABEL_COLS = (C.BACKEND, C.COMM, C.PARALLEL_MODE, C.MOE_EP_SIZE, C.MOE_TP_SIZE)


def _label_text(value: object, size: bool) -> str:
    if value is None or pd.isna(value):
        return "?"
    return str(int(value)) if size else str(value)  # type: ignore[call-overload]


def config_label(df: pd.DataFrame) -> pd.Series:
    """A short text per row naming its configuration, e.g. ``"TRTLLM · NVLINK_ONE_SIDED
    · DEP EP8 TP1"`` (the columns the frame carries; missing values as "?"), as a
    categorical (built once per distinct configuration)."""
    cols = [c for c in _LABEL_COLS if c in df]
    if df.empty or not cols:
        return pd.Series(pd.Categorical(["?"] * len(df)), index=df.index)
    codes = group_codes(df, cols)
    first = np.unique(codes, return_index=True)[1]
    uniq = df[cols].iloc[first]
    labels = []
    for rec in uniq.itertuples(index=False, name=None):
        v = dict(zip(cols, rec, strict=True))
        t = {c: _label_text(v.get(c), c in (C.MOE_EP_SIZE, C.MOE_TP_SIZE)) for c in _LABEL_COLS}
        labels.append(
            f"{t[C.BACKEND]} · {t[C.COMM]} · {t[C.PARALLEL_MODE]} "
            f"EP{t[C.MOE_EP_SIZE]} TP{t[C.MOE_TP_SIZE]}"
        )
    uniq_labels, inverse = np.unique(np.array(labels, dtype=object), return_inverse=True)
    cat = pd.Categorical.from_codes(inverse[codes], categories=list(uniq_labels))
    return pd.Series(cat, index=df.index)


def workload_label(df: pd.DataFrame) -> pd.Series:
    """A short text per row naming its workload: ``"256 tok · decode · balanced"``."""
    tokens = pd.to_numeric(df[C.NUM_TOKENS], errors="coerce").map(
        lambda v: "?" if pd.isna(v) else str(int(v))
    )
    phase = df[C.PHASE].astype(object).where(df[C.PHASE].notna(), "?").astype(str)
    dispatch = (
        df[C.DISPATCH].astype(object).where(df[C.DISPATCH].notna(), "?").astype(str)
        if C.DISPATCH in df
        else "?"
    )
    out: pd.Series = tokens.astype(object) + " tok · " + phase + " · " + dispatch
    return out
