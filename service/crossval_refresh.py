"""Keep the stored cross-validation ledger current after sweep uploads, off the request.

A new sweep changes the ledger's input version (``service.crossval.ledger_key``), so the
first cross-validation read after an upload would otherwise compute the whole ledger
(0.5-2 s on the published data) while a person waits. :class:`LedgerRefresher` computes
and stores it in one background thread right after the upload instead. Uploads in
quick succession coalesce: while a refresh runs, further requests only mark it dirty,
and one more refresh follows. Nothing is computed when no serving configs are stored
(there is nothing to cross-validate). Errors are logged, never raised: a read still
computes the ledger itself when the stored one is missing or stale.
"""

from __future__ import annotations

import logging
import threading

from db.store import Store
from service.crossval import refresh_ledger

_log = logging.getLogger(__name__)


class LedgerRefresher:
    """One background ledger refresh at a time per store, coalescing requests."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._running = False
        self._dirty = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        """Ask for a refresh; returns at once."""
        with self._lock:
            if self._running:
                self._dirty = True
                return
            self._running = True
            self._thread = threading.Thread(
                target=self._run, name="moedash-ledger-refresh", daemon=True
            )
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the current refresh (tests, shutdown); True when none is running."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        with self._lock:
            return not self._running

    def _run(self) -> None:
        while True:
            try:
                if len(self._store.crossval.serving_imports()):
                    refresh_ledger(self._store)
            except Exception:  # noqa: BLE001 - best effort; reads compute it themselves
                _log.exception("background ledger refresh failed")
            with self._lock:
                if not self._dirty:
                    self._running = False
                    return
                self._dirty = False
