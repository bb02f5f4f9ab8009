"""No import circle between our modules, type-checking imports included: a circle (as
``db.prepared`` <-> ``db.uploads`` was) makes the import order matter and a module
impossible to understand on its own. Checked on the graph import-linter builds (grimp)."""

from __future__ import annotations

import grimp

PACKAGES = ("analysis", "ingest", "db", "service", "api", "dashboard", "moedash")


def test_no_module_imports_itself_through_another() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False)
    circles = []
    for module in sorted(graph.modules):
        if "." not in module:
            continue  # a package's __init__ re-exports its children by design
        for imported in graph.find_modules_directly_imported_by(module):
            if imported == module or "." not in imported:
                continue
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                circles.append(" -> ".join((module, *back)))
    assert not circles, "import circles:\n" + "\n".join(sorted(set(circles)))
