"""Scopes read from the cached frames give the rows the store's own filters give."""

from __future__ import annotations

from typing import Any

import pytest

from analysis import columns as C
from db.store import Store
from service.frames import Cell, DashData
from service.scope import Scope, provenance, scoped_frame
from tests.factories.dashboard import seed_store


@pytest.fixture
def data(store: Store) -> DashData:
    seed_store(store)
    return DashData(store, version_ttl=0.0)


def _keys(frame: Any) -> list[tuple[int, int]]:
    return [
        (int(r), int(c)) for r, c in zip(frame[C.RUN_ID], frame[C.CANDIDATE_INDEX], strict=True)
    ]


@pytest.mark.parametrize(
    "scope",
    [
        Scope(),
        Scope(model="deepseek_v4_pro", hardware="gb300", quant="NVFP4"),
        Scope(model="deepseek_v4_pro", hardware="GB300", quant="NVFP4", phase="prefill"),
        Scope(model="kimi_k2", attention="tp"),
        Scope(world_size=4),
        Scope(include_synthetic=False),
        Scope(run_id=[2]),
        Scope(phase="decode", attention="dp", world_size=8),
    ],
)
def test_scoped_frame_equals_the_store_query(data: DashData, scope: Scope) -> None:
    """The same rows, in the same order, as ``Store.candidate_frame`` with the scope's
    filters and success_only (what the API used to read per request)."""
    direct = data.store.candidate_frame(
        run_ids=scope.run_id, filters=scope.filters(), success_only=True
    )
    got = scoped_frame(data, scope)
    assert _keys(got) == _keys(direct)
    assert (got[C.STATUS] == "success").all() and got[C.SCORE_MS].notna().all()
    assert provenance(got)["n_candidates"] == len(direct)


def test_unknown_cell_is_empty_and_not_cached(data: DashData) -> None:
    got = scoped_frame(data, Scope(model="nope", hardware="GB300", quant="NVFP4"))
    assert got.empty and provenance(got) == {
        "run_ids": [],
        "trtllm_versions": [],
        "n_candidates": 0,
        "synthetic": False,
    }
    assert Cell("nope", "GB300", "NVFP4") not in data.cells()


def test_scope_key_ignores_run_order_and_cell_is_upper_cased() -> None:
    a = Scope(model="m", hardware="gb300", quant="q", run_id=[3, 1])
    b = Scope(model="m", hardware="GB300", quant="q", run_id=[1, 3, 3])
    assert a.key() == b.key() and hash(a.key()) == hash(b.key())
    assert a.cell() == Cell("m", "GB300", "q") and Scope(model="m").cell() is None


def test_provenance_names_runs_versions_and_synthetic(data: DashData) -> None:
    prov = provenance(scoped_frame(data, Scope()))
    assert prov["run_ids"] == [1, 2] and prov["synthetic"] is True
    assert prov["trtllm_versions"] == ["v1.3.0rc26"]
