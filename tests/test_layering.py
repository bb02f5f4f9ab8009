"""The arrows of the layout, checked by import-linter's contracts (pyproject.toml
``[tool.importlinter]``), the same check ``make lint`` runs.

The contracts must all be kept on the repository, and each kind of forbidden arrow
planted in a copy of the packages must break the contract that names it (so a contract
that silently checks nothing, e.g. one that skips ``analysis/planner``, fails here).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "ingest", "db", "service", "api", "dashboard", "moedash")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

LEAF = "analysis is a leaf: no database, web or UI libraries (planner included)"
DRIVERS = "Only db imports the database drivers and sqlalchemy"
LAYERS = "Layers: moedash > api | dashboard > service > db > ingest > analysis"
INGEST = "ingest is bytes to records: no HTTP, no Dash"
SERVICE = "service serves both front ends and knows neither HTTP nor Dash"
DASHBOARD = "The dashboard reads through service and analysis only"


def contract_names() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the packages under ``root``, with that root's pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_contract_is_kept_on_the_repository() -> None:
    names = contract_names()
    assert set(names) == {LEAF, DRIVERS, LAYERS, INGEST, SERVICE, DASHBOARD}
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in names:
        assert f"{name} KEPT" in result.stdout, name
    assert f"Contracts: {len(names)} kept, 0 broken." in result.stdout


@pytest.fixture(scope="module")
def pristine_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages and pyproject.toml copied once (no caches, no bytecode)."""
    root = tmp_path_factory.mktemp("pristine")
    for name in PACKAGES:
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(
    ("module", "line", "broken", "arrow"),
    [
        # the planner was once skipped by an AST check: it is part of the leaf now
        ("analysis/planner/search.py", "import sqlalchemy", {LEAF, DRIVERS},
         "analysis.planner.search -> sqlalchemy"),
        ("analysis/planner/catalog.py", "from db import store", {LEAF, LAYERS},
         "analysis.planner.catalog -> db.store"),
        ("analysis/tree.py", "import duckdb", {LEAF, DRIVERS}, "analysis.tree -> duckdb"),
        # indirect arrows count: service reaches plotly through analysis.pareto
        ("analysis/pareto.py", "import plotly", {LEAF, SERVICE}, "analysis.pareto -> plotly"),
        ("ingest/detect.py", "import fastapi", {INGEST}, "ingest.detect -> fastapi"),
        ("service/frames.py", "import moedash.settings", {LAYERS},
         "service.frames -> moedash.settings"),
        ("dashboard/app.py", "import api.app", {LAYERS}, "dashboard.app -> api.app"),
        ("api/app.py", "import dashboard.app", {LAYERS}, "api.app -> dashboard.app"),
        ("dashboard/app.py", "import db.store", {DASHBOARD}, "dashboard.app -> db.store"),
        ("service/frames.py", "import dash", {SERVICE}, "service.frames -> dash"),
    ],
)  # fmt: skip
def test_a_planted_import_breaks_its_contract(
    pristine_copy: Path, tmp_path: Path, module: str, line: str, broken: set[str], arrow: str
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(pristine_copy, root)
    target = root / module
    assert target.is_file(), module
    target.write_text(target.read_text() + f"\n{line}  # planted by test_layering\n")
    result = lint_imports(root)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    for name in contract_names():
        state = "BROKEN" if name in broken else "KEPT"
        assert f"{name} {state}" in out, (name, state, out)
    assert arrow in out, out  # the report names the planted line's module
