"""No read path loads every stored candidate: the read paths (service, api, dashboard,
the composition root) never call ``candidate_frame`` without a cell or run filter, and
the old whole-store frame is gone. Only the bulk export (``service/export.py``) may
stream everything, and it is listed here by name."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READ_PATHS = ("service", "api", "dashboard", "moedash")
BULK_EXPORT = {Path("service/export.py")}
BOUNDING = {"filters", "run_ids"}


def _sources() -> list[Path]:
    return sorted(p for d in READ_PATHS for p in (ROOT / d).rglob("*.py"))


def unbounded_reads(source: str) -> list[int]:
    """Line numbers of ``candidate_frame(...)`` calls without ``filters=`` or
    ``run_ids=`` (a ``**kwargs`` call counts as unbounded: nobody can tell) and of any
    mention of ``all_frame``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute | ast.Name):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name == "all_frame":
                lines.append(node.lineno)
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name != "candidate_frame":
            continue
        given = {k.arg for k in node.keywords}
        if None in given or not given & BOUNDING:
            lines.append(node.lineno)
    return sorted(lines)


def test_the_check_finds_whole_store_reads() -> None:
    bad = (
        "store.candidate_frame(columns=COLS)\n"
        "data.all_frame()\n"
        "store.candidate_frame(**kw)\n"
        "store.candidate_frame(filters={'model': 'x'})\n"
        "store.candidate_frame(run_ids=[1])\n"
    )
    assert unbounded_reads(bad) == [1, 2, 3]


def test_no_read_path_loads_every_candidate() -> None:
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in _sources()
        if path.relative_to(ROOT) not in BULK_EXPORT
        and (lines := unbounded_reads(path.read_text()))
    }
    assert offenders == {}, "these read every candidate: pass a cell's filters or run ids"
