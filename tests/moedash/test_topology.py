"""Deployment properties that need real processes: several app replicas on one
PostgreSQL database (the docker-compose topology without Docker), and atomicity when
the writing process is killed midway."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from db.store import open_store
from tests.factories import EXAMPLE
from tests.factories.servers import REPO, running_server


@pytest.mark.postgres
def test_two_app_processes_share_one_postgres(pg_schema_url: str, tmp_path: Path) -> None:
    store = open_store(pg_schema_url)
    secret = store.tokens.create_token("ci", ["upload"])[1]
    store.close()
    raw = EXAMPLE.read_bytes()
    other = raw.replace(b"moedash-fixture-b200-07", b"moedash-fixture-b200-08")
    assert other != raw
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    env = {"MOEDASH_MIGRATE_ON_START": "true"}
    with running_server(pg_schema_url, env=env) as a, running_server(pg_schema_url, env=env) as b:
        first = httpx.post(f"{a}/api/v1/runs", content=raw, headers=headers, timeout=30)
        second = httpx.post(f"{b}/api/v1/runs", content=other, headers=headers, timeout=30)
        assert first.status_code == 201 and second.status_code == 201
        # The same new bytes through both replicas at once: one run, one "created".
        third = raw.replace(b"moedash-fixture-b200-07", b"moedash-fixture-b200-09")
        with ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(
                    lambda base: httpx.post(
                        f"{base}/api/v1/runs", content=third, headers=headers, timeout=30
                    ),
                    [a, b, a, b],
                )
            )
        assert sorted(r.status_code for r in answers) == [200, 200, 200, 201]
        assert len({r.json()["runs"][0]["run_id"] for r in answers}) == 1
        for base in (a, b):
            assert httpx.get(f"{base}/api/v1/runs").json()["total"] == 3
    store = open_store(pg_schema_url)
    assert store.table_counts()["candidates"] == 36
    store.close()


_WRITER = """
import sys, time
from db.store import open_store
from tests.factories.sweeps import make_sweep
from ingest.records import UploadMeta
store = open_store(sys.argv[1])
sweep = make_sweep(int(sys.argv[2]))
print("ready", flush=True)
store.ingest([sweep], sys.argv[3].encode(), UploadMeta(hardware="GB300"))
print("done", flush=True)
"""


def test_upload_killed_midway_leaves_nothing(db_url: str, tmp_path: Path) -> None:
    open_store(db_url).close()  # schema first, so the child spends its time ingesting
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    for attempt, delay in enumerate((0.4, 0.2, 0.1, 0.05, 0.0)):
        store = open_store(db_url)
        before = store.table_counts()
        store.close()
        proc = subprocess.Popen(
            [sys.executable, str(script), db_url, "400000", f"killed-midway-{attempt}"],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        try:
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(delay)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        finished = "done" in proc.stdout.read()
        proc.stdout.close()
        store = open_store(db_url)
        counts = store.table_counts()
        store.close()
        if finished:
            assert counts["candidates"] == before["candidates"] + 400000
            continue
        assert counts == before  # nothing of the killed upload is visible
        return
    pytest.fail("the writer always finished before the kill; could not test a midway kill")
