"""service.foreground: background work (warm-up, the ledger refresh) waits while the
dashboard answers a visitor, only in background threads, and never longer than its bound;
the dashboard's own requests are what it counts."""

from __future__ import annotations

import threading
import time

import pytest

from dashboard.app import create_dash
from db.store import Store
from service import foreground as F
from service.crossval_import import import_serving_directory
from service.crossval_refresh import LedgerRefresher
from service.frames import DashData
from tests.api.test_api_crossval import FIXTURE, ingest_h200_candidates


@pytest.fixture(autouse=True)
def _idle() -> None:
    """Each test starts with no request in flight and the linger over."""
    deadline = time.monotonic() + 5
    while F.busy() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not F.busy()


def _in_background(fn: object) -> tuple[threading.Thread, list[float]]:
    out: list[float] = []

    def run() -> None:
        with F.background():
            out.append(fn())  # type: ignore[operator]

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_a_request_thread_never_waits_for_itself() -> None:
    with F.serving():
        assert F.busy()
        assert F.step_aside() == 0.0  # the time it waited
        assert not F.in_background()


def test_background_work_waits_for_the_request_and_the_linger() -> None:
    F.enter()
    thread, out = _in_background(F.step_aside)
    time.sleep(0.3)
    assert thread.is_alive()  # still waiting: the request is in flight
    F.leave()
    thread.join(5)
    waited = out[0]
    # the request's 0.3 s, then the linger after it; far below the bound
    assert 0.3 + F.LINGER_S * 0.8 <= waited < F.MAX_WAIT_S
    assert not F.busy()


def test_the_wait_is_bounded_when_the_dashboard_is_never_idle() -> None:
    F.enter()
    try:
        thread, out = _in_background(lambda: F.step_aside(max_wait_s=0.3))
        thread.join(5)
        assert 0.28 <= out[0] < 1.0
    finally:
        F.leave()


def test_idle_dashboard_costs_background_work_nothing() -> None:
    thread, out = _in_background(F.step_aside)
    thread.join(5)
    assert out[0] < 0.05


def test_dashboard_requests_are_counted_and_released_on_errors_too(store: Store) -> None:
    app = create_dash(DashData(store))
    client = app.server.test_client()
    for path in ("/", "/_dash-layout", "/no-such-page", "/_dash-component-suites/nope.js"):
        client.get(path)
        assert F.busy()  # within the linger of that request
    time.sleep(F.LINGER_S + 0.1)
    assert not F.busy()  # every request left (none counted twice or leaked)


def test_the_ledger_refresh_waits_for_a_visitor_then_completes(store: Store) -> None:
    import_serving_directory(store, FIXTURE, "fixture")
    ingest_h200_candidates(store)  # the stored ledger is now stale
    refresher = LedgerRefresher(store, quiet_s=0.0)
    before = F.stats["pauses"]
    F.enter()  # a visitor's request in flight while the refresh runs
    try:
        refresher.request()
        time.sleep(0.5)
        assert refresher.running and refresher.refreshes == 1  # started, waiting
    finally:
        F.leave()
    assert refresher.wait(60) and not refresher.failed
    assert F.stats["pauses"] > before
