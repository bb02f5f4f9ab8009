"""analysis/ is a leaf: no database, ingest, web or plotting imports (AST check)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FORBIDDEN = {"db", "ingest", "dashboard", "sqlalchemy", "fastapi", "dash", "plotly"}
ANALYSIS = Path(__file__).resolve().parent.parent / "analysis"


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", sorted(ANALYSIS.glob("*.py")), ids=lambda p: p.name)
def test_analysis_module_is_a_leaf(path: Path) -> None:
    assert not imported_roots(path) & FORBIDDEN


def test_checker_catches_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom db.store import Store\nimport plotly.express as px\n")
    assert imported_roots(bad) & FORBIDDEN == {"db", "plotly"}
