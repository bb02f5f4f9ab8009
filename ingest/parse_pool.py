"""A pool of parse worker processes for small uploads, so that the server's one
interpreter lock spends its time on HTTP and the database, not on parsing.

Each worker is ``python -m ingest.parse_pool MODULE:FUNCTION``: it imports the task
function once (and runs the module's ``warm_up()`` if it has one), answers ``R`` when
ready, then runs one task at a time: a request is the pickled arguments (the upload's
bytes among them), the answer the pickled result. The server uses it through
:meth:`ParsePool.run`, which raises :class:`PoolUnavailable` whenever the pool cannot
answer (no worker could start, a worker died, hung past ``timeout_s`` or raised; a
caller that finds every worker busy or starting waits its turn, in arrival order): the
caller then parses in its own process, so a worker's trouble never loses an upload or
answers 500. A broken worker is killed and a new one is started for the next task.

Memory: workers start on demand (``moedash serve`` starts them at once, in the
background), stop after ``idle_s`` without work, and stop while a big upload parses in
the server (:meth:`ParsePool.paused`), so an idle pool costs no memory and the biggest
uploads have the machine to themselves (bench/upload_memory.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import importlib
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Uploads up to this size go through the pool; bigger ones parse in the server as before
# (in-process, or ingest.parallel_parse from 64 MB), so their memory is what it was.
POOL_MAX_BYTES = 16 << 20
# A task taking longer than this is a hung worker (a 16 MB report parses in ~1 s).
TASK_TIMEOUT_S = 60.0
# A worker without a task for this long stops (its ~150 MB come back).
IDLE_S = 60.0
# After a worker failed to start, uploads parse in the server this long before the pool
# tries again (a broken environment must not cost one process start per upload).
_RESPAWN_DELAY_S = 30.0
_HEADER = struct.Struct("!Q")
_PIPE_BYTES = 1 << 20  # Linux's default pipe-max-size
_ROOT = str(Path(__file__).resolve().parent.parent)  # the directory holding ``ingest``


class PoolUnavailable(Exception):
    """The pool cannot answer this task; parse in the calling process instead."""


def default_workers() -> int:
    """One worker per CPU, at most 4."""
    return max(1, min(os.cpu_count() or 1, 4))


class _Worker:
    def __init__(self, task: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ingest.parse_pool", task],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        os.set_blocking(self.wfd, False)  # a hung worker must not block a write
        os.set_blocking(self.rfd, False)
        for fd in (self.wfd, self.rfd):
            # a 445 KB body in one write, its answer in one read: fewer wake-ups, and
            # each one costs the calling thread a turn at the interpreter lock
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self.ready = False
        self.busy = False
        self.last_used = time.monotonic()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        for handle in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                handle.close()  # type: ignore[union-attr]


class ParsePool:
    """Up to ``workers`` worker processes running the function named ``task``
    (``"module:function"``; its arguments and result must pickle). See the module
    docstring."""

    def __init__(
        self,
        task: str,
        workers: int,
        *,
        timeout_s: float = TASK_TIMEOUT_S,
        idle_s: float = IDLE_S,
        max_bytes: int = POOL_MAX_BYTES,
    ) -> None:
        self.task = task
        self.size = workers
        self.timeout_s = timeout_s
        self.idle_s = idle_s
        self.max_bytes = max_bytes
        self._workers: list[_Worker] = []
        self._cond = threading.Condition()
        self._paused = 0
        self._waiting: deque[_Slot] = deque()
        self._spawn_after = 0.0  # after a worker failed to start, no new one before this
        self._closed = False
        self.replaced = 0  # workers killed after a failure (observability, tests)
        self.completed = 0  # tasks a worker answered
        self._reaper = threading.Thread(target=self._reap, daemon=True, name="parse-pool-reaper")
        self._reaper.start()

    def status(self) -> dict[str, int]:
        """``size`` (workers it keeps at most) and ``ready`` (started and waiting or
        working now): a pool that is warming up, stopped after idling or paused for a
        big upload has fewer ready than its size (``/api/v1/health`` reports this)."""
        with self._cond:
            ready = sum(1 for w in self._workers if w.ready)
        return {"size": self.size, "ready": ready}

    def pids(self) -> list[int]:
        """Process ids of the running workers."""
        with self._cond:
            return [w.proc.pid for w in self._workers]

    def warm(self, timeout_s: float = 60.0) -> bool:
        """Start every worker now and wait until they are ready (``moedash serve`` does,
        in the background, so its first uploads need not wait for workers to start)."""
        with self._cond:
            while len(self._workers) < self.size and not self._closed and not self._paused:
                self._spawn()
            ok = self._cond.wait_for(
                lambda: all(w.ready for w in self._workers) or self._closed, timeout_s
            )
        return ok and not self._closed

    def run(self, *args: Any) -> Any:
        """``task(*args)`` in a worker; raises :class:`PoolUnavailable` when the pool
        cannot answer (the caller parses itself) and the task's result otherwise."""
        worker = self._acquire()
        healthy = False
        try:
            deadline = time.monotonic() + self.timeout_s
            payload = pickle.dumps(args, protocol=5)
            _send(worker.wfd, _HEADER.pack(len(payload)), deadline)
            _send(worker.wfd, payload, deadline)
            del payload
            (n,) = _HEADER.unpack(_recv(worker.rfd, _HEADER.size, deadline))
            status, value = pickle.loads(_recv(worker.rfd, n, deadline))
            healthy = True
        except (OSError, EOFError, TimeoutError, pickle.UnpicklingError, struct.error) as exc:
            raise PoolUnavailable(f"parse worker failed: {exc!r}"[:300]) from None
        finally:
            self._release(worker, healthy)
        if status != "ok":
            raise PoolUnavailable(f"parse worker raised {value}"[:300])
        self.completed += 1  # under the GIL; a count for tests and logs, not a lock
        return value

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No worker runs in the block: idle ones stop now, busy ones when their task
        ends, and :meth:`run` raises :class:`PoolUnavailable` (a big upload parses in the
        server meanwhile and gets the memory)."""
        with self._cond:
            self._paused += 1
            for worker in [w for w in self._workers if not w.busy]:
                self._remove(worker)
            self._wake_all()
        try:
            yield
        finally:
            with self._cond:
                self._paused -= 1

    def close(self) -> None:
        """Stop every worker; :meth:`run` raises :class:`PoolUnavailable` afterwards."""
        with self._cond:
            self._closed = True
            for worker in list(self._workers):
                self._remove(worker)
            self._wake_all()
            self._cond.notify_all()

    # -- internals (callers hold self._cond where noted) --

    def _acquire(self) -> _Worker:
        """A ready worker, marked busy. Waiting callers are served in arrival order: a
        worker set free goes to the first of them, never to a caller that came later."""
        with self._cond:
            if self._closed or self._paused:
                raise PoolUnavailable("the parse pool is closed or paused")
            if not self._waiting:
                for worker in reversed(self._workers):  # the most recently used first
                    if worker.ready and not worker.busy:
                        worker.busy = True
                        return worker
            if len(self._workers) < self.size and time.monotonic() >= self._spawn_after:
                self._spawn()
            if not self._workers:
                raise PoolUnavailable("no parse worker could start (retried later)")
            # wait for a busy or a starting worker (a start takes ~1-2 s): parsing here
            # instead would cost the server's interpreter lock what the pool saves
            slot = _Slot()
            self._waiting.append(slot)
        if not slot.event.wait(self.timeout_s):
            with self._cond:
                if slot in self._waiting:
                    self._waiting.remove(slot)
        with self._cond:
            if slot.worker is None:
                raise PoolUnavailable("no parse worker became free")
            return slot.worker

    def _hand_over(self, worker: _Worker) -> None:  # holds self._cond
        """Give a free, ready worker to the first waiting caller (else it stays idle)."""
        if self._waiting:
            slot = self._waiting.popleft()
            worker.busy = True
            slot.worker = worker
            slot.event.set()

    def _wake_all(self) -> None:  # holds self._cond: waiting callers parse themselves
        while self._waiting:
            self._waiting.popleft().event.set()

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self._cond:
            worker.busy = False
            worker.last_used = time.monotonic()
            if not healthy:
                self.replaced += 1
            if not healthy or self._paused or self._closed:
                self._remove(worker)
                if self._waiting and not self._paused and not self._closed:
                    self._spawn()  # the waiting callers get the new one when it is ready
            else:
                self._hand_over(worker)

    def _spawn(self) -> None:  # holds self._cond
        worker = _Worker(self.task)
        self._workers.append(worker)
        threading.Thread(target=self._await_ready, args=(worker,), daemon=True).start()

    def _await_ready(self, worker: _Worker) -> None:
        try:
            ready = _recv(worker.rfd, 1, time.monotonic() + 120) == b"R"
        except (OSError, EOFError, TimeoutError):
            ready = False
        with self._cond:
            if worker not in self._workers:
                return
            if ready:
                worker.ready = True
                worker.last_used = time.monotonic()
                self._hand_over(worker)
            else:
                self._remove(worker)
                self._spawn_after = time.monotonic() + _RESPAWN_DELAY_S
                if not self._workers:
                    self._wake_all()
            self._cond.notify_all()

    def _remove(self, worker: _Worker) -> None:  # holds self._cond
        if worker in self._workers:
            self._workers.remove(worker)
        worker.stop()

    def _reap(self) -> None:
        while True:
            time.sleep(max(0.5, min(self.idle_s / 4, 15.0)))
            with self._cond:
                if self._closed:
                    return
                now = time.monotonic()
                for worker in list(self._workers):
                    if worker.ready and not worker.busy and now - worker.last_used > self.idle_s:
                        self._remove(worker)


class _Slot:
    """A caller waiting for a worker: ``worker`` is set before ``event``, or stays None
    when the pool gives up on it (paused, closed, no worker left)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.worker: _Worker | None = None


def _wait(fd: int, events: int, deadline: float) -> None:
    poller = select.poll()
    poller.register(fd, events)
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not poller.poll(remaining * 1000):
        raise TimeoutError("the parse worker did not answer in time")


def _send(fd: int, data: bytes | memoryview, deadline: float) -> None:
    view = memoryview(data)
    while view:
        _wait(fd, select.POLLOUT, deadline)
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue


def _recv(fd: int, n: int, deadline: float) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        _wait(fd, select.POLLIN, deadline)
        try:
            k = os.readv(fd, [view[got:]])
        except BlockingIOError:
            continue
        if k == 0:
            raise EOFError("the parse worker exited")
        got += k
    return bytes(buf)


# -- the worker process --


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            return None
        got += k
    return bytes(buf)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def worker_main(task_name: str) -> None:
    """Serve tasks on stdin/stdout until stdin closes. Stdout is the protocol, so the
    task's own prints go to stderr."""
    rfd, wfd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    module_name, name = task_name.split(":", 1)
    module = importlib.import_module(module_name)
    task: Callable[..., Any] = getattr(module, name)
    warm_up = getattr(module, "warm_up", None)
    if warm_up is not None:  # the first task would pay for lazy imports and caches
        with contextlib.suppress(Exception):  # only an optimisation: never fatal
            warm_up()
    gc.collect()
    gc.freeze()  # the imports stay: the cyclic GC need not walk them per task
    _write_all(wfd, b"R")
    while True:
        header = _read_exact(rfd, _HEADER.size)
        if header is None:
            return
        payload = _read_exact(rfd, _HEADER.unpack(header)[0])
        if payload is None:
            return
        try:
            out: tuple[str, Any] = ("ok", task(*pickle.loads(payload)))
        except Exception as exc:  # noqa: BLE001 - reported; the server parses itself
            out = ("error", f"{type(exc).__name__}: {exc}")
        del payload
        data = pickle.dumps(out, protocol=5)
        _write_all(wfd, _HEADER.pack(len(data)) + data)


if __name__ == "__main__":
    worker_main(sys.argv[1])
