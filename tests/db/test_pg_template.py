"""The test suite's PostgreSQL template (tests/factories/stores.py): a schema filled by
replaying the migrated template's dump is the schema the migrations make -- tables,
columns, indexes, constraints, sequences and the rows they seed, as ``pg_dump`` sees
them -- and a store opens on it at the newest revision."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from db.store import open_store
from tests.conftest import PG_URL, _pg_schema
from tests.factories.stores import PgTemplate

pytestmark = pytest.mark.postgres


@pytest.fixture
def two_schemas() -> Iterator[tuple[str, str]]:
    migrated, filled = _pg_schema(), _pg_schema()
    yield next(migrated), next(filled)
    for gen in (migrated, filled):
        next(gen, None)  # drops the schema


def test_a_filled_schema_is_the_migrated_schema(two_schemas: tuple[str, str]) -> None:
    migrated, filled = two_schemas
    template = PgTemplate(PG_URL)
    open_store(migrated).close()  # every migration, as a deployment runs them
    assert template.fill(filled)
    assert template.dump(filled) == template.dump(migrated)
    store = open_store(filled, upgrade=False)
    try:
        assert store.schema_version() == open_store(migrated, upgrade=False).schema_version() > 0
    finally:
        store.close()


def test_a_schema_that_is_not_empty_is_left_to_the_migrations(
    two_schemas: tuple[str, str],
) -> None:
    _, target = two_schemas
    open_store(target).close()
    assert not PgTemplate(PG_URL).fill(target)  # the replay fails and is rolled back
