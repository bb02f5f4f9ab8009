"""Keep the stored cross-validation ledger current after sweep uploads, off the request.

A new sweep changes the ledger's input version (``service.crossval.ledger_key``), so the
first cross-validation read after an upload would otherwise compute the whole ledger
(0.5-2 s on the published data) while a person waits. :class:`LedgerRefresher` computes
and stores it in one background thread after the upload instead. Uploads in quick
succession coalesce: the refresh starts once uploads pause for ``quiet_s`` (1 s; at most
``max_delay_s``, 30 s, after the first), and requests arriving while it runs make one
more follow. Nothing is computed when no serving configs are stored
(there is nothing to cross-validate). Errors are logged, never raised: a read still
computes the ledger itself when the stored one is missing or stale.

The /crossval page does not wait for it: it shows the previous stored ledger with an
"updating" note (``service.crossval_page``) and finds the refresher of its store with
:func:`refresher_for` (the one the API created, else a new one), asking it at most once
per input version (:meth:`LedgerRefresher.ensure`), so a failing refresh is not retried
on every poll.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable

from db.store import Store
from service import foreground
from service.crossval import refresh_ledger

_log = logging.getLogger(__name__)
# The live refresher of each store, by id (the newest created wins): the page and the API
# share it. Weak values: a refresher lives as long as its owner (app.state, the page cache)
# keeps it, and it holds its store, so the id cannot be reused meanwhile.
_BY_STORE: weakref.WeakValueDictionary[int, LedgerRefresher] = weakref.WeakValueDictionary()
_BY_STORE_LOCK = threading.Lock()


def refresher_for(store: Store) -> LedgerRefresher:
    """The :class:`LedgerRefresher` of ``store`` (created on first use)."""
    with _BY_STORE_LOCK:
        found = _BY_STORE.get(id(store))
    return found if found is not None else LedgerRefresher(store)


class LedgerRefresher:
    """One background ledger refresh at a time per store, coalescing requests.

    Uploads ask through :meth:`request`, which is debounced: the refresh starts once no
    request came for ``quiet_s`` seconds (but at most ``max_delay_s`` after the oldest
    waiting one), so a burst of uploads costs one ledger computation after it instead of
    one after another while it lasts, and the uploads keep the CPU meanwhile (a refresh
    is 0.5-2 s of CPU on the published data; 32 uploaders send several per second). A
    page that waits for the ledger asks through :meth:`ensure`, which starts at once.
    """

    def __init__(self, store: Store, quiet_s: float = 1.0, max_delay_s: float = 30.0) -> None:
        self._store = store
        self.quiet_s = quiet_s
        self.max_delay_s = max_delay_s
        self._lock = threading.Lock()
        # Scheduling: ``_due`` is when the pending refresh may start (None: none is
        # pending), ``_first`` when its oldest request came; the worker sleeps on
        # ``_wake`` until then.
        self._wake = threading.Condition(self._lock)
        self._running = False
        self._due: float | None = None
        self._first: float | None = None
        self._thread: threading.Thread | None = None
        self.refreshes = 0  # refreshes started (one per coalesced burst)
        self._asked: str | None = None  # the input version ensure() last asked for
        self.failed = False  # the last refresh raised (logged)
        self._listeners: list[Callable[[], object]] = []
        with _BY_STORE_LOCK:
            _BY_STORE[id(store)] = self

    @property
    def running(self) -> bool:
        """True while a refresh runs (or one more is queued)."""
        with self._lock:
            return self._running

    def ensure(self, key: str) -> None:
        """:meth:`request` unless one was already asked for input version ``key``."""
        with self._lock:
            if self._asked == key:
                return
            self._asked = key
        self._request(0.0)

    def request(self) -> None:
        """Ask for a refresh after the burst (``quiet_s``, see the class); returns at once."""
        self._request(self.quiet_s)

    def _request(self, quiet_s: float) -> None:
        with self._lock:
            now = time.monotonic()
            if self._first is None:
                self._first = now
            due = min(now + quiet_s, self._first + self.max_delay_s)
            # a request that waits (quiet_s > 0) pushes the start back; one that does
            # not brings it forward
            later = self._due is not None and quiet_s > 0
            self._due = max(self._due, due) if later and self._due is not None else due
            self._wake.notify_all()
            if self._running:
                return
            self._running = True
            self._thread = threading.Thread(
                target=self._run, name="moedash-ledger-refresh", daemon=True
            )
            self._thread.start()

    def on_stored(self, listener: Callable[[], object]) -> None:
        """Call ``listener()`` (in the refresh thread) after each refresh stored a new
        ledger: the page warms its default view then. Its errors are logged."""
        with self._lock:
            self._listeners.append(listener)

    def _stored(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener()
            except Exception:  # noqa: BLE001 - a listener never fails the refresh
                _log.exception("ledger refresh listener failed")

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the current refresh (tests, shutdown); True when none is running."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        with self._lock:
            return not self._running

    def _run(self) -> None:
        with foreground.background():  # steps aside for page views (service.foreground)
            self._loop()

    def _loop(self) -> None:
        while self._until_due():
            self.refreshes += 1
            try:
                if len(self._store.crossval.serving_imports()):
                    refresh_ledger(self._store)
                    self._stored()
                self.failed = False
            except Exception:  # noqa: BLE001 - best effort; reads compute it themselves
                self.failed = True
                _log.exception("background ledger refresh failed")

    def _until_due(self) -> bool:
        """Sleep until the pending refresh is due (True), or end the worker when none is
        pending (False). Requests arriving during a refresh make the next one pending."""
        with self._lock:
            while True:
                if self._due is None:
                    self._running = False
                    return False
                left = self._due - time.monotonic()
                if left <= 0:
                    self._due = self._first = None
                    return True
                self._wake.wait(left)
