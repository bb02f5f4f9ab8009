"""Fixtures the dashboard page tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from db.store import Store, open_store


@pytest.fixture
def duck(tmp_path: Path) -> Iterator[Store]:
    """An empty DuckDB store in a file under ``tmp_path``, closed after the test."""
    s = open_store(f"duckdb:///{tmp_path}/x.duckdb")
    try:
        yield s
    finally:
        s.close()
