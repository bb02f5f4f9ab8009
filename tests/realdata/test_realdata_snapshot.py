"""``make snapshot`` reproduces the committed ``data/published/`` from ../shared/data."""

from __future__ import annotations

import pytest

from ingest.snapshot import SNAPSHOT_DIR, build_snapshot
from tests.realdata import require, shared_data_dir

pytestmark = [pytest.mark.realdata]


def test_snapshot_script_reproduces_the_committed_files() -> None:
    files = build_snapshot(require(shared_data_dir()))
    committed = {str(p.relative_to(SNAPSHOT_DIR)) for p in SNAPSHOT_DIR.rglob("*") if p.is_file()}
    assert committed == set(files)
    differing = [name for name, raw in files.items() if (SNAPSHOT_DIR / name).read_bytes() != raw]
    assert differing == []
