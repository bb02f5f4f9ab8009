"""Write (or check) ``docs/openapi.json``: the API's OpenAPI document as clients see it at
``/api/v1/openapi.json``, committed so that a change to it is reviewed like code.

Usage: ``python -m scripts.openapi_snapshot`` rewrites the file;
``python -m scripts.openapi_snapshot --check`` writes nothing and exits 1 (printing the
diff) when the app's document differs from it. ``tests/api/test_openapi_snapshot.py``
runs the same comparison in the default suite.
"""

from __future__ import annotations

import difflib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"
COMMAND = "python -m scripts.openapi_snapshot"


def render(document: dict[str, Any]) -> str:
    """The document as the committed text: sorted keys, two-space indent, UTF-8 kept."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def current_document() -> dict[str, Any]:
    """The app's OpenAPI document, built over an empty temporary DuckDB store (the
    document does not depend on what is stored)."""
    from api.app import create_api
    from api.config import ApiConfig
    from db.store import open_store

    with tempfile.TemporaryDirectory(prefix="moedash-openapi-") as tmp:
        store = open_store(f"duckdb:///{tmp}/openapi.duckdb", upgrade=False)
        try:
            return create_api(store, ApiConfig()).openapi()
        finally:
            store.close()


def changed_parts(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The operations and component schemas that differ: ``+`` added, ``-`` removed,
    ``~`` changed (e.g. ``~ GET /api/v1/runs``, ``+ schema Pareto``)."""

    def parts(doc: dict[str, Any]) -> dict[str, Any]:
        out = {
            f"{method.upper()} {path}": op
            for path, ops in doc.get("paths", {}).items()
            for method, op in ops.items()
        }
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            out[f"schema {name}"] = schema
        rest = {k: v for k, v in doc.items() if k not in ("paths", "components")}
        out["document info"] = rest
        return out

    old, new = parts(before), parts(after)
    lines = [f"- {k}" for k in old if k not in new]
    lines += [f"+ {k}" for k in new if k not in old]
    lines += [f"~ {k}" for k in new if k in old and old[k] != new[k]]
    return sorted(lines, key=lambda line: line[2:])


def difference(committed: str, current: str, max_lines: int = 120) -> str:
    """What changed ('' when nothing): the operations and schemas that differ, then a
    unified diff of the committed text against the current one, cut to ``max_lines``."""
    lines = list(
        difflib.unified_diff(
            committed.splitlines(),
            current.splitlines(),
            fromfile=str(SNAPSHOT.name) + " (committed)",
            tofile="/api/v1/openapi.json (current app)",
            lineterm="",
        )
    )
    if not lines:
        return ""
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... {len(lines) - max_lines} more diff lines"]
    try:
        summary = changed_parts(json.loads(committed or "{}"), json.loads(current))
    except json.JSONDecodeError:
        summary = ["(the committed file is not JSON)"]
    return "\n".join(["changed:", *summary, "", *lines])


def main(argv: list[str]) -> int:
    current = render(current_document())
    committed = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else ""
    if "--check" in argv:
        diff = difference(committed, current)
        if diff:
            print(diff)
            print(f"\nthe OpenAPI document changed: review the diff, then run `{COMMAND}`")
            return 1
        return 0
    SNAPSHOT.write_text(current, encoding="utf-8")
    print(f"wrote {SNAPSHOT} ({len(current)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
