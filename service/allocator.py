"""The C allocator's share of a replica's memory (issue 23, docs/scale.md).

A cell read or an answer over a 1M-row cell allocates and frees hundreds of MB of
pandas/Arrow buffers. glibc keeps freed memory in the arena that served it -- one arena
per thread that ever allocated, up to 8 x cores -- so a replica whose requests run on a
thread pool grew by ~650 MB of free-but-held heap at 10M (bench/scale.py), more than its
caches hold. Two remedies, both no-ops where the C library is not glibc:

* :func:`limit_arenas` at start, before the server's threads exist: at most two arenas
  (what ``MALLOC_ARENA_MAX=2`` in the environment does; the Docker image sets that too);
* :func:`release` after a large read or computation: ``malloc_trim(0)`` hands the free
  pages of every arena back to the system (a few ms on a 1 GB heap), and Arrow's memory
  pool (mimalloc) gives back the buffers it kept (a cell read in pieces freed each
  piece's Arrow buffers into it: ~100 MB kept after a 1M-row cell's read).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import time
from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa

T = TypeVar("T")

_log = logging.getLogger(__name__)
M_ARENA_MAX = -8  # glibc's mallopt parameter
ARENAS = 2


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):
        return None  # musl, macOS: their allocators return memory their own way
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most ``arenas`` malloc arenas for the threads created from now on; True when
    the C library took the setting."""
    libc = _glibc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(M_ARENA_MAX, arenas))
    if not ok:
        _log.info("mallopt(M_ARENA_MAX, %d) refused", arenas)
    return ok


def release() -> bool:
    """Give the allocators' free pages back to the system (glibc's, and those of
    Arrow's memory pool: mimalloc by default, which keeps freed buffers of its own);
    True when glibc gave some."""
    pa.default_memory_pool().release_unused()
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


# An answer that took this long allocated and freed enough to be worth handing back.
RELEASE_AFTER_S = 0.2


def released(build: Callable[[], T]) -> T:
    """``build()``, then :func:`release`: for a large read whose temporaries (a raw
    frame, Arrow buffers) die inside ``build``."""
    value = build()
    release()
    return value


def trimmed(compute: Callable[[], T], after_s: float = RELEASE_AFTER_S) -> Callable[[], T]:
    """``compute`` that calls :func:`release` when it ran longer than ``after_s`` (the
    temporaries of an answer over a cell-sized frame): a cheap answer pays nothing."""

    def run() -> T:
        t0 = time.perf_counter()
        value = compute()
        if time.perf_counter() - t0 > after_s:
            release()
        return value

    return run
