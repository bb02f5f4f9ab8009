"""Stores with a known answer for the service and parity tests."""

from __future__ import annotations

from analysis import columns as C
from db.store import Store
from ingest.records import Sweep, UploadMeta
from service.frames import Cell
from tests import factories
from tests.factories import sweeps

PARITY_CELL = Cell("deepseek_v4_pro", "GB300", "NVFP4")


def tie_sweep() -> Sweep:
    """World size 8, decode, attention DP, measured at 64 and 256 tokens only: TRTLLM
    wins at 64 (0.5 ms vs 0.7), MEGAMOE_CUTEDSL at 256 (0.9 ms vs 1.2). 128 lies at log2
    distance 1 from both."""
    rows = [
        {C.NUM_TOKENS: 64, C.BACKEND: "TRTLLM", C.SCORE_MS: 0.5},
        {C.NUM_TOKENS: 64, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 0.7},
        {C.NUM_TOKENS: 256, C.BACKEND: "TRTLLM", C.SCORE_MS: 1.2},
        {C.NUM_TOKENS: 256, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 0.9},
    ]
    frame = factories.make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)])
    run = sweeps.make_run(world_size=8, synthetic=False, trtllm_version="v1.3.0rc26")
    return Sweep(key="", run=run, candidates=frame[list(C.CANDIDATE_COLUMNS)])


def seed_tie_sweep(store: Store) -> int:
    """Store :func:`tie_sweep`; returns its run id."""
    result = store.ingest([tie_sweep()], b"tie-sweep", UploadMeta(hardware="GB300"))
    return result.runs[0].run_id


def upload_generated(store: Store, cell: Cell, seed: int) -> int:
    """Store one generated 24-candidate sweep of ``cell`` (distinct bytes per seed);
    returns its run id."""
    sweep = sweeps.make_sweep(
        24, seed=seed, model=cell.model, hardware=cell.hardware, quant=cell.quant
    )
    result = store.ingest(
        [sweep], f"{cell.key}-{seed}".encode(), UploadMeta(hardware=cell.hardware)
    )
    return result.runs[0].run_id
