"""service.crossval_page: which stored ledger the /crossval page shows, its caches, and
the stale ledger after an upload (real DuckDB store; known answers of
``ingest_h200_candidates``: one H200 decode Match, one Mismatch)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import crossval_columns as cc
from dashboard.app import create_dash
from dashboard.pages import crossval as P
from dashboard.pages import crossval_filters as CF
from dashboard.pages import crossval_render as R
from db.store import Store
from service import crossval as S
from service import crossval_page as V
from service.crossval_import import import_serving_directory
from service.crossval_refresh import refresher_for
from service.frames import DashData
from tests.api.test_api_crossval import FIXTURE, ingest_h200_candidates
from tests.factories.dashboard import by_testid, text


@pytest.fixture
def seeded(store: Store) -> Store:
    import_serving_directory(store, FIXTURE, "fixture")
    ingest_h200_candidates(store)
    S.refresh_ledger(store)  # as `moedash ingest` and the upload route do
    return store


def test_cached_ledger_follows_uploads_and_imports(store: Store) -> None:
    data = DashData(store, version_ttl=0.0)
    assert not V.has_workloads(data) and V.import_key(data) == (0, 0)
    import_serving_directory(store, FIXTURE, "fixture")  # stores the ledger
    assert V.has_workloads(data)
    assert V.choices(data) == (["deepseek_r1", "kimi_k2"], ["B300", "GB200", "GB300", "H200"])
    first = V.cached_ledger(data, None, "H200", 2.0)
    assert V.cached_ledger(data, None, "H200", 2.0) is first  # cached
    assert set(first[cc.STATUS]) == {cc.NO_DATA, cc.NOT_MAPPABLE}
    S.refresh_ledger(store)  # same inputs, stored again: still the same cached answer
    assert V.cached_ledger(data, None, "H200", 2.0) is first
    ingest_h200_candidates(store)
    S.refresh_ledger(store)  # a new run and its ledger
    after = V.cached_ledger(data, None, "H200", 2.0)
    assert after is not first and cc.MATCH in set(after[cc.STATUS])


def test_crossval_view_is_the_api_functions(seeded: Store) -> None:
    data = DashData(seeded, version_ttl=0.0)
    res = V.crossval_view(data, "deepseek_r1", "H200", "decode", cc.MISMATCH, 2.0, 3.0)
    led = S.compute_ledger(seeded, S.workload_filters("deepseek_r1", "H200", None), 2.0)
    pd.testing.assert_frame_equal(res.ledger, led)
    pd.testing.assert_frame_equal(res.summary, S.summary_table(seeded, led, 3.0))
    assert res.view[cc.STATUS].tolist() == [cc.MISMATCH]
    assert res.state is not None and not res.state.stale


def test_after_an_upload_the_previous_ledger_is_shown_marked_until_the_new_one_is_stored(
    store: Store,
) -> None:
    import_serving_directory(store, FIXTURE, "fixture")  # ledger stored: nothing compared
    data = DashData(store, version_ttl=0.0)
    before = V.ledger_state(data)
    assert not before.stale and before.key == S.ledger_key(store, 2.0)
    refresher = refresher_for(store)
    ingest_h200_candidates(store)  # new sweeps, not refreshed yet: the key moves on
    st = V.ledger_state(data)
    assert st.stale and st.key == before.key and st.current == S.ledger_key(store, 2.0)
    assert st.ledger is before.ledger  # the previous ledger, whole: no mix, no recompute
    res = V.crossval_view(data, state=st)
    assert set(res.ledger[cc.STATUS]) == {cc.NO_DATA, cc.NOT_MAPPABLE}
    note = text(by_testid(R.render_stale(st), "cv-stale"))  # the page's note for it
    assert "Updating" in note and "previous ledger" in note
    # the page asked the store's refresher (the API's one, when the app made it)
    assert refresher_for(store) is refresher
    assert refresher.wait(60)
    assert store.crossval.stored_ledger(st.current) is not None
    assert P.poll(data, 2) == st.current  # the poll sees it: the page redraws
    fresh = V.ledger_state(data)
    assert not fresh.stale and fresh.key == st.current
    after = P.page_update(data)
    assert after[P.N_OUTPUTS :] == (None, True)
    assert cc.MATCH in set(V.crossval_view(data, state=fresh).ledger[cc.STATUS])


def test_the_refresh_is_asked_once_per_input_version(store: Store) -> None:
    import_serving_directory(store, FIXTURE, "fixture")
    data = DashData(store, version_ttl=0.0)
    refresher = refresher_for(store)
    ingest_h200_candidates(store)
    st = V.ledger_state(data)  # stale: asks for the refresh of st.current
    assert st.stale and refresher.wait(60) and not refresher.failed
    # asked again for the same input version (a page polling, a refresh that failed):
    # nothing is started
    refresher.ensure(st.current)
    assert not refresher.running


def test_a_custom_tolerance_is_computed_never_stored_and_keeps_the_default(
    seeded: Store,
) -> None:
    data = DashData(seeded, version_ttl=0.0)
    default = S.ledger_key(seeded, 2.0)
    before = set(seeded.crossval.stored_ledger_keys()["ledger_key"])
    st = V.ledger_state(data, 8.0)  # nothing stored for x8: computed for this view
    assert not st.stale and st.key == S.ledger_key(seeded, 8.0) and len(st.ledger)
    keys = set(seeded.crossval.stored_ledger_keys()["ledger_key"])
    # a read with a new tolerance writes nothing; the default tolerance's ledger stays
    assert keys == before and default in keys and st.key not in keys
    again = S.full_ledger(seeded, 8.0)  # the API's path: the same rows, still unstored
    assert again.equals(st.ledger)
    assert set(seeded.crossval.stored_ledger_keys()["ledger_key"]) == before
    assert not V.ledger_state(data, 2.0).stale


def test_a_stored_refresh_warms_the_pages_default_view(store: Store) -> None:
    import_serving_directory(store, FIXTURE, "fixture")
    data = DashData(store, version_ttl=0.0)
    refresher = refresher_for(store)  # held here, as app.state holds the API's
    create_dash(data)  # the page registers its warm-up with the store's refresher
    ingest_h200_candidates(store)
    assert V.ledger_state(data).stale  # asks for the refresh
    assert refresher.wait(60) and not refresher.failed
    st = V.ledger_state(data)
    assert not st.stale
    f = CF.make_filters()[0]
    key = ("page", st.key, f, (), store.crossval.outcomes_version())

    def recomputed() -> None:
        raise AssertionError("the default view was not warmed")

    body = V.page_cached(data, key, recomputed)  # computed by the refresh's warm-up
    assert P.page_update(data)[: P.N_OUTPUTS] == body
