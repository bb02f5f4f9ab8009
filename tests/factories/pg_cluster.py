"""A private PostgreSQL cluster a test starts, stops, freezes (SIGSTOP) and thaws: the
faults a shared production server has, without touching the shared test server.

initdb/pg_ctl come from ``MOEDASH_PG_BIN`` (default /usr/lib/postgresql/15/bin). PostgreSQL
refuses to run as root, so under root (CI) every command runs as the ``postgres`` user
(runuser) in a directory under /tmp that user owns; otherwise as the caller. Loopback
only, on a free port, trust authentication, fsync off."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.factories.servers import free_port

PG_BIN = Path(os.environ.get("MOEDASH_PG_BIN", "/usr/lib/postgresql/15/bin"))


class Cluster:
    def __init__(self, root: Path, port: int, as_user: list[str]) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self.as_user = as_user
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *args: str) -> None:
        subprocess.run(
            [*self.as_user, *args], check=True, capture_output=True, cwd=self.root, timeout=60
        )

    def init(self) -> None:
        self._run(
            str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "--no-sync", "-E", "UTF8",
        )  # fmt: skip

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=50"
        )
        self._run(
            str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options,
            "-l", str(self.root / "log"), "-w", "-t", "30", "start",
        )  # fmt: skip

    def stop(self) -> None:
        """Stop at once (as a crash or a kill would), every connection dropped."""
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def pids(self) -> list[int]:
        """The postmaster and every process it started."""
        master = int((self.data / "postmaster.pid").read_text().split()[0])
        found = [master]
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                stat = (proc / "stat").read_text()
            except OSError:
                continue
            # the fields after the command name (which may hold spaces) start with state, ppid
            if int(stat.rsplit(")", 1)[1].split()[1]) == master:
                found.append(int(proc.name))
        return found

    def freeze(self) -> None:
        """SIGSTOP the whole cluster: sockets stay open and the kernel still accepts
        connections, but nothing answers (a hung host, a partition that drops nothing)."""
        for pid in self.pids():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self.pids():
            os.kill(pid, signal.SIGCONT)


@contextmanager
def private_cluster() -> Iterator[Cluster]:
    """A fresh, running cluster until the block ends (then stopped and removed)."""
    root = Path(tempfile.mkdtemp(prefix="moedash-faults-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    cluster = Cluster(root, free_port(), as_user)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        with suppress(OSError, ValueError):
            cluster.thaw()
        with suppress(subprocess.SubprocessError, OSError):
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
