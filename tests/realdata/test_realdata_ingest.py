"""Real-data tier: NVIDIA's published MoE Perf Dashboard sweeps through the CLI into a
real DuckDB file, and again as CSVs (the same measurements: no new runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import columns as C
from db.store import open_store
from moedash.cli import main
from tests.realdata import shared_data_dir

pytestmark = pytest.mark.realdata

DASH = shared_data_dir() / "nvidia_moe_dashboard"


@pytest.fixture
def dash_dir() -> Path:
    if not DASH.is_dir():
        pytest.fail(f"real data not found at {DASH} (set MOEDASH_SHARED_DATA)")
    return DASH


def test_import_all_dashboard_data(dash_dir: Path, tmp_path: Path) -> None:
    url = f"duckdb:///{tmp_path / 'real.duckdb'}"
    assert main(["ingest", str(dash_dir / "data.js"), "--db", url]) == 0
    store = open_store(url)
    counts = store.table_counts()
    assert counts["candidates"] == 3360
    runs = store.list_runs(limit=1000).items
    # one run per (model, precision, hardware, world size)
    assert (
        counts["runs"]
        == len(runs)
        == runs[["model", "quant", "hardware", "world_size"]].drop_duplicates().shape[0]
    )
    assert set(runs["model"]) == {"deepseek_v4_pro", "glm_5", "kimi_k2"}
    assert set(runs["hardware"]) == {"B300", "GB300"}
    assert set(runs["quant"]) == {"NVFP4", "W4A8_MXFP4_MXFP8"}
    assert set(runs["world_size"]) <= {4, 8, 16, 32}
    assert not runs["synthetic"].any()

    frame = store.candidate_frame(
        filters={
            C.MODEL: "glm_5",
            C.QUANT: "NVFP4",
            C.HARDWARE: "GB300",
            C.WORLD_SIZE: 4,
            C.NUM_TOKENS: 1,
            C.CUDA_GRAPH: True,
            C.ATTN: "D",
            C.SOURCE_RANK: 1,
        }
    )
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row[C.BACKEND] == "MEGAMOE_CUTEDSL" and row[C.COMM] == "NONE"
    assert row[C.SCORE_MS] == pytest.approx(0.0672523629936305, rel=1e-12)
    assert row[C.NUM_EXPERTS] == 256 and row[C.TOP_K] == 8
    store.close()

    csvs = sorted((dash_dir / "csv").glob("*/*/*.csv"))
    assert len(csvs) == 12
    assert main(["ingest", *map(str, csvs), "--db", url]) == 0
    store = open_store(url)
    assert store.table_counts()["candidates"] == 3360  # same measurements, no new rows
    store.close()
