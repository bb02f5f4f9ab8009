"""Parity: the Thresholds page and /api/v1/thresholds* give the same answers on the same
store. The page side is what the registered Dash callback returns (read back from its
tables and tree blocks); the API side is the real app through Starlette's test client.
Each side has its own read path (``DashData``), so a shared cache cannot hide a
difference."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from analysis.tree_text import number
from dashboard import components as ui
from dashboard.pages.thresholds_view import MAIN
from db.store import Store
from tests.factories import thresholds as TF
from tests.factories.dashboard import walk
from tests.service.test_parity_analysis import by_test_id, callback, cell_texts

SLICES = [
    {},
    {"model": "model_c"},
    {"hardware": "B300"},
    {"model": "model_a", "quant": "NVFP4"},
]
COL = {name: i for i, (name, _) in enumerate(MAIN)}


@pytest.fixture(scope="module")
def seeded(module_store: Store) -> Store:
    TF.seed_threshold_store(module_store)
    return module_store


def _controls(s: dict[str, str], tree: str) -> list[Any]:
    return [s.get(k, "all") for k in ("model", "hardware", "quant", "dispatch")] + [
        "none",
        None,
        tree,
    ]


@pytest.mark.parametrize("tree", ["derived", "validated"])
@pytest.mark.parametrize("s", SLICES)
def test_thresholds_agreement_and_tree_agree(
    api: TestClient, page: Any, s: dict[str, str], tree: str
) -> None:
    body, *_ = callback(page, "th-body.children")(*_controls(s, tree))
    shown = {r[0]: r for r in cell_texts(by_test_id(body, "th-table"))[1:]}
    items = api.get("/api/v1/thresholds", params=s).json()["items"]
    assert list(shown) == [i["name"] for i in items]
    for item in items:
        row = shown[item["name"]]
        assert row[COL["published"]] == number(item["published"])
        assert row[COL["derived"]] == number(item["derived"])
        assert row[COL["interval"]] == ui.fmt(item["interval"] or None)
        assert row[COL["n_points"]] == ui.fmt(item["n_points"])
        assert row[COL["verdict"]] == item["verdict"]
    # agreement % per model x hardware x phase, three sets side by side
    rows = cell_texts(by_test_id(body, "th-agreement"))[2:]
    on_page = {tuple(r[:3]): r[4:7] for r in rows}
    agreement = api.get("/api/v1/thresholds/agreement", params=s).json()["items"]
    assert len(on_page) == len(agreement) > 0
    for a in agreement:
        want = [f"{a[f'agreement_pct_{n}']:.1f}" for n in ("published", "derived", "validated")]
        assert on_page[(a["model"], a["hardware"], a["phase"])] == want
    # the re-derived tree is the download's text, byte for byte
    text = api.get("/api/v1/thresholds/tree", params={**s, "thresholds": tree}).text
    assert by_test_id(body, "th-tree-rederived").children == text
    published = api.get("/api/v1/thresholds/tree", params={**s, "thresholds": "published"}).text
    assert by_test_id(body, "th-tree-published").children == published


def test_breakdown_rows_agree(api: TestClient, page: Any) -> None:
    body, *_ = callback(page, "th-body.children")(
        "all", "all", "all", "all", "hardware", None, "derived"
    )
    shown = [(r[0], r[1], r[-1]) for r in cell_texts(by_test_id(body, "th-groups"))[1:]]
    items = api.get("/api/v1/thresholds", params={"by": "hardware"}).json()["items"]
    assert shown == [(i["group"], i["name"], i["verdict"]) for i in items]
    assert any(isinstance(c, str) and "Per hardware" in c for c in walk(body))
