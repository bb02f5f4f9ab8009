"""DuckDB files for tests, copied from templates instead of built per test.

Opening a fresh DuckDB file runs every migration (0.1 s on a quiet machine, 0.5-1 s
under a loaded test run); many tests then seed the same rows into it. A template is
built once per test process (per xdist worker) and copied per test: the copy is a
real, separate database file, so every test still owns its data and may write to it.
A copy is at the schema head, so it opens without running the (no-op) upgrade.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from db.store import Store, open_store


class DuckDBTemplates:
    """Migrated (and optionally seeded) DuckDB files kept in ``root``, one per name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._built: dict[str, Path] = {}

    def _template(self, name: str, seed: Callable[[Store], object] | None) -> Path:
        with self._lock:
            path = self._built.get(name)
            if path is None:
                path = self.root / f"{name}.duckdb"
                store = open_store(f"duckdb:///{path}")
                try:
                    if seed is not None:
                        seed(store)
                finally:
                    store.close()
                self._built[name] = path
            return path

    def copy(
        self, dest: Path, *, name: str = "empty", seed: Callable[[Store], object] | None = None
    ) -> str:
        """A DuckDB URL for ``dest``, a copy of template ``name`` (built on first use by
        migrating an empty file and calling ``seed`` on it). A name means one seed: two
        callers with different seeds must use different names."""
        shutil.copyfile(self._template(name, seed), dest)
        return f"duckdb:///{dest}"

    def open(
        self, dest: Path, *, name: str = "empty", seed: Callable[[Store], object] | None = None
    ) -> Store:
        """The store on a fresh copy (see :meth:`copy`), already at the schema head."""
        return open_store(self.copy(dest, name=name, seed=seed), upgrade=False)
