"""The default cell every page opens on: the one with the most data."""

from __future__ import annotations

from db.store import Store
from ingest.records import UploadMeta
from service.defaults import cells_by_data, default_cell
from service.frames import Cell, DashData
from tests.factories import sweeps

BIG = Cell("zeta_model", "B300", "NVFP4")
SMALL = Cell("alpha_model", "GB300", "NVFP4")


def _ingest(store: Store, cell: Cell, n: int, seed: int, world_size: int = 4) -> None:
    sweep = sweeps.make_sweep(
        n,
        seed=seed,
        model=cell.model,
        hardware=cell.hardware,
        quant=cell.quant,
        world_size=world_size,
    )
    store.ingest(
        [sweep], f"{cell.key}-{n}-{seed}-{world_size}".encode(), UploadMeta(hardware=cell.hardware)
    )


def test_default_is_the_cell_with_most_candidates_not_the_first_name(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    assert default_cell(data) is None
    assert cells_by_data(data) == []
    _ingest(store, SMALL, 3, seed=1)
    _ingest(store, BIG, 30, seed=2)
    assert data.cells()[0] == SMALL  # alphabetical order would pick the 3-candidate sweep
    assert default_cell(data) == BIG
    assert cells_by_data(data) == [BIG, SMALL]


def test_candidates_are_summed_over_world_sizes(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    _ingest(store, BIG, 20, seed=2)
    _ingest(store, SMALL, 12, seed=1, world_size=4)
    _ingest(store, SMALL, 12, seed=3, world_size=8)
    assert default_cell(data) == SMALL  # 24 over two world sizes beat 20


def test_restricted_choice_and_ties(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    _ingest(store, SMALL, 10, seed=1)
    _ingest(store, BIG, 10, seed=1)
    # same candidates and workloads: cells() order decides
    assert default_cell(data) == SMALL
    assert default_cell(data, [BIG]) == BIG
    other = Cell("not", "stored", "x")
    assert default_cell(data, [other]) == other
    assert default_cell(data, []) is None
