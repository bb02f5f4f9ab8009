"""db.capabilities on DuckDB and PostgreSQL: successful measurements per hardware x world
size x quant x backend x comm, equal to the pure aggregate over the same candidates."""

from __future__ import annotations

import pandas as pd

from analysis import columns as C
from analysis.capabilities import CAPABILITY_COLUMNS, measured_capabilities
from db.store import Store
from ingest.records import Sweep, UploadMeta
from tests import factories
from tests.factories import sweeps


def _sweep(hardware: str, ws: int, rows: list[dict[str, object]]) -> Sweep:
    frame = factories.make_candidates(
        [{C.CANDIDATE_INDEX: i, C.WORLD_SIZE: ws, **r} for i, r in enumerate(rows)]
    )
    meta = sweeps.make_run(model="deepseek_v4_pro", hardware=hardware, quant="NVFP4", world_size=ws)
    return Sweep(key="", run=meta, candidates=frame[list(C.CANDIDATE_COLUMNS)])


def test_measured_counts_successes_per_backend_and_comm(store: Store) -> None:
    b300 = _sweep(
        "B300",
        8,
        [
            {C.BACKEND: "CUTLASS", C.COMM: "NVLINK_ONE_SIDED", C.SCORE_MS: 1.0},
            {C.BACKEND: "CUTLASS", C.COMM: "NVLINK_ONE_SIDED", C.SCORE_MS: 1.1, C.NUM_TOKENS: 64},
            {C.BACKEND: "CUTLASS", C.COMM: "DEEPEP", C.STATUS: "failed"},
            {C.BACKEND: "TRTLLM", C.COMM: "ALLGATHER", C.SCORE_MS: 2.0},
        ],
    )
    store.ingest([b300], b"caps-1", UploadMeta(hardware="B300"))
    got = store.capabilities.measured()
    assert tuple(got.columns) == CAPABILITY_COLUMNS
    rows = {tuple(r[:5]): (r[5], r[6]) for r in got.itertuples(index=False)}
    assert rows == {
        ("B300", 8, "NVFP4", "CUTLASS", "NVLINK_ONE_SIDED"): (2, 1),
        ("B300", 8, "NVFP4", "TRTLLM", "ALLGATHER"): (1, 1),
    }  # the failed DEEPEP row proves nothing
    frame = b300.candidates.assign(
        **{C.HARDWARE: "B300", C.QUANT: "NVFP4", C.RUN_ID: 1, C.WORLD_SIZE: 8}
    )
    pd.testing.assert_frame_equal(got, measured_capabilities(frame))


def test_empty_store_has_no_capabilities(store: Store) -> None:
    assert store.capabilities.measured().empty


def test_runs_add_up_and_a_deleted_run_takes_its_capabilities_with_it(store: Store) -> None:
    ids = []
    for score in (1.0, 1.5):  # two sweeps (other measurements, so not one stored run)
        row = {C.BACKEND: "cutlass", C.COMM: None, C.SCORE_MS: score}
        sweep = _sweep("b300", 4, [row, {**row, C.NUM_TOKENS: 64}])
        ids.append(store.ingest([sweep], f"caps-{score}".encode(), UploadMeta()).runs[0].run_id)
    got = store.capabilities.measured()
    # upper-cased hardware and backend, no comm recorded: AUTO; two runs, four rows
    assert [tuple(r) for r in got.itertuples(index=False)] == [
        ("B300", 4, "NVFP4", "CUTLASS", "AUTO", 4, 2)
    ]
    store.delete_run(ids[0])
    assert [tuple(r)[5:] for r in store.capabilities.measured().itertuples(index=False)] == [(2, 1)]
