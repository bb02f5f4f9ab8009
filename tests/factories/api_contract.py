"""A store holding something for every read route (tests/api/test_schema_fuzz.py, the
OpenAPI examples' check): the dashboard's known sweep and a synthetic cell, four runs over
three TensorRT-LLM versions (compare, history), a balanced and a skewed run (routing skew),
and the serving-config fixture tree imported (crossval)."""

from __future__ import annotations

from pathlib import Path

from db.store import Store
from service.crossval_import import import_serving_files
from tests.factories.dashboard import seed_store
from tests.factories.routing import seed_skew
from tests.factories.version_sweeps import seed_versions

SERVING = Path(__file__).resolve().parents[1] / "fixtures" / "serving"


def serving_files() -> dict[str, bytes]:
    """Every YAML of the serving fixture tree, keyed by its path under the tree."""
    return {
        str(p.relative_to(SERVING)): p.read_bytes()
        for p in sorted(SERVING.rglob("*"))
        if p.suffix in (".yaml", ".yml")
    }


def seed_every_route(store: Store) -> dict[str, int]:
    """Seed ``store`` (see the module docstring); returns the run ids by name."""
    ids = {**seed_store(store), **seed_versions(store), **seed_skew(store)}
    import_serving_files(store, serving_files(), "tests.factories.api_contract")
    return ids
