"""Task functions for tests/ingest/test_parse_pool.py, run in real pool workers."""

from __future__ import annotations

import os
import time
from typing import Any


def echo(value: Any) -> Any:
    return value


def pid() -> int:
    return os.getpid()


def sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def die() -> None:
    os._exit(3)  # the worker vanishes mid-task


def fail() -> None:
    raise RuntimeError("a bug in the task")
