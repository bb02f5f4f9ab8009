"""service.allocator: the C allocator hands freed memory back (glibc only)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from service import allocator

glibc = allocator._glibc()
needs_glibc = pytest.mark.skipif(glibc is None, reason="malloc_trim is glibc's")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS")


@needs_glibc
def test_release_returns_freed_heap_pages_to_the_system() -> None:
    # 200 MB in small chunks, freed except the last: the heap's top cannot shrink, so
    # the freed pages stay resident until malloc_trim gives them back
    assert glibc is not None
    glibc.malloc.restype = ctypes.c_void_p
    glibc.free.argtypes = [ctypes.c_void_p]
    chunks = []
    for _ in range(100_000):
        p = glibc.malloc(2000)
        ctypes.memset(p, 1, 2000)
        chunks.append(p)
    for p in chunks[:-1]:
        glibc.free(p)
    held = _rss_mb()
    assert allocator.release() is True
    assert _rss_mb() < held - 100
    glibc.free(chunks[-1])


@needs_glibc
def test_limit_arenas_is_taken_by_glibc() -> None:
    assert allocator.limit_arenas(2) is True


def test_trimmed_and_released_return_the_value() -> None:
    assert allocator.trimmed(lambda: 41 + 1, after_s=0.0)() == 42
    assert allocator.trimmed(lambda: "x", after_s=60.0)() == "x"
    assert allocator.released(lambda: [1, 2]) == [1, 2]
