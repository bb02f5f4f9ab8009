"""ingest.parse_pool with real worker processes: answers, a worker that dies, hangs or
raises (PoolUnavailable, the worker replaced), arrival order, pause, idle stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from ingest.parse_pool import ParsePool, PoolUnavailable

TASKS = "tests.ingest.pool_tasks"


@pytest.fixture
def pool() -> Iterator[ParsePool]:
    p = ParsePool(f"{TASKS}:echo", 1, timeout_s=10)
    assert p.warm(60)
    try:
        yield p
    finally:
        p.close()


def test_a_task_runs_in_a_worker_and_big_arguments_round_trip(pool: ParsePool) -> None:
    blob = bytes(range(256)) * 40_000  # 10 MB: more than a pipe holds
    assert pool.run(blob) == blob
    assert pool.run({"a": [1, 2.5, None]}) == {"a": [1, 2.5, None]}
    assert pool.completed == 2 and pool.replaced == 0


def test_a_worker_that_dies_midway_is_replaced() -> None:
    pool = ParsePool(f"{TASKS}:die", 1, timeout_s=10)
    try:
        assert pool.warm(60)
        (first,) = pool.pids()
        with pytest.raises(PoolUnavailable, match="failed"):
            pool.run()
        assert pool.replaced == 1 and first not in pool.pids()
        assert pool.warm(60) and pool.pids() != [first]
    finally:
        pool.close()


def test_a_hung_worker_times_out_and_is_killed() -> None:
    pool = ParsePool(f"{TASKS}:sleep", 1, timeout_s=0.5)
    try:
        assert pool.warm(60)
        (first,) = pool.pids()
        with pytest.raises(PoolUnavailable, match="in time"):  # not after the 30 s sleep
            pool.run(30.0)
        assert pool.replaced == 1 and first not in pool.pids()
        assert pool.warm(60)
        assert pool.run(0.0) == 0.0  # the new worker answers
    finally:
        pool.close()


def test_an_exception_in_the_task_is_unavailable_and_the_worker_stays() -> None:
    pool = ParsePool(f"{TASKS}:fail", 1, timeout_s=10)
    try:
        assert pool.warm(60)
        (first,) = pool.pids()
        with pytest.raises(PoolUnavailable, match="a bug in the task"):
            pool.run()
        assert pool.pids() == [first] and pool.replaced == 0
    finally:
        pool.close()


def test_waiting_callers_are_served_in_arrival_order() -> None:
    pool = ParsePool(f"{TASKS}:sleep", 1, timeout_s=30)
    try:
        assert pool.warm(60)
        order: list[int] = []
        first = threading.Thread(target=pool.run, args=(0.5,))
        first.start()
        time.sleep(0.1)

        def caller(i: int) -> None:
            pool.run(0.01)
            order.append(i)

        threads = []
        for i in range(5):
            threads.append(threading.Thread(target=caller, args=(i,)))
            threads[-1].start()
            time.sleep(0.05)
        for t in [first, *threads]:
            t.join()
        assert order == [0, 1, 2, 3, 4]
    finally:
        pool.close()


def test_paused_stops_the_workers_and_refuses_tasks(pool: ParsePool) -> None:
    assert pool.status() == {"size": 1, "ready": 1}
    with pool.paused():
        assert pool.pids() == []
        assert pool.status() == {"size": 1, "ready": 0}
        with pytest.raises(PoolUnavailable, match="paused"):
            pool.run(1)
    assert pool.run(1) == 1  # a worker starts again on demand


def test_idle_workers_stop() -> None:
    pool = ParsePool(f"{TASKS}:echo", 1, idle_s=0.5)
    assert pool.status() == {"size": 1, "ready": 0}  # nothing starts before it is asked
    try:
        assert pool.warm(60) and pool.run(1) == 1
        deadline = time.monotonic() + 10
        while pool.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pool.pids() == []
        assert pool.status() == {"size": 1, "ready": 0}  # /api/v1/health says so
    finally:
        pool.close()


def test_a_closed_pool_is_unavailable(pool: ParsePool) -> None:
    pool.close()
    with pytest.raises(PoolUnavailable):
        pool.run(1)
