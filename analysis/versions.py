"""Ordering TensorRT-LLM versions: by version number, then by run date.

Version strings are parsed as PEP 440 versions (``packaging.version``): ``1.2.0rc27 <
1.2.0rc28 < 1.2.0``, ``1.2.0.dev20250101 < 1.2.0rc1``, a leading ``v`` is ignored
(``v1.3.0rc26`` equals ``1.3.0rc26``). Strings that do not parse (a branch name, a
commit) come after every parseable version, ordered by their first run date. Equal
version numbers (``v1.2.0rc27`` and ``1.2.0rc27``) are ordered by their first run date,
then by the text. Missing run dates sort after known ones; a missing version is not a
version and is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd
from packaging.version import InvalidVersion, Version

from analysis import columns as C

VERSION = "version"
PARSED = "parsed"  # normalised PEP 440 text, None when unparseable
FIRST_DATE = "first_run_date"
LAST_DATE = "last_run_date"
N_RUNS = "n_runs"
RUN_IDS = "run_ids"
ORDER = "order"  # 0-based position in version order
COMMITS = "trtllm_commits"


@lru_cache(maxsize=4096)
def parse_version(text: str | None) -> Version | None:
    """The PEP 440 version of ``text`` (surrounding blanks and a leading ``v`` ignored),
    None when it does not parse."""
    if text is None:
        return None
    try:
        return Version(str(text).strip())
    except InvalidVersion:
        return None


def same_version(a: str, b: str) -> bool:
    """True when two version texts name the same version (equal parsed versions, or the
    same text when either does not parse)."""
    pa, pb = parse_version(a), parse_version(b)
    if pa is None or pb is None:
        return a.strip() == b.strip()
    return pa == pb


def sort_versions(versions: Sequence[str], first_dates: Sequence[str | None]) -> list[int]:
    """Positions of ``versions`` in version order (module docstring); ``first_dates``
    are their first run dates (ISO text or None)."""
    keys = []
    for i, (v, d) in enumerate(zip(versions, first_dates, strict=True)):
        parsed = parse_version(v)
        date = "" if d is None or pd.isna(d) else str(d)
        keys.append((parsed is None, parsed or Version("0"), date == "", date, str(v), i))
    return [k[-1] for k in sorted(keys)]


def version_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per TensorRT-LLM version of ``runs`` (rows with ``trtllm_version``, and
    optionally ``run_date``, ``run_id``, ``trtllm_commit``: a run table or a candidate
    frame), in version order: version, parsed (normalised text or None), first and last
    run date, number of runs, their ids ("1,5" ascending), the commits seen ("a,b"
    sorted) and ``order`` (0 = oldest). Empty when no row has a version."""
    cols = [VERSION, PARSED, FIRST_DATE, LAST_DATE, N_RUNS, RUN_IDS, COMMITS, ORDER]
    if runs.empty or C.TRTLLM_VERSION not in runs:
        return pd.DataFrame(columns=cols)
    keep = [c for c in (C.TRTLLM_VERSION, C.RUN_DATE, C.RUN_ID, C.TRTLLM_COMMIT) if c in runs]
    if C.RUN_ID in runs:  # one row per run (a candidate frame repeats them)
        first = np.unique(runs[C.RUN_ID].to_numpy(), return_index=True)[1]
        runs = runs.iloc[first]
    df = runs[keep].copy()
    for col in keep:
        if isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype(object)
    df = df[df[C.TRTLLM_VERSION].notna()]
    if C.RUN_ID in df:
        df = df.drop_duplicates(C.RUN_ID)
    if df.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for version, grp in df.groupby(C.TRTLLM_VERSION, sort=True):
        dates = sorted(str(d) for d in grp[C.RUN_DATE].dropna()) if C.RUN_DATE in grp else []
        ids = sorted(int(x) for x in grp[C.RUN_ID].dropna()) if C.RUN_ID in grp else []
        commits = (
            sorted({str(c) for c in grp[C.TRTLLM_COMMIT].dropna()})
            if C.TRTLLM_COMMIT in grp
            else []
        )
        parsed = parse_version(str(version))
        rows.append(
            {
                VERSION: str(version),
                PARSED: None if parsed is None else str(parsed),
                FIRST_DATE: dates[0] if dates else None,
                LAST_DATE: dates[-1] if dates else None,
                N_RUNS: len(ids) if ids else len(grp),
                RUN_IDS: ",".join(str(i) for i in ids),
                COMMITS: ",".join(commits),
            }
        )
    table = pd.DataFrame(rows, columns=cols[:-1])
    order = sort_versions(list(table[VERSION]), list(table[FIRST_DATE]))
    table = table.iloc[order].reset_index(drop=True)
    table[ORDER] = np.arange(len(table), dtype=np.int64)
    return table


def version_order(versions: pd.Series, table: pd.DataFrame) -> np.ndarray:
    """Per value of ``versions``, its ``order`` in ``table`` (:func:`version_table`);
    -1 for a version the table does not hold or a missing one."""
    lookup = dict(zip(table[VERSION], table[ORDER], strict=True))
    # each distinct value looked up once (a cell's frame repeats a few dozen versions
    # over ~1M rows); the code of a missing value (-1) takes the appended -1
    codes, uniques = pd.factorize(versions, use_na_sentinel=True)
    per = [lookup.get(str(v), -1) if isinstance(v, str) else -1 for v in uniques]
    out: np.ndarray = np.asarray([*per, -1], dtype=np.int64)[codes]
    return out
