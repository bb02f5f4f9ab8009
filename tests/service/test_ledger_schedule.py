"""LedgerRefresher scheduling: a burst of upload requests costs one refresh after it,
a long burst is still refreshed (max delay), and a page's ensure() does not wait."""

from __future__ import annotations

import time

from db.store import Store
from service.crossval_refresh import LedgerRefresher


def test_a_burst_of_requests_is_one_refresh(store: Store) -> None:
    refresher = LedgerRefresher(store, quiet_s=0.4, max_delay_s=30)
    for _ in range(20):
        refresher.request()
        time.sleep(0.01)
    assert refresher.running
    assert refresher.refreshes == 0  # not during the burst
    assert refresher.wait(30)
    assert refresher.refreshes == 1
    assert not refresher.failed


def test_requests_after_a_refresh_ask_for_another(store: Store) -> None:
    refresher = LedgerRefresher(store, quiet_s=0.05)
    refresher.request()
    assert refresher.wait(30) and refresher.refreshes == 1
    refresher.request()
    assert refresher.wait(30) and refresher.refreshes == 2


def test_a_burst_longer_than_the_max_delay_is_refreshed_during_it(store: Store) -> None:
    refresher = LedgerRefresher(store, quiet_s=0.3, max_delay_s=0.3)
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and refresher.refreshes == 0:
        refresher.request()  # never quiet for 0.3 s
        time.sleep(0.05)
    assert refresher.refreshes >= 1
    assert refresher.wait(30)


def test_ensure_starts_at_once_even_during_a_burst(store: Store) -> None:
    refresher = LedgerRefresher(store, quiet_s=600, max_delay_s=600)
    refresher.request()  # would wait ten minutes
    refresher.ensure("some input version")
    assert refresher.wait(30)  # the page's request brought it forward
    assert refresher.refreshes == 1
    refresher.ensure("some input version")  # asked already for this version
    assert refresher.wait(30) and refresher.refreshes == 1
