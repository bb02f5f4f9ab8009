"""The raw download of one run: exact bytes of a bench_moe upload, the run's own rows
of a dashboard-format upload."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from analysis import columns as C
from db.errors import NotFound
from db.store import Store
from ingest.detect import parse_upload
from ingest.nvidia_dashboard import CSV_COLUMNS
from ingest.records import UploadMeta
from service.raw_download import run_raw_download

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATAJS = FIXTURES / "dashboard" / "data.js"
CSV_FILE = FIXTURES / "dashboard" / "csv" / "tiny_moe" / "NVFP4" / "B300.csv"


def _ingest(store: Store, raw: bytes, filename: str) -> dict[tuple[str, int], int]:
    """Ingest ``raw``; {(model, world size): run id}."""
    meta = UploadMeta(filename=filename)
    got = store.ingest(parse_upload(raw, meta, filename), raw, meta)
    out = {}
    for ref in got.runs:
        run = store.get_run(ref.run_id)
        out[(str(run[C.MODEL]), int(run[C.WORLD_SIZE]))] = ref.run_id
    return out


def _rows(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode())))


def test_datajs_run_gives_only_its_rows_in_the_source_layout(store: Store) -> None:
    raw = DATAJS.read_bytes()
    runs = _ingest(store, raw, "/srv/ci/checkout/data.js")
    got = run_raw_download(store, runs[("tiny_moe", 8)])
    assert not got.whole_upload
    assert got.filename == "tiny_moe_NVFP4_B300_ws8.csv"
    assert got.media_type == "text/csv"
    assert len(got.content) < len(raw)
    header = got.content.decode().splitlines()[0].split(",")
    assert header == list(CSV_COLUMNS)
    rows = _rows(got.content)
    assert [(r["num_tokens"], r["backend"], r["score_ms"]) for r in rows] == [
        ("8", "CUTLASS", "0.08"),
        ("16", "MEGAMOE_DEEPGEMM", "0.09"),
    ]
    assert {r["world_size"] for r in rows} == {"8"}
    assert rows[0]["num_chunks"] == "2" and rows[1]["num_chunks"] == ""
    assert rows[0]["cuda_graph"] == "on"
    # the other world size's download holds the other three rows
    four = _rows(run_raw_download(store, runs[("tiny_moe", 4)]).content)
    assert [r["cuda_graph"] for r in four] == ["on", "on", "off"]


def test_datajs_rows_are_the_rows_the_run_stores(store: Store) -> None:
    runs = _ingest(store, DATAJS.read_bytes(), "data.js")
    run_id = runs[("glm_5", 16)]
    rows = _rows(run_raw_download(store, run_id).content)
    stored = store.list_candidates(run_id, limit=100).items
    assert len(rows) == len(stored) == store.get_run(run_id)["n_candidates"]
    assert [float(r["score_ms"]) for r in rows] == list(stored[C.SCORE_MS])


def test_dashboard_csv_run_gives_its_lines_unchanged(store: Store) -> None:
    raw = CSV_FILE.read_bytes()
    runs = _ingest(store, raw, "/home/me/csv/tiny_moe/NVFP4/B300.csv")
    got = run_raw_download(store, runs[("tiny_moe", 4)])
    lines = raw.decode().splitlines()
    assert got.content.decode().splitlines() == [lines[0], *lines[1:4]]
    assert got.filename == "tiny_moe_NVFP4_B300_ws4.csv"
    # the download is an upload of its own: same rows again
    again = parse_upload(got.content, UploadMeta(), "tiny_moe/NVFP4/B300.csv")
    assert [len(s.candidates) for s in again] == [3]


def test_bench_moe_run_gives_the_exact_bytes(store: Store) -> None:
    raw = (FIXTURES / "bench_moe_example.json").read_bytes()
    meta = UploadMeta(hardware="GB300", filename="/abs/path/out/report.json")
    run_id = store.ingest(parse_upload(raw, meta), raw, meta).runs[0].run_id
    got = run_raw_download(store, run_id)
    assert got.whole_upload
    assert got.content == raw
    assert got.filename == "report.json"
    assert got.media_type == "application/json"


def test_missing_run_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        run_raw_download(store, 999_999)


@pytest.fixture
def seeded(store: Store) -> Store:
    """A store holding the dashboard data.js fixture (read by the ``client`` fixture)."""
    _ingest(store, DATAJS.read_bytes(), "/srv/ci/data.js")
    return store


def test_api_serves_the_same_download(client: Any, seeded: Store) -> None:
    api = client
    for run_id in [int(r) for r in seeded.list_runs(limit=10).items[C.RUN_ID]]:
        want = run_raw_download(seeded, run_id)
        got = api.get(f"/api/v1/runs/{run_id}/raw")
        assert got.status_code == 200
        assert got.content == want.content
        assert got.headers["content-type"].startswith(want.media_type)
        assert got.headers["content-disposition"] == f'attachment; filename="{want.filename}"'
    assert api.get("/api/v1/runs/999999/raw").status_code == 404
