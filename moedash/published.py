"""Load the published-data snapshot (``ingest.snapshot``) into a store.

What ``moedash serve`` puts in an empty database: NVIDIA's published bench_moe sweeps,
stored through the same parser and ``Store.ingest`` as an upload of those CSVs (not
synthetic; notes say "published (NVIDIA)"), then the InferenceX / srt-slurm serving
import and its cross-validation ledger, as ``moedash import-serving`` stores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from db.store import Store
from ingest.nvidia_dashboard import (
    DEFAULT_TRTLLM_VERSION,
    dashboard_csv_identity,
    parse_dashboard_csv,
)
from ingest.records import UploadMeta
from ingest.snapshot import PUBLISHED_NOTE, SNAPSHOT_DIR, nvidia_csv_files, read_serving
from service.crossval import full_ledger

UPLOADED_BY = "published-snapshot"


@dataclass(frozen=True)
class PublishedLoad:
    """What one load stored: candidates and runs of the NVIDIA sweeps, serving workloads."""

    n_candidates: int
    n_runs: int
    n_workloads: int


def load_published(store: Store, snapshot: Path = SNAPSHOT_DIR) -> PublishedLoad:
    """Store every NVIDIA CSV of the snapshot and its serving import (idempotent: the
    same bytes are stored once, the same serving content hash is imported once), then
    compute the stored cross-validation ledger. A missing snapshot stores nothing."""
    n_candidates = n_runs = 0
    for path in nvidia_csv_files(snapshot):
        model, precision, hardware = dashboard_csv_identity(path)
        raw = path.read_bytes()
        filename = f"{model}/{precision}/{hardware}.csv"  # relative: no server path shown
        meta = UploadMeta(
            hardware=hardware,
            trtllm_version=DEFAULT_TRTLLM_VERSION,
            notes=PUBLISHED_NOTE,
            filename=filename,
        )
        sweeps = parse_dashboard_csv(raw, meta, model, precision, hardware)
        result = store.ingest(sweeps, raw, meta, uploaded_by=UPLOADED_BY)
        n_candidates += result.n_candidates
        n_runs += len(result.runs)
    serving = read_serving(snapshot)
    n_workloads = 0
    if serving is not None:
        stored = store.crossval.import_serving(
            serving.points, serving.workloads, serving.content_hash, serving.source
        )
        n_workloads = stored.n_workloads
        full_ledger(store)  # computed once here; page views only read it
    return PublishedLoad(n_candidates, n_runs, n_workloads)
