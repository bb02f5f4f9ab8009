"""Every component id a registered callback names exists in some page's layout.

Dash can check this itself, but the app switches the check off
(``suppress_callback_exceptions``: the router adds each page's components later), so a
renamed id would leave a callback that never fires and no error anywhere. This test puts
the check back: it lays out the shell and every page of the registry (with data, so the
pages draw their full controls, and the Run page for a stored run), adds the panels a
callback draws into a page (the Pareto point detail, the Run page's candidate grid), and
asks that each Input, State and Output id of every callback is among their ids
(pattern-matching ids by ``type``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from dash import html

from dashboard.app import create_dash, render_page, shell_layout
from dashboard.pages.pareto_detail import render_detail
from dashboard.pages.run import update_grid
from dashboard.registry import REGISTRY
from db.store import Store
from service.crossval import refresh_ledger
from service.crossval_import import import_serving_directory
from service.frames import Cell, DashData
from tests.api.test_api_crossval import FIXTURE, ingest_h200_candidates
from tests.factories.dashboard import seed_store

Ident = str | tuple[str, str]
KNOWN = Cell("deepseek_v4_pro", "GB300", "NVFP4")  # seed_store's known sweep


def _ids(layout: Any) -> set[Ident]:
    root = html.Div(layout)
    found: set[Ident] = set()
    for node in [root, *root._traverse()]:
        cid = getattr(node, "id", None)
        if isinstance(cid, dict):
            found.add(("pattern", str(cid.get("type"))))
        elif cid is not None:
            found.add(str(cid))
    return found


def _named(spec: str) -> Ident:
    """A callback's component id as :func:`_ids` records it (Dash keeps pattern ids as
    JSON text and suffixes duplicate outputs with ``@<hash>``)."""
    if spec.startswith("{"):
        return ("pattern", str(json.loads(spec).get("type")))
    return spec.split("@")[0]


def _callback_ids(app: Any) -> dict[Ident, int]:
    """{component id: index of the first callback naming it}."""
    named: dict[Ident, int] = {}
    for i, cb in enumerate(app._callback_list):
        # outputs: "id.prop" or, for several, "..id1.prop1...id2.prop2.."
        outputs = [part.rsplit(".", 1)[0] for part in cb["output"].strip(".").split("...")]
        for spec in [*outputs, *(d["id"] for d in [*cb["inputs"], *cb["state"]])]:
            named.setdefault(_named(spec), i)
    return named


@pytest.fixture(scope="module")
def seeded(module_duck: Store) -> tuple[DashData, int]:
    run_id = seed_store(module_duck)["known"]
    import_serving_directory(module_duck, FIXTURE, "fixture")
    ingest_h200_candidates(module_duck)
    refresh_ledger(module_duck)
    return DashData(module_duck, version_ttl=0.0), run_id


def test_every_callback_id_is_in_a_page_layout(seeded: tuple[DashData, int]) -> None:
    data, run_id = seeded
    app = create_dash(data)
    laid_out = _ids(shell_layout(data, None))
    for page in REGISTRY:
        laid_out |= _ids(render_page(data, page.path, f"?id={run_id}"))
    laid_out |= _ids(render_detail(data, KNOWN.key, f"{run_id}:0"))
    laid_out |= _ids(update_grid(data, run_id, None)[0])
    named = _callback_ids(app)
    assert len(named) > 100  # the walk found the callbacks
    missing = sorted(str(cid) for cid in named if cid not in laid_out)
    assert not missing, f"callbacks name ids no page lays out: {missing}"
