"""DuckDB files for tests, copied from templates instead of built per test.

Opening a fresh DuckDB file runs every migration (0.1 s on a quiet machine, 0.5-1 s
under a loaded test run); many tests then seed the same rows into it. A template is
built once per test process (per xdist worker) and copied per test: the copy is a
real, separate database file, so every test still owns its data and may write to it.
A copy is at the schema head, so it opens without running the (no-op) upgrade.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg

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


PLACEHOLDER = "moedash_template_schema"


class PgTemplate:
    """A migrated PostgreSQL schema, replayed into a fresh test schema instead of running
    every migration again (0.05 s against 0.2-0.5 s a test under load).

    Built once per test process: a scratch schema is migrated by ``open_store``, dumped
    with ``pg_dump --schema`` (structure and rows, as INSERTs: ``alembic_version`` and
    what the migrations seed), and dropped; :meth:`fill` runs that script with the
    scratch schema's name replaced. Without ``pg_dump`` (or when it fails) a schema is
    migrated as before. tests/db/test_pg_template.py checks a filled schema equals a
    migrated one."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url  # postgresql://... (libpq form)
        self._lock = threading.Lock()
        self._script: tuple[str, str] | None = None
        self._failed = False

    def _build(self) -> tuple[str, str] | None:
        with self._lock:
            if self._script is None and not self._failed:
                name = "tmpl_" + uuid.uuid4().hex[:12]
                with psycopg.connect(self.admin_url, autocommit=True) as conn:
                    conn.execute(f"CREATE SCHEMA {name}")
                    try:
                        url = with_schema(self.admin_url, name)
                        open_store(url).close()
                        # the test's schema exists already (empty): everything but its creation
                        script = self.dump(url).replace(f"CREATE SCHEMA {PLACEHOLDER};", "")
                        self._script = (PLACEHOLDER, script)
                    except (OSError, subprocess.SubprocessError):
                        self._failed = True
                    finally:
                        conn.execute(f"DROP SCHEMA {name} CASCADE")
            return self._script

    def fill(self, url: str) -> bool:
        """Replay the migrated template into the (empty) schema ``url`` names; False when
        there is no template (the caller migrates)."""
        script = self._build()
        if script is None:
            return False
        template, sql = script
        schema = url.rsplit("search_path%3D", 1)[1]
        try:
            with psycopg.connect(self.admin_url) as conn:  # one transaction
                conn.execute(sql.replace(template, schema))
        except psycopg.Error:  # e.g. the schema was not empty: rolled back, migrate it
            return False
        return True

    def dump(self, url: str) -> str:
        """The schema ``url`` names as ``pg_dump`` writes it, its name replaced by
        :data:`PLACEHOLDER` (to replay it elsewhere, or compare two schemas)."""
        schema = url.rsplit("search_path%3D", 1)[1]
        out = subprocess.run(
            ["pg_dump", "--schema", schema, "--inserts", "--no-owner", "--no-privileges",
             "-d", self.admin_url],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout  # fmt: skip
        lines = [ln for ln in out.splitlines() if not ln.startswith("\\")]
        return "\n".join(lines).replace(schema, PLACEHOLDER)


def with_schema(url: str, schema: str) -> str:
    """``url`` with PostgreSQL's search_path set to ``schema``."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"
