"""The published-data snapshot (``data/published/``) on first start (default suite: reads
only the committed snapshot, never ../shared). Reproduction from ../shared/data is in
tests/realdata/test_realdata_snapshot.py."""

from __future__ import annotations

from pathlib import Path

import httpx
import pandas as pd

from db.store import open_store
from ingest.snapshot import (
    NOTICE_FILE,
    SNAPSHOT_DIR,
    SOURCES,
    nvidia_csv_files,
    read_serving,
)
from moedash.cli import main
from moedash.published import UPLOADED_BY, load_published
from tests.factories.servers import running_server

MAX_SNAPSHOT_BYTES = 3_000_000  # "a few MB at most" (issue 13)


def test_snapshot_is_committed_small_and_attributed() -> None:
    files = [p for p in SNAPSHOT_DIR.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < MAX_SNAPSHOT_BYTES
    assert len(nvidia_csv_files()) == 12  # 3 models x 2 precisions x 2 systems
    notice = (SNAPSHOT_DIR / NOTICE_FILE).read_text()
    assert "Apache License, Version 2.0" in notice
    for source in SOURCES:
        assert source["commit"] in notice and source["repository"] in notice
    serving = read_serving()
    assert serving is not None and len(serving.points) > 0 and len(serving.workloads) > 0


def test_serve_on_an_empty_database_loads_the_published_snapshot(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 'fresh.duckdb'}"
    with running_server(url, demo=True, timeout=120) as base:
        runs = httpx.get(f"{base}/api/v1/runs", params={"limit": 1000}, timeout=30).json()
        imports = httpx.get(f"{base}/api/v1/serving-configs", timeout=30).json()
        ledger = httpx.get(f"{base}/api/v1/crossval/ledger", timeout=60).json()
    assert runs["total"] == 48  # 12 files, one run per world size
    items = pd.DataFrame(runs["items"])
    assert not items["synthetic"].any()
    assert set(items["source_format"]) == {"nvidia_dashboard"}
    assert items["notes"].str.startswith("published (NVIDIA)").all()
    assert set(items["model"]) == {"deepseek_v4_pro", "glm_5", "kimi_k2"}
    assert len(imports["items"]) == 1
    # cross-validation has content: workloads compared against a published candidate
    statuses = pd.DataFrame(ledger["items"])["crossval_status"].value_counts()
    assert statuses.get("Match", 0) > 0 and statuses.get("Mismatch", 0) > 0
    store = open_store(url)
    try:
        assert store.table_counts()["candidates"] == 3360
    finally:
        store.close()


def test_serve_no_demo_leaves_the_database_empty(tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 'empty.duckdb'}"
    with running_server(url, demo=False) as base:
        runs = httpx.get(f"{base}/api/v1/runs", timeout=30).json()
    assert runs["total"] == 0


def test_load_published_is_idempotent_and_names_files_relatively(tmp_path: Path) -> None:
    store = open_store(f"duckdb:///{tmp_path / 's.duckdb'}")
    try:
        first = load_published(store)
        counts = store.table_counts()
        second = load_published(store)
        assert first == second and store.table_counts() == counts
        runs = store.list_runs(limit=1000).items
        assert len(runs) == first.n_runs == 48
        # relative keys: <model>/<precision>/<hardware>.csv#ws=N, never a server path
        assert (
            runs["sweep_key"].str.match(r"^[a-z0-9_]+/[A-Za-z0-9_]+/[A-Z0-9]+\.csv#ws=\d+$").all()
        )
    finally:
        store.close()
    assert UPLOADED_BY == "published-snapshot"


def test_missing_snapshot_loads_nothing(tmp_path: Path) -> None:
    store = open_store(f"duckdb:///{tmp_path / 's.duckdb'}")
    try:
        assert load_published(store, tmp_path / "none").n_runs == 0
        assert store.table_counts()["runs"] == 0
    finally:
        store.close()


def test_demo_defaults_to_published_and_synthetic_on_request(tmp_path: Path) -> None:
    published = f"duckdb:///{tmp_path / 'p.duckdb'}"
    synthetic = f"duckdb:///{tmp_path / 'syn.duckdb'}"
    assert main(["demo", "--db", published]) == 0
    assert main(["demo", "--synthetic", "--db", synthetic]) == 0
    for url, expect_synthetic in ((published, False), (synthetic, True)):
        store = open_store(url)
        try:
            runs = store.list_runs(limit=1000).items
        finally:
            store.close()
        assert len(runs) > 0
        assert bool(runs["synthetic"].all()) is expect_synthetic
        assert bool(runs["synthetic"].any()) is expect_synthetic
