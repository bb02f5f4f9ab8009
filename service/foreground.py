"""Page views first: background work (cache warm-up, the cross-validation ledger refresh)
steps aside while the dashboard is answering a visitor.

The server is one Python process: a background thread computing the ledger (about a
second of pandas) shares the interpreter lock with the threads answering a page load,
and every answer of that load then takes about twice as long, more where one C call
holds the lock for 50-120 ms. So the dashboard counts its requests in flight
(:func:`serving`, from the Flask app's request hooks) and background work calls
:func:`step_aside` between its steps: while requests are in flight, or were less than
:data:`LINGER_S` ago (a page load is a burst of requests with the browser's own work
between them), it waits, at most :data:`MAX_WAIT_S` per call, so a dashboard that is
never idle delays background work but cannot stop it.

A step must not be a computation a request may be waiting for (the request would then
wait for the pause): warm-ups step aside before a unit of work, never inside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

LINGER_S = 0.6
MAX_WAIT_S = 3.0

_cond = threading.Condition()
_local = threading.local()
_in_flight = 0
_last_left = 0.0  # time.monotonic() when the last request ended
# counters for tests and benchmarks: pauses taken and seconds spent in them
stats = {"pauses": 0, "paused_s": 0.0}


def enter() -> None:
    """A dashboard request has started."""
    global _in_flight
    with _cond:
        _in_flight += 1


def leave() -> None:
    """A dashboard request has ended (wakes background work after the linger)."""
    global _in_flight, _last_left
    with _cond:
        _in_flight = max(0, _in_flight - 1)
        _last_left = time.monotonic()
        _cond.notify_all()


@contextmanager
def serving() -> Iterator[None]:
    """One dashboard request, for the duration of the block."""
    enter()
    try:
        yield
    finally:
        leave()


def busy() -> bool:
    """True while requests are in flight or the last one ended within the linger."""
    with _cond:
        return _in_flight > 0 or time.monotonic() - _last_left < LINGER_S


@contextmanager
def background() -> Iterator[None]:
    """Mark the current thread as background work for the block: only there does
    :func:`step_aside` wait (a request computing the same thing on demand must not wait
    for itself)."""
    before = getattr(_local, "background", False)
    _local.background = True
    try:
        yield
    finally:
        _local.background = before


def in_background() -> bool:
    """True inside :func:`background` on this thread."""
    return bool(getattr(_local, "background", False))


def step_aside(max_wait_s: float = MAX_WAIT_S) -> float:
    """In a :func:`background` thread: wait while the dashboard is busy (see the module
    docstring), at most ``max_wait_s``; returns the seconds waited. Elsewhere: 0 at once."""
    if not in_background():
        return 0.0
    start = time.monotonic()
    deadline = start + max_wait_s
    with _cond:
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            if _in_flight > 0:
                _cond.wait(deadline - now)
                continue
            quiet_at = _last_left + LINGER_S
            if now >= quiet_at:
                break
            _cond.wait(min(quiet_at, deadline) - now)
    waited = time.monotonic() - start
    if waited > 0.001:
        with _cond:
            stats["pauses"] += 1
            stats["paused_s"] += waited
    return waited
