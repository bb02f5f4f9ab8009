"""The predictions' validation is computed once per cell version, by work that is not a
visitor's request (the warm-up at start, the recomputation after an upload), and shared
through the database: a replica (or this process after a restart) answers the first
``GET /api/v1/predictions/validation`` and the Predictions page from it, without
reading the cell's rows."""

from __future__ import annotations

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from db.store import Store
from service import predictions as S
from service.frames import Cell, DashData
from service.precompute import precompute_cell
from service.warm import warm_all
from tests.factories import prediction_frames as F

CELL = Cell("deepseek_v4_pro", "GB300", "NVFP4")
KIND = "prediction_validation"


@pytest.fixture
def seeded(store: Store) -> Store:
    F.seed_demo_cell(store, world_sizes=(8,))  # one run: the sharing, not the numbers, is tested
    return store


def _kinds(store: Store) -> set[str]:
    return {kind for kind, _ in store.answers.listing()}


def _replica(store: Store) -> DashData:
    """Another process on the same database, failing loudly if it reads a cell's rows."""
    replica = DashData(store, version_ttl=0.0)

    def refuse(*_a: object, **_k: object) -> pd.DataFrame:
        raise AssertionError("read the cell's rows instead of the shared validation")

    replica.cell_frame = refuse  # type: ignore[method-assign]
    replica.bounded_frame = refuse  # type: ignore[method-assign]
    return replica


def test_an_upload_s_recomputation_shares_the_validation(seeded: Store) -> None:
    data = DashData(seeded)
    assert KIND not in _kinds(seeded)
    precompute_cell(data, CELL)  # what runs after an upload of the cell
    assert KIND in _kinds(seeded)
    want = S.validation(data, CELL.model, CELL.hardware, CELL.quant)
    got = S.validation(_replica(seeded), CELL.model, CELL.hardware, CELL.quant)
    assert got == want and got["summary"]["n_queries"] > 0


def test_the_warm_up_at_start_shares_it_and_a_visitor_never_writes_it(
    seeded: Store, client: TestClient
) -> None:
    params = {"model": CELL.model, "hardware": CELL.hardware, "quant": CELL.quant}
    visited = client.get("/api/v1/predictions/validation", params=params)
    assert visited.status_code == 200, visited.text
    assert KIND not in _kinds(seeded)  # a visitor's GET reads shared answers, never writes
    warm_all(DashData(seeded))  # what `moedash serve` starts in the background
    assert KIND in _kinds(seeded)
    got = S.validation(_replica(seeded), CELL.model, CELL.hardware, CELL.quant)
    assert got == visited.json()


def test_switched_off_the_warm_up_and_recomputation_leave_it_to_the_first_visitor(
    seeded: Store,
) -> None:
    data = DashData(seeded)
    data.warm_predictions = False  # settings.warm_predictions=false (MOEDASH_WARM_PREDICTIONS)
    precompute_cell(data, CELL)
    warm_all(data)
    assert KIND not in _kinds(seeded)
    assert S.validation(data, CELL.model, CELL.hardware, CELL.quant)["summary"]["n_queries"] > 0
