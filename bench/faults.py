"""Frozen / stopped / locked PostgreSQL: how long a request waits before its answer, with
the database timeouts at their defaults and at the fault tier's small values. The figures
of docs/security.md.

A private cluster (tests/factories/pg_cluster.py) under one `moedash serve`; for each
fault, GET /api/v1/runs, GET /api/v1/health and an upload with a valid token (body sent
whole), timed on the client. Writes bench/results/faults.json.

    .venv/bin/python bench/faults.py [--defaults]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import httpx
import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from db.store import open_store  # noqa: E402
from tests.factories import EXAMPLE  # noqa: E402
from tests.factories.pg_cluster import private_cluster  # noqa: E402
from tests.factories.servers import running_server  # noqa: E402

SMALL = {
    "MOEDASH_DB_STATEMENT_TIMEOUT_S": "3",
    "MOEDASH_DB_CONNECT_TIMEOUT_S": "2",
    "MOEDASH_DB_LOCK_TIMEOUT_S": "2",
    "MOEDASH_DB_POOL_TIMEOUT_S": "3",
}
BASE_ENV = {
    "MOEDASH_WARM_CACHE": "false",
    "MOEDASH_ENABLE_DASHBOARD": "false",
    "MOEDASH_PARSE_WORKERS": "0",
}


def timed(fn: object) -> tuple[int, float]:
    t0 = time.monotonic()
    try:
        status = fn().status_code  # type: ignore[operator]
    except httpx.HTTPError:
        status = 0
    return status, round(time.monotonic() - t0, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--defaults", action="store_true", help="default timeouts")
    args = parser.parse_args()
    env = BASE_ENV if args.defaults else {**BASE_ENV, **SMALL}
    rows: list[dict[str, object]] = []
    with private_cluster() as cluster:
        store = open_store(cluster.url)
        token = store.tokens.create_token("ci", ["upload"])[1]
        store.close()
        with running_server(cluster.url, env=env) as base:
            auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            body = EXAMPLE.read_bytes()
            reqs = {
                "GET /api/v1/runs": lambda: httpx.get(f"{base}/api/v1/runs", timeout=300),
                "GET /api/v1/health": lambda: httpx.get(f"{base}/api/v1/health", timeout=300),
                "POST /api/v1/runs": lambda: httpx.post(
                    f"{base}/api/v1/runs", content=body, headers=auth, timeout=300,
                    params={"trtllm_version": "v1", "hardware": "GB300"},
                ),
            }  # fmt: skip

            def measure(fault: str) -> None:
                for name, fn in reqs.items():
                    status, secs = timed(fn)
                    rows.append({"fault": fault, "request": name, "status": status, "s": secs})

            httpx.get(f"{base}/api/v1/runs", timeout=30)
            cluster.freeze()
            measure("frozen (SIGSTOP)")
            cluster.thaw()
            time.sleep(1)
            cluster.stop()
            measure("stopped")
            cluster.start()
            time.sleep(1)
            httpx.get(f"{base}/api/v1/health", timeout=30)
            engine = sa.create_engine(cluster.url.replace("postgresql://", "postgresql+psycopg://"))
            with engine.begin() as conn:
                conn.exec_driver_sql("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
                status, secs = timed(lambda: httpx.get(f"{base}/api/v1/runs", timeout=60))
                rows.append({"fault": "runs locked", "request": "GET /api/v1/runs",
                             "status": status, "s": secs})  # fmt: skip
            engine.dispose()
    print(f"timeouts: {'defaults' if args.defaults else SMALL}")
    for r in rows:
        print(f"{r['fault']:<18} {r['request']:<20} {r['status']:>4} {r['s']:>7} s")
    out = REPO / "bench" / "results"
    out.mkdir(exist_ok=True)
    name = "faults_defaults.json" if args.defaults else "faults.json"
    (out / name).write_text(json.dumps({"env": env, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
