"""Candidates whose export is awkward (our own values): a backend TensorRT-LLM does not
have (from another framework's sweep) and one measured outside the guide's coverage.

Cell glm_5 · H100 · NVFP4, world size 8, decode, DEP:
candidate 0 ``TORCH_BMM_PADDED`` (not a TensorRT-LLM MoE backend: no export),
candidate 1 ``TRTLLM`` (exportable, with warnings: not listed for SM90 x NVFP4 in the
guide's matrix, NVLINK_ONE_SIDED needs MNNVL, outside the guide's GB300/B300 coverage).
"""

from __future__ import annotations

from analysis import columns as C
from db.store import Store
from ingest.records import Sweep, UploadMeta
from service.frames import Cell
from tests import factories
from tests.factories import sweeps

CELL = Cell("glm_5", "H100", "NVFP4")


def seed_awkward_exports(store: Store) -> int:
    """Store the sweep; returns its run id."""
    rows = [
        {C.CANDIDATE_INDEX: 0, C.BACKEND: "TORCH_BMM_PADDED", C.SCORE_MS: 0.9},
        {C.CANDIDATE_INDEX: 1, C.BACKEND: "TRTLLM", C.SCORE_MS: 1.1},
    ]
    frame = factories.make_candidates(
        rows, model="glm_5", hardware="H100", num_experts=256, top_k=8, hidden_size=6144
    )
    run = sweeps.make_run(
        model="glm_5",
        hardware="H100",
        num_experts=256,
        top_k=8,
        hidden_size=6144,
        world_size=8,
        synthetic=False,
    )
    sweep = Sweep(key="", run=run, candidates=frame[list(C.CANDIDATE_COLUMNS)])
    res = store.ingest([sweep], b"awkward-exports", UploadMeta(hardware="H100"))
    return res.runs[0].run_id
