"""Start real `moedash serve` processes for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _drain(stream: IO[str]) -> None:
    for _ in stream:
        pass


@contextmanager
def running_server(
    db_url: str, *, demo: bool = False, env: dict[str, str] | None = None, timeout: float = 180.0
) -> Iterator[str]:
    """Run `moedash serve` on a free port until the block ends; yields the base URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "moedash.cli", "serve", "--db", db_url, "--port", str(port)]
    if not demo:
        cmd.append("--no-demo")
    full_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    base = f"http://127.0.0.1:{port}"
    drain: threading.Thread | None = None
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"server exited early:\n{proc.stdout.read() if proc.stdout else ''}"
                )
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not become healthy in time")
            time.sleep(0.2)
        # keep reading the server's output: a full pipe would block its logging (and so
        # the request that logs, e.g. every 503 with its traceback) for ever
        if proc.stdout is not None:
            drain = threading.Thread(target=_drain, args=(proc.stdout,), daemon=True)
            drain.start()
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if drain is not None:
            drain.join(10)  # the pipe ends with the process
        if proc.stdout:
            proc.stdout.close()
