"""Fixtures the dashboard page tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from db.store import Store
from tests.factories.stores import DuckDBTemplates


@pytest.fixture
def duck(tmp_path: Path, duckdb_templates: DuckDBTemplates) -> Iterator[Store]:
    """An empty DuckDB store in a file under ``tmp_path`` (a copy of the migrated
    template), closed after the test."""
    s = duckdb_templates.open(tmp_path / "x.duckdb")
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def module_duck(
    tmp_path_factory: pytest.TempPathFactory, duckdb_templates: DuckDBTemplates
) -> Iterator[Store]:
    """An empty DuckDB store shared by one module's tests, for modules that seed it once
    in a module-scoped fixture and then only read it."""
    s = duckdb_templates.open(tmp_path_factory.mktemp("module-duck") / "x.duckdb")
    try:
        yield s
    finally:
        s.close()
