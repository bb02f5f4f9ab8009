"""Upload throughput under concurrency: ``--uploaders`` clients (default 32) each send
``--files`` distinct reports (default 20) one after another to one `moedash serve` on the
embedded DuckDB (or ``--db`` PostgreSQL), all clients at once, once the server's health
check reports its parse workers ready (``--cold``: as soon as it answers at all).

Latency is per file, from the first byte sent to the answer, retries included (a 429 is
retried after its ``Retry-After``; the count is reported). Afterwards the database is
read back: *lost* = files answered 201 whose run is not stored, or never answered 2xx;
*duplicated* = stored runs beyond the number of distinct files, or two files answered
with the same run id. *cpu ms* is the server process's CPU time (all threads, background
work included) during the run, per upload: on a shared machine the latencies depend on
the load, this much less; *pool ms* is the parse workers' CPU per upload
(``ingest.parse_pool``, the server's children). Reports are synthetic (ingest.demo, one
per seed, so every file is distinct bytes and distinct measurements). Prints a table and writes
bench/results/upload_concurrency.json.

    .venv/bin/python bench/upload_concurrency.py [--uploaders 32] [--files 20]
        [--num-tokens 64] [--db URL] [--cold]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.upload_memory import served  # noqa: E402

_GENERATE = """
import sys
from pathlib import Path
from ingest.demo.report import generate_report
from ingest.demo.jsontext import dump_report
out, n, tokens = Path(sys.argv[1]), int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
for i in range(n):
    report = generate_report("kimi_k2", "GB300", "NVFP4", 8, tokens, seed=1000 + i)
    (out / f"r{i:04d}.json").write_bytes(dump_report(report))
"""


@contextmanager
def isolated(db_url: str | None, tmp: Path) -> Iterator[str]:
    """The database the run writes to: a fresh DuckDB file in ``tmp`` by default; for a
    PostgreSQL URL a fresh schema in that database (its ``search_path``), dropped
    afterwards, so the run neither sees nor leaves rows beside anyone else's."""
    if db_url is None:
        yield f"duckdb:///{tmp / 'conc.duckdb'}"
        return
    if not db_url.startswith("postgres"):
        yield db_url
        return
    import sqlalchemy as sa

    name = f"bench_conc_{os.getpid()}_{time.time_ns() % 10**9}"
    admin = sa.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {name}")
    try:
        yield f"{db_url}{'&' if '?' in db_url else '?'}options=-csearch_path%3D{name}"
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {name} CASCADE")
        admin.dispose()


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between order statistics."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process (all its threads) has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds(pid: int) -> dict[int, float]:
    """CPU seconds of each running child of ``pid`` (the parse pool's workers)."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return {}
    out: dict[int, float] = {}
    for kid in kids:
        with suppress(OSError):
            out[int(kid)] = cpu_seconds(int(kid))
    return out


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def uploader(
    base: str, token: str, files: list[Path], out: list[dict[str, Any]], start: threading.Event
) -> None:
    """Send ``files`` one by one (each read from disk first), recording each answer."""
    with httpx.Client(base_url=base, timeout=120) as client:
        start.wait()
        for path in files:
            body = path.read_bytes()
            t0 = time.perf_counter()
            retries = 0
            while True:
                resp = client.post(
                    "/api/v1/runs",
                    content=body,
                    params={"trtllm_version": "v1.3.0rc26"},
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Content-Type": "application/json",
                    },
                )
                if resp.status_code != 429:
                    break
                retries += 1
                time.sleep(float(resp.headers.get("retry-after", "1")))
            run_ids = [r["run_id"] for r in resp.json().get("runs", [])] if resp.is_success else []
            out.append(
                {
                    "file": path.name,
                    "status": resp.status_code,
                    "seconds": time.perf_counter() - t0,
                    "retries": retries,
                    "run_ids": run_ids,
                }
            )


def wait_for_workers(base: str, timeout_s: float = 60.0) -> float:
    """Seconds until the health check reports every parse worker ready (``moedash
    serve`` starts them in the background; a pool that is off: at once)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        pool = httpx.get(f"{base}/api/v1/health", timeout=5).json().get("parse_pool")
        if pool is None or pool["ready"] >= pool["size"]:
            return time.perf_counter() - t0
        time.sleep(0.1)
    raise RuntimeError("the parse workers did not become ready")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--uploaders", type=int, default=32)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--num-tokens", default="64", help="comma-separated token counts per report")
    ap.add_argument(
        "--db",
        help="database URL (default: a fresh DuckDB file; PostgreSQL: a fresh schema in it)",
    )
    ap.add_argument(
        "--server-repo",
        type=Path,
        default=REPO,
        help="serve from this source tree (e.g. an export of the previous commit)",
    )
    ap.add_argument(
        "--env",
        action="append",
        default=[],
        help="extra server setting NAME=VALUE (e.g. MOEDASH_PARSE_BUDGET_BYTES=1048576)",
    )
    ap.add_argument(
        "--cold",
        action="store_true",
        help="start uploading as soon as the server answers, before its parse workers "
        "are ready (default: wait for them, as a health-checked deployment does)",
    )
    args = ap.parse_args()
    from db.store import open_store

    server_env = {"MOEDASH_WARM_CACHE": "false", **dict(e.split("=", 1) for e in args.env)}
    n = args.uploaders * args.files
    with tempfile.TemporaryDirectory() as d, ExitStack() as stack:
        tmp = Path(d)
        db = stack.enter_context(isolated(args.db, tmp))
        subprocess.run(
            [sys.executable, "-c", _GENERATE, str(tmp), str(n), args.num_tokens],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            check=True,
        )
        paths = sorted(tmp.glob("r*.json"))
        mean_kb = statistics.mean(p.stat().st_size for p in paths) / 1e3
        store = open_store(db)
        token = store.tokens.create_token(f"bench-{time.time_ns()}", ["upload"])[1]
        before = store.table_counts()["runs"]
        store.close()
        results: list[dict[str, Any]] = []
        with served(db, server_env, args.server_repo) as (base, pid):
            warm_s = 0.0 if args.cold else wait_for_workers(base)
            start = threading.Event()
            threads = [
                threading.Thread(
                    target=uploader,
                    args=(base, token, paths[i :: args.uploaders], results, start),
                )
                for i in range(args.uploaders)
            ]
            for t in threads:
                t.start()
            cpu0, t0 = cpu_seconds(pid), time.perf_counter()
            pool0 = children_cpu_seconds(pid)
            client0 = _own_cpu()
            start.set()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            # the server's own CPU while it took the uploads (its background work too)
            server_cpu = cpu_seconds(pid) - cpu0
            # the parse workers' CPU (children alive at the end; one started during the
            # run counts whole, one that exited during it is missing)
            pool_cpu = sum(c - pool0.get(k, 0.0) for k, c in children_cpu_seconds(pid).items())
            client_cpu = _own_cpu() - client0  # the 32 uploaders share the 2 cores too
        store = open_store(db)
        stored = store.table_counts()["runs"] - before
        store.close()
    ok = [r for r in results if r["status"] in (200, 201)]
    ids = [i for r in ok for i in r["run_ids"]]
    secs = [r["seconds"] for r in results]
    row = {
        "database": "postgresql" if db.startswith("postgres") else "duckdb",
        "uploaders": args.uploaders,
        "files": n,
        "report_kb": round(mean_kb),
        "wall_s": round(wall, 2),
        "uploads_per_s": round(n / wall, 1),
        "server_cpu_ms_per_upload": round(1000 * server_cpu / n, 1),
        "pool_cpu_ms_per_upload": round(1000 * pool_cpu / n, 1),
        "client_cpu_ms_per_upload": round(1000 * client_cpu / n, 1),
        "load_average_1m": round(os.getloadavg()[0], 1),
        "cold": args.cold,
        "waited_for_workers_s": round(warm_s, 2),
        "p50_s": round(percentile(secs, 50), 3),
        "p95_s": round(percentile(secs, 95), 3),
        "p99_s": round(percentile(secs, 99), 3),
        "max_s": round(max(secs), 3),
        "retries_429": sum(r["retries"] for r in results),
        "non_2xx": sum(1 for r in results if r["status"] not in (200, 201)),
        # not answered 2xx, or answered but not stored
        "lost": max(n - len(ok), n - stored, 0),
        "duplicated": max(0, stored - n) + (len(ids) - len(set(ids))),
        "stored_runs": stored,
    }
    print(
        f"{'db':10} {'clients':>7} {'files':>5} {'KB':>5} {'wall s':>7} {'up/s':>6} "
        f"{'cpu ms':>6} {'pool ms':>7} {'p50 s':>6} {'p95 s':>6} {'p99 s':>6} {'max s':>6} "
        f"{'429s':>5} {'lost':>4} {'dup':>4}"
    )
    print(
        f"{row['database']:10} {row['uploaders']:>7} {row['files']:>5} {row['report_kb']:>5} "
        f"{row['wall_s']:>7} {row['uploads_per_s']:>6} {row['server_cpu_ms_per_upload']:>6} "
        f"{row['pool_cpu_ms_per_upload']:>7} "
        f"{row['p50_s']:>6} {row['p95_s']:>6} "
        f"{row['p99_s']:>6} {row['max_s']:>6} {row['retries_429']:>5} {row['lost']:>4} "
        f"{row['duplicated']:>4}"
    )
    out = REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    row["server_repo"] = str(args.server_repo)
    row["server_env"] = server_env
    (out / "upload_concurrency.json").write_text(json.dumps({"rows": [row]}, indent=2))


if __name__ == "__main__":
    main()
