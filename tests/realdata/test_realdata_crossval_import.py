"""`moedash import-serving` over the real InferenceX / srt-slurm data (tier ``realdata``).

The stored workloads must be exactly what ``analysis.serving_map`` computes from the same
directory; counts are those of tests/test_realdata_crossval.py (serving_configs.md (e)).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis import crossval_columns as cc
from analysis.serving_map import map_workloads
from db.store import open_store
from ingest.serving_configs import (
    ImportResult,
    import_directory,
    points_frame,
    recipe_configs,
)
from moedash.cli import main
from tests.realdata import shared_data_dir

pytestmark = [pytest.mark.realdata, pytest.mark.slow]


@pytest.fixture(scope="module")
def data_dir() -> Path:
    data = shared_data_dir()
    if not (data / "inferencex" / "configs" / "nvidia-master.yaml").is_file():
        pytest.fail(f"shared data not found at {data} (set MOEDASH_SHARED_DATA)")
    return data


@pytest.fixture(scope="module")
def parsed(data_dir: Path) -> ImportResult:
    return import_directory(data_dir)


@pytest.fixture(scope="module")
def expected(parsed: ImportResult) -> pd.DataFrame:
    return map_workloads(points_frame(parsed), recipe_configs(parsed))


def test_import_serving_matches_direct_mapping(
    db_url: str, data_dir: Path, expected: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import-serving", str(data_dir), "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "imported as import 1" in out
    for label, value in (("points", 4325), ("workloads", 8650), ("mappable", 1070)):
        assert any(line.split() == [label, str(value)] for line in out.splitlines()), (label, out)
    store = open_store(db_url)
    try:
        got = store.crossval.serving_workloads()
        counts = store.crossval.crossval_counts()
        imports = store.crossval.serving_imports()
    finally:
        store.close()
    assert (len(expected), int(expected[cc.MAPPABLE].sum())) == (8650, 1070)
    pd.testing.assert_frame_equal(got, expected)
    assert counts["serving_workloads"] == 8650
    row = imports.iloc[0]
    assert (row["n_entries"], row["n_points"], row["n_new_workloads"]) == (353, 4325, 8650)
    assert row["source"] == str(data_dir.resolve())


def test_second_import_from_default_dir_adds_nothing(
    tmp_path: Path,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"duckdb:///{tmp_path / 'real.duckdb'}"
    monkeypatch.setenv("MOEDASH_SHARED_DATA", str(data_dir))
    assert main(["import-serving", "--db", url]) == 0
    capsys.readouterr()
    assert main(["import-serving", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "already imported (nothing written)" in out
    assert any(line.split() == ["new", "0"] for line in out.splitlines())
    assert any(line.split() == ["existing", "8650"] for line in out.splitlines())
    store = open_store(url)
    try:
        assert store.crossval.crossval_counts()["serving_workloads"] == 8650
        assert len(store.crossval.serving_imports()) == 1
    finally:
        store.close()


def test_upload_of_the_real_tree_equals_the_directory_import(
    tmp_path: Path, data_dir: Path, parsed: ImportResult, expected: pd.DataFrame
) -> None:
    """POST /serving-configs with every YAML of the real tree (~1,800 parts) rebuilds the
    same directory: same content hash, same workloads."""
    from fastapi.testclient import TestClient

    from moedash.app import create_app
    from moedash.settings import Settings

    url = f"duckdb:///{tmp_path / 'upload.duckdb'}"
    roots = ("inferencex", "inferencex-1e53c97e", "srt-slurm")
    paths = sorted(
        p for r in roots for p in (data_dir / r).rglob("*") if p.suffix in (".yaml", ".yml")
    )
    files = [
        ("files", (str(p.relative_to(data_dir)), p.read_bytes(), "application/yaml")) for p in paths
    ]
    store = open_store(url)
    try:
        secret = store.tokens.create_token("ci", ["upload"])[1]
        settings = Settings(database_url=url, enable_dashboard=False)
        with TestClient(create_app(settings, store=store)) as client:
            resp = client.post(
                "/api/v1/serving-configs",
                files=files,
                headers={"Authorization": f"Bearer {secret}"},
            )
        assert resp.status_code == 201, resp.text[:500]
        body = resp.json()
        assert body["content_hash"] == parsed.content_hash
        assert (body["n_workloads"], body["n_mappable"]) == (8650, 1070)
        assert (body["n_recipes_resolved"], body["n_recipes_unresolved"]) == (1123, 18)
        pd.testing.assert_frame_equal(store.crossval.serving_workloads(), expected)
    finally:
        store.close()
