"""Repeat-run sweeps of one slice with a known run-to-run noise, for the noise model.

Slice deepseek_v4_pro · GB300 · NVFP4, world size 8, DEP, balanced routing. Each run
measures the same 348 configurations: 4 backends x 3 comms x (12 token counts 1..2048
with CUDA graph on + 17 token counts 1..65536 eager). A configuration's run-to-run
spread (log-normal, per run) is ~1 % with CUDA graph on, ~1.2 % eager, and 30-80 %
for eager launch-bound ones (1 and 2 tokens: 24 rows, 7 %), as in real sweeps; every
row's within-run iteration spread is 0.8 % whatever its run-to-run spread.

History: versions :data:`HISTORY` (one run each, then :data:`BASE` with
:data:`BASE_RUNS` repeat runs), with two real changes on the way that the noise model
must not take for noise: from rc23 CUTLASS is 15 % faster with graph on at >= 64
tokens, from rc25 CUTEDSL is 8 % slower everywhere. :func:`head_run` is one more run of
the base version's software, labelled :data:`HEAD` (a re-run uploaded as a new
version), optionally slowed down by a factor in every timing field of one backend at
some token counts -- the rows that then *did* regress.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import columns as C
from ingest.records import Sweep
from tests import factories
from tests.factories import sweeps

MODEL, HARDWARE, QUANT, WORLD_SIZE = "deepseek_v4_pro", "GB300", "NVFP4", 8
BACKENDS = ("TRTLLM", "CUTLASS", "CUTEDSL", "DEEPGEMM")
COMMS = ("NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED", "ALLGATHER")
GRAPH_TOKENS = tuple(2**i for i in range(12))
EAGER_TOKENS = tuple(2**i for i in range(17))
LAUNCH_BOUND_TOKENS = (1, 2)  # eager rows at these counts move 30-80 % between runs
HISTORY = tuple(f"1.2.0rc{i}" for i in range(20, 27))
BASE, HEAD = "1.2.0rc27", "1.2.0rc28"
BASE_RUNS = 2
TIMING = (
    C.SCORE_MS,
    C.RAW_SCORE_MS,
    C.ITER_MEAN_MS,
    C.ITER_MEDIAN_MS,
    C.ITER_MIN_MS,
    C.ITER_MAX_MS,
    C.ITER_P90_MS,
    C.ITER_STDEV_MS,
)


@dataclass(frozen=True)
class Truth:
    """The configurations (a candidate frame template, one row each), their true score
    under the base software and their run-to-run spread (log units)."""

    template: pd.DataFrame
    score: np.ndarray
    spread: np.ndarray

    @property
    def launch_bound(self) -> np.ndarray:
        graph = self.template[C.CUDA_GRAPH].to_numpy(dtype=bool)
        tokens = self.template[C.NUM_TOKENS].to_numpy(dtype=np.int64)
        out: np.ndarray = ~graph & np.isin(tokens, LAUNCH_BOUND_TOKENS)
        return out


def truth(seed: int = 0) -> Truth:
    """The slice's configurations with their true scores and spreads (``seed`` draws the
    per-configuration factors)."""
    rng = np.random.default_rng(seed)
    rows = [
        {C.BACKEND: b, C.COMM: c, C.NUM_TOKENS: t, C.CUDA_GRAPH: graph}
        for graph, tokens in ((True, GRAPH_TOKENS), (False, EAGER_TOKENS))
        for b in BACKENDS
        for c in COMMS
        for t in tokens
    ]
    template = factories.make_candidates(
        rows,
        model=MODEL,
        hardware=HARDWARE,
        quant=QUANT,
        world_size=WORLD_SIZE,
        parallel_mode="DEP",
        synthetic=False,
    )
    tokens = template[C.NUM_TOKENS].to_numpy(dtype=float)
    graph = template[C.CUDA_GRAPH].to_numpy(dtype=bool)
    backend = {b: rng.uniform(0.8, 1.3) for b in BACKENDS}
    comm = {c: rng.uniform(0.9, 1.2) for c in COMMS}
    per_row = rng.uniform(0.9, 1.1, len(template))
    factor = np.array(
        [backend[b] * comm[c] for b, c in zip(template[C.BACKEND], template[C.COMM], strict=True)]
    )
    fixed = np.where(graph, 0.04, 0.30)  # eager pays every kernel launch
    score = (fixed + tokens * 2.5e-4) * factor * per_row
    spread = np.where(graph, 0.010, 0.012) * rng.uniform(0.7, 1.3, len(template))
    out = Truth(template, score, spread)
    lb = out.launch_bound
    spread[lb] = rng.uniform(0.3, 0.8, int(lb.sum()))
    return out


def _version_shift(t: Truth, version: str) -> np.ndarray:
    """The real changes of the history (module docstring), as score factors."""
    number = int(version.rsplit("rc", 1)[1])
    backend = t.template[C.BACKEND].to_numpy(dtype=object)
    graph = t.template[C.CUDA_GRAPH].to_numpy(dtype=bool)
    tokens = t.template[C.NUM_TOKENS].to_numpy(dtype=np.int64)
    shift = np.ones(len(t.template))
    if number < 23:
        shift[(backend == "CUTLASS") & graph & (tokens >= 64)] /= 0.85
    if number < 25:
        shift[backend == "CUTEDSL"] /= 1.08
    return shift


def run_frame(
    t: Truth, run_id: int, version: str, date: str, rng: np.random.Generator
) -> pd.DataFrame:
    """One run of ``version``: the true scores with one draw of run-to-run noise."""
    frame = t.template.copy()
    score = t.score * _version_shift(t, version) * np.exp(rng.normal(0.0, t.spread))
    frame[C.RUN_ID] = run_id
    frame[C.TRTLLM_VERSION] = version
    frame[C.TRTLLM_COMMIT] = f"c{run_id:05d}"
    frame[C.RUN_DATE] = date
    frame[C.CANDIDATE_INDEX] = np.arange(len(frame))
    for col, factor in (
        (C.SCORE_MS, 1.0),
        (C.RAW_SCORE_MS, 1.01),
        (C.ITER_MEAN_MS, 1.01),
        (C.ITER_MEDIAN_MS, 1.0),
        (C.ITER_MIN_MS, 0.985),
        (C.ITER_MAX_MS, 1.03),
        (C.ITER_P90_MS, 1.01),
        (C.ITER_STDEV_MS, 0.008),
    ):
        frame[col] = score * factor
    return frame


def history_runs(t: Truth, seed: int = 0) -> list[pd.DataFrame]:
    """The runs of :data:`HISTORY` (one each) then of :data:`BASE` (:data:`BASE_RUNS`),
    run ids 1.. in that order, dated a week apart."""
    rng = np.random.default_rng(1000 + seed)
    names = [*HISTORY, *([BASE] * BASE_RUNS)]
    days = pd.date_range("2026-06-01", periods=len(names), freq="7D")
    return [
        run_frame(t, i + 1, v, str(d.date()), rng)
        for i, (v, d) in enumerate(zip(names, days, strict=True))
    ]


def head_run(
    t: Truth,
    seed: int = 0,
    *,
    slowdown: float = 1.0,
    backend: str = "TRTLLM",
    tokens: Collection[int] = (),
    run_id: int = 100,
) -> tuple[pd.DataFrame, np.ndarray]:
    """A re-run of the base software labelled :data:`HEAD`, every timing field of
    ``backend`` at ``tokens`` multiplied by ``slowdown``; with the mask of those rows."""
    frame = run_frame(t, run_id, HEAD, "2026-09-30", np.random.default_rng(5000 + seed))
    hit = (frame[C.BACKEND].to_numpy(dtype=object) == backend) & np.isin(
        frame[C.NUM_TOKENS].to_numpy(dtype=np.int64), list(tokens)
    )
    if slowdown != 1.0 and hit.any():
        for col in TIMING:
            values = frame[col].to_numpy(dtype=float).copy()
            values[hit] *= slowdown
            frame[col] = values
    return frame, hit


def as_sweep(frame: pd.DataFrame) -> Sweep:
    """One run frame of this module as a Sweep for ``Store.ingest``."""
    first = frame.iloc[0]
    run = sweeps.make_run(
        model=MODEL,
        hardware=HARDWARE,
        quant=QUANT,
        world_size=WORLD_SIZE,
        trtllm_version=str(first[C.TRTLLM_VERSION]),
        trtllm_commit=str(first[C.TRTLLM_COMMIT]),
        run_date=str(first[C.RUN_DATE]),
        synthetic=False,
    )
    return Sweep(key="", run=run, candidates=frame[list(C.CANDIDATE_COLUMNS)])
