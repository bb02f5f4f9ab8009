"""Regressions of newly stored runs against the latest earlier TensorRT-LLM version.

The upload path calls :func:`regressions_for_runs` with the run ids an upload created.
Each run is compared (``analysis.compare``) with every run of the **latest earlier
version** on its slice -- same model, hardware, quant, world size, phase and routing
pattern (dispatch): for each (phase, dispatch) part of the new run, the latest earlier
version that measured that part (so a prefill-only rc27 does not hide the decode rows
of rc26). Rows are matched on num_tokens and attention as well, so a configuration is
only ever compared with itself.
"Earlier" is the version order of :mod:`analysis.versions` (version number, then run
date); a run with no version, or no earlier version on its slice, has no regressions.

It is cheap by construction (it runs on every upload): two narrow statements give the
head run's slice facts and the versions of that one slice
(:meth:`db.runs.RunRepository.version_slice`), and only when there is an earlier version
are candidates read: those of the head run and of the slice's earlier versions (no
cached frames) -- the latest :data:`HISTORY_VERSIONS` earlier versions are the
history of the noise model
(:mod:`analysis.noise`: run-to-run spread from repeats and stable history, a prior of
configurations alike). A change inside the band a re-run could give is
``inconclusive``, reported only when asked for (``verdicts``) and only when slower.

Thresholds: :class:`RegressionThresholds` -- a default percentage and overrides per
``"<model>"``, ``"<model>/<hardware>"`` or ``"*/<hardware>"`` (most specific wins:
model/hardware, then model, then */hardware, then the default). The composition root
loads it from ``MOEDASH_REGRESSION_THRESHOLDS`` (JSON), e.g.
``{"default_pct": 5, "overrides": {"deepseek_v4_pro/GB300": 3, "*/H100": 8}}``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from analysis import columns as C
from analysis import compare as K
from analysis.identity import CONFIG_COLUMNS, WORKLOAD_COLUMNS
from analysis.noise import estimate_noise
from analysis.versions import (
    ORDER,
    RUN_IDS,
    VERSION,
    same_version,
    sort_versions,
    version_table,
)
from db.store import Store, VersionSlice
from service.compare import records
from service.frames import CELL_COLUMNS, DashData, prepare_frame

HISTORY_VERSIONS = 8


class RegressionThresholds(BaseModel):
    """Regression thresholds in percent of score_ms (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    default_pct: float = Field(K.DEFAULT_THRESHOLD_PCT, ge=0, le=1000)
    overrides: dict[str, float] = Field(
        default_factory=dict,
        description='per "<model>", "<model>/<hardware>" or "*/<hardware>", in percent',
    )

    @field_validator("overrides")
    @classmethod
    def _check(cls, value: dict[str, float]) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, pct in value.items():
            parts = key.split("/")
            if len(parts) > 2 or not all(p.strip() for p in parts) or key.strip() == "*":
                raise ValueError(
                    f"override key {key!r}: use '<model>', '<model>/<hardware>' or '*/<hardware>'"
                )
            if not math.isfinite(pct) or not 0 <= pct <= 1000:
                raise ValueError(f"override {key!r}: {pct!r} is not a percentage in [0, 1000]")
            if len(parts) == 2:
                key = f"{parts[0].strip()}/{parts[1].strip().upper()}"
            out[key.strip()] = float(pct)
        return out

    def for_slice(self, model: str, hardware: str) -> float:
        """The threshold of one model on one hardware (most specific match wins)."""
        hw = hardware.upper()
        for key in (f"{model}/{hw}", model, f"*/{hw}"):
            if key in self.overrides:
                return self.overrides[key]
        return self.default_pct


def _store(source: Store | DashData) -> Store:
    return source.store if isinstance(source, DashData) else source


def earlier_versions(runs: pd.DataFrame, version: str) -> list[tuple[str, list[int]]]:
    """Every version of ``runs`` ordered before ``version`` (and not the same version),
    latest first, each with its run ids. ``runs`` holds run_id, trtllm_version and
    run_date (a run table); empty when ``version`` is not among them."""
    table = version_table(runs)
    here = table.index[table[VERSION] == version]
    if not len(here):
        return []
    mine = int(table[ORDER].iloc[here[0]])
    earlier = table[(table[ORDER] < mine) & ~table[VERSION].map(lambda v: same_version(v, version))]
    return [
        (str(v), [int(x) for x in str(ids).split(",") if x])
        for v, ids in zip(earlier[VERSION][::-1], earlier[RUN_IDS][::-1], strict=True)
    ]


def earlier_version(runs: pd.DataFrame, version: str) -> tuple[str, list[int]] | None:
    """The first of :func:`earlier_versions` (the latest earlier one), None if none."""
    found = earlier_versions(runs, version)
    return found[0] if found else None


def slice_earlier_versions(found: VersionSlice) -> list[tuple[str, list[int]]]:
    """:func:`earlier_versions` of the run ``found`` describes, from the (version,
    run date, run ids) rows of its slice (:meth:`db.runs.RunRepository.version_slice`)
    instead of a run table: the same order (:func:`analysis.versions.sort_versions`
    over each version's first run date), without building frames on every upload."""
    head = found.trtllm_version
    dates: dict[str, list[str]] = {}
    ids: dict[str, list[int]] = {}
    for version, date, run_ids in found.versions:
        dates.setdefault(version, [])
        if date is not None:
            dates[version].append(str(date))
        ids.setdefault(version, []).extend(run_ids)
    if head is None or head not in dates:
        return []
    versions = sorted(dates)
    first = [min(dates[v]) if dates[v] else None for v in versions]
    ordered = [versions[i] for i in sort_versions(versions, first)]
    earlier = ordered[: ordered.index(head)]
    return [(v, sorted(ids[v])) for v in reversed(earlier) if not same_version(v, head)]


def _groups(frame: pd.DataFrame) -> np.ndarray:
    """Per row, its (phase, routing pattern) as one text: the part of the slice a base
    version must have measured to be compared with."""
    phase = frame[C.PHASE].astype(object).where(frame[C.PHASE].notna(), "?")
    dispatch = frame[C.DISPATCH].astype(object).where(frame[C.DISPATCH].notna(), "?")
    out: np.ndarray = (phase.astype(str) + "|" + dispatch.astype(str)).to_numpy(dtype=object)
    return out


def _records(
    rows: pd.DataFrame, run_id: int, base_version: str, base_ids: list[int], pct: float
) -> list[dict[str, Any]]:
    fields = [
        *(c for c in WORKLOAD_COLUMNS if c in rows),
        *(c for c in CONFIG_COLUMNS if c in rows),
        K.CONFIG_LABEL,
        K.BASE_MS,
        K.HEAD_MS,
        K.CHANGE_PCT,
        K.BASELINE_MS,
        K.BASELINE_N,
        K.BASELINE_CHANGE_PCT,
        K.RUN_SPREAD_PCT,
        K.NOISE_PCT,
        K.NOISE_SOURCE,
    ]
    out = []
    for rec in records(rows[[*fields, K.HEAD_VERSION, K.VERDICT]]):
        item: dict[str, Any] = {
            "run_id": run_id,
            "base_version": base_version,
            "head_version": rec[K.HEAD_VERSION],
            "base_run_ids": base_ids,
        }
        item.update({f: rec[f] for f in fields})
        item.update({"threshold_pct": pct, K.VERDICT: rec[K.VERDICT]})
        out.append(item)
    return out


def regressions_for_runs(
    source: Store | DashData,
    run_ids: Sequence[int],
    thresholds: RegressionThresholds | None = None,
    *,
    verdicts: Collection[str] = (K.REGRESSION,),
) -> list[dict[str, Any]]:
    """One dict per regression (``verdicts``: which compare verdicts to report, e.g.
    add "new_failure", or "inconclusive": slower rows inside the noise band) of each run
    of ``run_ids`` against the latest earlier version on its slice (module docstring):
    run_id, base_version, head_version, base_run_ids, the workload and configuration
    fields, config (label), base_ms, head_ms, change_pct, baseline_ms, baseline_runs,
    baseline_change_pct, run_spread_pct, noise_pct, noise_source, threshold_pct,
    verdict. Ordered by run id, then change_pct
    descending, then key. Unknown run ids and runs without a version are skipped."""
    store = _store(source)
    thresholds = thresholds or RegressionThresholds()
    out: list[dict[str, Any]] = []
    for run_id in sorted({int(r) for r in run_ids}):
        # the run's slice facts and its slice's versions: two narrow statements (this
        # runs on every upload; the candidates are read only when there is a base)
        found = store.runs.version_slice(run_id)
        if found is None or found.trtllm_version is None or not found.n_candidates:
            continue
        pct = thresholds.for_slice(found.model, found.hardware)
        remaining: set[str] | None = None  # (phase, dispatch) parts not compared yet
        # the latest HISTORY_VERSIONS earlier versions: the base and the noise model's
        # window (as Bencher's max sample size: bounded work per upload)
        earlier = slice_earlier_versions(found)[:HISTORY_VERSIONS]
        if not earlier:
            continue
        # one read of the head and the slice's earlier versions (the noise model's
        # history): the same categories, so the compare stays on codes
        both = prepare_frame(
            store.candidate_frame(
                run_ids=[*(i for _, ids in earlier for i in ids), run_id],
                columns=CELL_COLUMNS,
                categorical=True,
            )
        )
        runs = both[C.RUN_ID].to_numpy()
        is_head = runs == run_id
        group = _groups(both)
        for at, (base_version, base_ids) in enumerate(earlier):
            if remaining is None:
                remaining = set(group[is_head])
                if not remaining:  # the head has no candidates to compare
                    break
            here = remaining & set(group[np.isin(runs, base_ids)])
            if not here:
                continue
            part = np.isin(group, list(here))
            # noise from this version and the older ones, never from the head
            older = np.isin(runs, [i for _, ids in earlier[at:] for i in ids]) & part
            result = K.compare(
                both.loc[np.isin(runs, base_ids) & part],
                both.loc[is_head & part],
                threshold_pct=pct,
                noise=estimate_noise(both.loc[older]),
            )
            verdict = result.rows[K.VERDICT].astype(object).to_numpy()
            slower = result.rows[K.BASELINE_CHANGE_PCT].to_numpy(float) > 0
            keep = np.isin(verdict, list(verdicts)) & ((verdict != K.INCONCLUSIVE) | slower)
            rows = result.rows[keep]
            rows = rows.sort_values(
                K.CHANGE_PCT, ascending=False, kind="mergesort", na_position="last"
            )
            out.extend(_records(rows, run_id, base_version, base_ids, pct))
            remaining -= here
            if not remaining:
                break
    return out
