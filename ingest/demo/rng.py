"""Deterministic hashing and counter-based random numbers for the synthetic generator
(splitmix64 over 64-bit candidate keys), plus a helper that pauses the cyclic GC."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import math
from collections.abc import Iterator

import numpy as np

_M64 = (1 << 64) - 1


def _key_hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on a uint64 array (wrapping arithmetic, array-only)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.asarray(x ^ (x >> np.uint64(31)))


def _uniform(keys: np.ndarray, stream: int, n: int) -> np.ndarray:
    """(len(keys), n) uniforms in (0, 1), a pure function of (key, stream, column)."""
    ctr = (np.arange(n, dtype=np.uint64) + np.uint64(stream << 32))[None, :]
    x = _splitmix(_splitmix(keys[:, None] ^ _splitmix(ctr)))
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)


def _normal(keys: np.ndarray, stream: int, n: int) -> np.ndarray:
    u1 = _uniform(keys, 2 * stream, n)
    u2 = _uniform(keys, 2 * stream + 1, n)
    return np.asarray(np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2))


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Building ~10^5 nested dicts/lists triggers the cyclic GC over and over (it is
    quadratic-ish in practice); nothing built here is cyclic, so pause it meanwhile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
