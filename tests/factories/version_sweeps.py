"""Sweeps of one slice under three TensorRT-LLM versions with known changes (our values).

Slice deepseek_v4_pro · GB300 · NVFP4, world size 8, DEP (EP 8), balanced routing.
Versions ``1.2.0rc9`` (one run, 2026-08-01), ``1.2.0rc27`` (two repeat runs, 2026-09-01
and 2026-09-02) and ``1.2.0rc28`` (one run, 2026-09-15): version-number order puts rc9
first although "rc9" > "rc27" as text. Every iteration spread is 0.5 % of the score.
Scores in ms ("F" failed, "S" skipped, "-" not measured):

========  ===================  ====  =========  =========  =====  ======================
tokens    configuration         rc9  rc27 a     rc27 b     rc28   rc27 -> rc28 verdict
========  ===================  ====  =========  =========  =====  ======================
256 dec   TRTLLM / NVL one      1.00  1.00       1.00       1.20   regression +20 %
256 dec   CUTEDSL / NVL one     1.10  1.10       1.10       1.10   unchanged (best now)
256 dec   CUTLASS / NVL two     1.30  1.30       1.30       F      new_failure
256 dec   TRTLLM / ALLGATHER    1.40  1.40       1.40       S      newly_skipped
4096 dec  TRTLLM / NVL one      2.00  2.00       2.00       1.80   improvement -10 %
4096 dec  CUTEDSL / NVL one     2.20  2.10       2.30       2.33   inconclusive: +5.9 % is
                                                                  inside the noise band
16384 pre TRTLLM / NVL one      8.00  8.00       8.00       8.20   unchanged (+2.5 %)
16384 pre CUTEDSL / NVL one     9.00  9.00       9.00       -      only_base
16384 pre MEGAMOE_CUTEDSL/NONE  -     -          -          9.00   only_head
========  ===================  ====  =========  =========  =====  ======================

rc27's CUTEDSL at 4096 pools 2.10 and 2.30: median 2.20, a run-to-run spread of
stdev/median = 0.1414/2.2 = 6.43 % from one degree of freedom: the noise model's band
(``analysis.noise``) is far wider than the +5.9 %. The best configuration changes at
256 tokens only (TRTLLM 1.00 -> CUTEDSL 1.10; the old best is 1.20 on rc28, so the new
best gains 1 - 1.10 / 1.20 = 8.33 %).

Decode frontier (tokens/s/GPU = num_tokens / (ms / 1000) / 8): rc27 (1.0 ms, 32000),
(2.0 ms, 256000); rc28 (1.1 ms, 29090.9), (1.8 ms, 284444.4).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis import columns as C
from db.store import Store
from ingest.records import Sweep, UploadMeta
from tests import factories
from tests.factories import sweeps

MODEL, HARDWARE, QUANT, WORLD_SIZE = "deepseek_v4_pro", "GB300", "NVFP4", 8
RC9, RC27, RC28 = "1.2.0rc9", "1.2.0rc27", "1.2.0rc28"
SLICE: dict[str, Any] = {
    "model": MODEL,
    "hardware": HARDWARE,
    "quant": QUANT,
    "world_size": WORLD_SIZE,
}
# (run name, version, run date)
RUNS: tuple[tuple[str, str, str], ...] = (
    ("rc9", RC9, "2026-08-01"),
    ("rc27a", RC27, "2026-09-01"),
    ("rc27b", RC27, "2026-09-02"),
    ("rc28", RC28, "2026-09-15"),
)
NVL1, NVL2 = "NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED"
Score = float | str | None
# (num_tokens, cuda_graph, backend, comm, scores per run in RUNS order)
ROWS: tuple[tuple[int, bool, str, str, tuple[Score, Score, Score, Score]], ...] = (
    (256, True, "TRTLLM", NVL1, (1.00, 1.00, 1.00, 1.20)),
    (256, True, "CUTEDSL", NVL1, (1.10, 1.10, 1.10, 1.10)),
    (256, True, "CUTLASS", NVL2, (1.30, 1.30, 1.30, "F")),
    (256, True, "TRTLLM", "ALLGATHER", (1.40, 1.40, 1.40, "S")),
    (4096, True, "TRTLLM", NVL1, (2.00, 2.00, 2.00, 1.80)),
    (4096, True, "CUTEDSL", NVL1, (2.20, 2.10, 2.30, 2.33)),
    (16384, False, "TRTLLM", NVL1, (8.00, 8.00, 8.00, 8.20)),
    (16384, False, "CUTEDSL", NVL1, (9.00, 9.00, 9.00, None)),
    (16384, False, "MEGAMOE_CUTEDSL", "NONE", (None, None, None, 9.00)),
)
# rc27 -> rc28 verdict counts (analysis.compare VERDICTS) and best changes
EXPECTED_COUNTS: dict[str, int] = {
    "regression": 1,
    "improvement": 1,
    "unchanged": 2,
    "inconclusive": 1,
    "new_failure": 1,
    "newly_skipped": 1,
    "recovered": 0,
    "still_unsuccessful": 0,
    "only_base": 1,
    "only_head": 1,
    "best_changed": 1,
}


def full_rows(run: int) -> pd.DataFrame:
    """Every column (run facts included, run_id ``run + 1``) of run ``run`` (index into
    :data:`RUNS`)."""
    _, version, date = RUNS[run]
    rows = []
    for tokens, graph, backend, comm, scores in ROWS:
        score = scores[run]
        if score is None:
            continue
        row: dict[str, Any] = {
            C.RUN_ID: run + 1,
            C.TRTLLM_VERSION: version,
            C.TRTLLM_COMMIT: f"c0ffee{run}",
            C.RUN_DATE: date,
            C.SYNTHETIC: False,
            C.CANDIDATE_INDEX: len(rows),
            C.MODEL: MODEL,
            C.WORLD_SIZE: WORLD_SIZE,
            C.BACKEND: backend,
            C.COMM: comm,
            C.PARALLEL_MODE: "DEP",
            C.NUM_TOKENS: tokens,
            C.CUDA_GRAPH: graph,
        }
        if score == "F":
            row.update(
                {
                    C.STATUS: "failed",
                    C.FAILURE_CATEGORY: "timed_phase_error",
                    C.SKIP_REASON: "timed phase error: CUDA error",
                }
            )
        elif score == "S":
            row.update({C.STATUS: "skipped", C.SKIP_REASON: "comm ALLGATHER not supported"})
        else:
            row[C.SCORE_MS] = float(score)
        rows.append(row)
    return factories.make_candidates(rows)


def candidates(run: int) -> pd.DataFrame:
    """The candidate frame (store columns) of run ``run`` (index into :data:`RUNS`)."""
    return full_rows(run)[list(C.CANDIDATE_COLUMNS)]


def version_sweeps() -> list[Sweep]:
    """One sweep per run of :data:`RUNS`, in that order."""
    out = []
    for i, (_, version, date) in enumerate(RUNS):
        run = sweeps.make_run(
            model=MODEL,
            hardware=HARDWARE,
            quant=QUANT,
            world_size=WORLD_SIZE,
            trtllm_version=version,
            trtllm_commit=f"c0ffee{i}",
            run_date=date,
            synthetic=False,
        )
        out.append(Sweep(key="", run=run, candidates=candidates(i)))
    return out


def seed_versions(store: Store, names: tuple[str, ...] | None = None) -> dict[str, int]:
    """Store the runs named in ``names`` (default all of :data:`RUNS`, in RUNS order),
    one upload each; returns {run name: run id}."""
    ids = {}
    for (name, _, _), sweep in zip(RUNS, version_sweeps(), strict=True):
        if names is not None and name not in names:
            continue
        res = store.ingest(
            [sweep],
            f"versions-{name}".encode(),
            UploadMeta(hardware=HARDWARE, filename=f"{name}.json"),
        )
        ids[name] = res.runs[0].run_id
    return ids


def frame(runs: tuple[str, ...]) -> pd.DataFrame:
    """The candidate frame (run columns included, run ids 1..4 in RUNS order) of the
    named runs, for analysis tests without a store."""
    parts = [full_rows(i) for i, (name, _, _) in enumerate(RUNS) if name in runs]
    return pd.concat(parts, ignore_index=True)
