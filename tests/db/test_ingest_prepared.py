"""Store.ingest_prepared (an upload parsed and prepared in a parse-pool worker,
db.prepared) against Store.ingest (parsed in the server): the same rows, the same raw
bytes, the same run identity. Real databases: DuckDB files, and (marker postgres) a
PostgreSQL schema."""

from __future__ import annotations

import pickle
from pathlib import Path

import pandas as pd
import pyarrow as pa

from db.prepared import PreparedUpload, prepare_upload
from db.store import Store, open_store
from ingest.records import Sweep, UploadMeta
from tests.factories.sweeps import make_sweep
from tests.factories.upload_reports import stored_run

META = UploadMeta(hardware="GB300", trtllm_version="v1.3.0rc26")


def _prepared(sweeps: list[Sweep], raw: bytes, *, arrow: bool) -> PreparedUpload:
    """As a worker makes it, and through pickle as it crosses the pipe."""
    upload = prepare_upload(raw, sweeps, arrow=arrow)
    out: PreparedUpload = pickle.loads(pickle.dumps(upload, protocol=5))
    return out


def test_prepared_upload_stores_what_ingest_stores(tmp_path: Path) -> None:
    sweeps = [make_sweep(30, seed=3), make_sweep(12, seed=4, key="b")]
    raw = b'{"the": "bytes"}'
    results = []
    for name, arrow in (("ingest", None), ("arrow", True), ("frame", False)):
        store = open_store(f"duckdb:///{tmp_path / name}.duckdb")
        try:
            if arrow is None:
                result = store.ingest(sweeps, raw, META, uploaded_by="ci")
            else:
                result = store.ingest_prepared(
                    _prepared(sweeps, raw, arrow=arrow), META, uploaded_by="ci"
                )
            results.append((result.sha256, [stored_run(store, r.run_id) for r in result.runs]))
        finally:
            store.close()
    (sha, expected), *others = results
    for other_sha, got in others:
        assert other_sha == sha
        for (run_a, cands_a, raw_a), (run_b, cands_b, raw_b) in zip(expected, got, strict=True):
            assert run_a == run_b and raw_a == raw_b == raw
            pd.testing.assert_frame_equal(cands_a, cands_b)


def test_prepared_and_in_process_agree_on_identity(store: Store) -> None:
    sweep = make_sweep(25, seed=7)
    arrow = store.dialect == "duckdb"
    prepared = _prepared([sweep], b"first bytes", arrow=arrow)
    if arrow:
        assert isinstance(prepared.sweeps[0].rows, pa.Table)
    first = store.ingest_prepared(prepared, META, uploaded_by="ci")
    assert not first.already_existed and first.runs[0].created
    # the same measurements in other bytes, parsed in the server: the same run
    second = store.ingest([sweep], b"other bytes", META, uploaded_by="ci")
    assert second.same_measurements_other_bytes and second.runs[0].run_id == first.runs[0].run_id
    # the same bytes prepared again: already stored, a sighting
    again = store.ingest_prepared(_prepared([sweep], b"first bytes", arrow=arrow), META)
    assert again.already_existed and again.runs[0].run_id == first.runs[0].run_id
    assert store.table_counts()["runs"] == 1
    assert store.list_candidates(first.runs[0].run_id).total == 25
    assert store.raw_upload(first.runs[0].run_id).content == b"first bytes"
