"""Pareto and best-by-workload answers, the Run page's lookups and the cache warm-up."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis.best import best_by_workload
from analysis.confidence import EVIDENCE_COLUMNS
from analysis.frontier import FrontierAxes, FrontierFilter
from db.store import Store
from service.best import best_table, cell_best_table, row_positions, with_winner_columns
from service.frames import Cell, DashData
from service.pareto import cell_pareto, cell_point, pareto_index, pareto_table, point_at
from service.runs import candidate_fields, run_candidates, run_detail
from service.scope import Scope
from service.warm import warm_cache
from tests.factories.dashboard import KNOWN_FRONTIER, seed_store, walk
from tests.service.stores import PARITY_CELL, seed_tie_sweep

KNOWN = Cell("deepseek_v4_pro", "GB300", "NVFP4")


@pytest.fixture
def seeded(store: Store) -> tuple[DashData, dict[str, int]]:
    ids = seed_store(store)
    return DashData(store, version_ttl=0.0), ids


def test_pareto_table_and_cell_view_know_the_frontier(
    seeded: tuple[DashData, dict[str, int]],
) -> None:
    data, _ = seeded
    scope = Scope(model=KNOWN.model, hardware=KNOWN.hardware, quant=KNOWN.quant, phase="decode")
    table = pareto_table(data, scope)
    assert set(table.items[C.CANDIDATE_INDEX]) == KNOWN_FRONTIER
    assert (table.x, table.y) == (C.SCORE_MS, C.TOKENS_PER_S_PER_GPU)
    assert table.provenance["n_candidates"] == 4  # decode successes
    view = cell_pareto(data, KNOWN, FrontierFilter(), FrontierAxes()).view
    assert set(view.frontier[C.CANDIDATE_INDEX]) == KNOWN_FRONTIER
    empty = pareto_table(data, Scope(model="nope"))
    assert empty.items.empty and C.RUN_ID in empty.items.columns


def test_pareto_index_is_one_per_frame(seeded: tuple[DashData, dict[str, int]]) -> None:
    data, _ = seeded
    frame = data.cell_frame(KNOWN)
    assert pareto_index(data, KNOWN, frame) is pareto_index(data, KNOWN)
    other = frame.copy()
    assert pareto_index(data, KNOWN, other) is not pareto_index(data, KNOWN, frame)


def test_points_resolve_and_bad_points_are_none(seeded: tuple[DashData, dict[str, int]]) -> None:
    data, ids = seeded
    point = point_at(data, KNOWN, 1)
    assert point == f"{ids['known']}:1"
    row = cell_point(data, KNOWN, point)
    assert row is not None and row[C.BACKEND] == "MEGAMOE_CUTEDSL"
    for bad in (None, "", "1", "x:y", "999:1"):
        assert cell_point(data, KNOWN, bad) is None
    assert point_at(data, KNOWN, 10**6) is None and point_at(data, KNOWN, None) is None


def test_winner_columns_come_from_the_winners_own_row() -> None:
    frame = pd.DataFrame(
        {C.RUN_ID: [1, 1, 2], C.CANDIDATE_INDEX: [0, 1, 0], "v": [10.0, 11.0, 20.0]}
    )
    table = pd.DataFrame({"best_run_id": [2, 1], "best_candidate_index": [0, 1]})
    out = with_winner_columns(table, frame, ["v"])
    assert list(out["v"]) == [20.0, 11.0] and "v" not in table
    shuffled = frame.iloc[[2, 0, 1]]  # not sorted: the index lookup path
    assert list(row_positions(shuffled, np.array([2, 1]), np.array([0, 1]))) == [0, 2]
    assert list(row_positions(frame, np.array([3]), np.array([0]))) == [-1]


def test_best_tables_of_scope_and_cell_have_the_same_winners(
    seeded: tuple[DashData, dict[str, int]],
) -> None:
    data, _ = seeded
    scope = Scope(model=KNOWN.model, hardware=KNOWN.hardware, quant=KNOWN.quant)
    api = best_table(data, scope, "dashboard").items
    page = cell_best_table(data, KNOWN, "dashboard")
    cols = ["best_run_id", "best_candidate_index", "best_backend"]
    pd.testing.assert_frame_equal(api[cols], page[cols])
    # the winner's columns, then the confidence panel's (the same on both)
    n = len(EVIDENCE_COLUMNS)
    assert list(api.columns[-n - 2 : -n]) == [C.ACTIVATED_TOKENS_PER_RANK, C.DISPATCH_KB]
    assert list(api.columns[-n:]) == list(EVIDENCE_COLUMNS)
    pd.testing.assert_frame_equal(api[list(EVIDENCE_COLUMNS)], page[list(EVIDENCE_COLUMNS)])
    assert {C.WORLD_SIZE, C.PHASE, C.TOKENS_PER_S_PER_GPU} <= set(page.columns)
    direct = best_by_workload(data.cell_frame(KNOWN), "bench_moe")
    assert len(cell_best_table(data, KNOWN, "bench_moe")) == len(direct)
    assert cell_best_table(data, KNOWN, "bench_moe", ws=64).empty
    with pytest.raises(ValueError, match="grouping"):
        cell_best_table(data, KNOWN, "nope")


def test_run_lookups_answer_none_for_what_is_not_stored(
    seeded: tuple[DashData, dict[str, int]],
) -> None:
    data, ids = seeded
    run = run_detail(data, ids["known"])
    assert run is not None and run[C.MODEL] == "deepseek_v4_pro"
    page = run_candidates(data, ids["known"], "failed", 100)
    assert page is not None and page[1] == 1 and list(page[0][C.STATUS]) == ["failed"]
    fields = candidate_fields(data, ids["known"], 1)
    assert fields is not None and fields[C.BACKEND] == "MEGAMOE_CUTEDSL"
    assert run_detail(data, 999) is None and run_candidates(data, 999, None, 10) is None
    assert (
        candidate_fields(data, 999, 1) is None and candidate_fields(data, ids["known"], 99) is None
    )


def test_warm_cache_loads_every_cell_it_can(seeded: tuple[DashData, dict[str, int]]) -> None:
    data, _ = seeded
    done = warm_cache(data)
    assert [key for key, _ in done] == [c.key for c in data.cells()]
    assert warm_cache(data, limit=1)[0][0] == data.cells()[0].key


def test_best_defaults_to_the_dashboard_grouping_for_top3_only_cells(store: Store) -> None:
    """NVIDIA's dashboard data keeps the top 3 per workload: its cells open Best in the
    dashboard grouping; bench_moe sweeps keep bench_moe's own."""
    from pathlib import Path

    from dashboard.app import render_page
    from ingest.detect import parse_path
    from ingest.records import UploadMeta
    from service.best import default_grouping

    data_js = Path(__file__).resolve().parents[1] / "fixtures" / "dashboard" / "data.js"
    meta = UploadMeta(trtllm_version="v9")
    store.ingest(parse_path(data_js, meta), data_js.read_bytes(), meta)
    seed_tie_sweep(store)
    data = DashData(store, version_ttl=0.0)
    top3 = Cell("tiny_moe", "B300", "NVFP4")
    assert default_grouping(data, top3) == "dashboard"
    assert default_grouping(data, PARITY_CELL) == "bench_moe"
    page = render_page(data, "/best", "?model=tiny_moe&hardware=B300&quant=NVFP4")
    grouping = next(c for c in walk(page) if getattr(c, "id", None) == "best-grouping")
    assert grouping.value == "dashboard"
