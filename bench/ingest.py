"""Ingest speed: a 100,000-candidate bench_moe report through the CLI path and the HTTP
API, against DuckDB reading the same file natively, in one run.

Each measurement runs in a fresh subprocess so its peak RSS is its own.
Prints a table and writes bench/results/ingest.json.

    .venv/bin/python bench/ingest.py [--candidates 100000] [--repeat 3] [--pg URL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

_CHILD = r"""
import json, resource, sys, time
mode, path, db, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t0 = time.perf_counter()
if mode == "native":
    import duckdb
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # it would print to stdout
    rows = con.execute(
        "SELECT count(*) FROM (SELECT unnest(results, max_depth := 2) "
        "FROM read_json(?, maximum_object_size := 2000000000, format := 'auto'))",
        [path],
    ).fetchone()[0]
elif mode == "parse":
    from pathlib import Path
    from ingest.records import UploadMeta
    from ingest.detect import parse_path
    sweeps = parse_path(Path(path), UploadMeta(hardware="GB300"))
    rows = sum(len(s.candidates) for s in sweeps)
elif mode == "cli":
    from pathlib import Path
    from ingest.records import UploadMeta
    from db.store import open_store
    from ingest.detect import parse_path
    store = open_store(db)
    t0 = time.perf_counter()
    raw = Path(path).read_bytes()
    meta = UploadMeta(hardware="GB300", filename=path)
    rows = store.ingest(parse_path(Path(path), meta), raw, meta).n_candidates
elif mode == "api":
    from pathlib import Path
    from ingest.records import UploadMeta
    from moedash.client import upload_file
    url, token = db.split("|", 1)
    t0 = time.perf_counter()
    rows = upload_file(Path(path), url=url, token=token, meta=UploadMeta(hardware="GB300"),
                       retries=0, timeout=600)["n_candidates"]
elapsed = time.perf_counter() - t0
print(json.dumps({"seconds": elapsed, "rows": rows,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


_GENERATE = """
import sys
from pathlib import Path
from ingest.demo.generate import big_report, dump_report
report = big_report(int(sys.argv[2]), seed=1, with_raw_samples=sys.argv[3] == "1")
Path(sys.argv[1]).write_bytes(dump_report(report))
"""


def child(mode: str, path: Path, db: str, n: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(path), db, str(n)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def api_run(path: Path, tmp: Path, n: int, i: int, pg: str | None) -> dict[str, float]:
    from db.store import open_store
    from tests.factories.servers import running_server

    db = pg or f"duckdb:///{tmp / f'api{i}.duckdb'}"
    store = open_store(db)
    secret = store.tokens.create_token(f"bench{i}-{time.time_ns()}", ["upload"])[1]
    store.close()
    env = {"MOEDASH_ENABLE_DASHBOARD": "false", "MOEDASH_MAX_UPLOAD_BYTES": str(4 << 30)}
    with running_server(db, env=env) as base:
        return child("api", path, f"{base}|{secret}", n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidates", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pg", help="also measure the CLI path on this PostgreSQL URL")
    ap.add_argument(
        "--no-raw-samples",
        action="store_true",
        help="rows without raw per-iteration samples (~2 KB instead of ~9 KB a row)",
    )
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        path = tmp / "big.json"
        t0 = time.perf_counter()
        # Generated in a child process: Linux keeps a process's peak RSS across exec, so
        # generating here would inflate every measurement child's peak memory.
        subprocess.run(
            [
                sys.executable,
                "-c",
                _GENERATE,
                str(path),
                str(args.candidates),
                "0" if args.no_raw_samples else "1",
            ],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            check=True,
        )
        gen_s = time.perf_counter() - t0
        size_mb = path.stat().st_size / 1e6
        results: dict[str, list[dict[str, float]]] = {}
        for i in range(args.repeat):
            results.setdefault("duckdb native read_json", []).append(
                child("native", path, "", args.candidates)
            )
            results.setdefault("parse only", []).append(child("parse", path, "", args.candidates))
            results.setdefault("CLI ingest -> DuckDB", []).append(
                child("cli", path, f"duckdb:///{tmp / f'cli{i}.duckdb'}", args.candidates)
            )
            if args.pg:
                pg_url, schema_name = _fresh_pg_schema(args.pg, i)
                try:
                    results.setdefault("CLI ingest -> PostgreSQL", []).append(
                        child("cli", path, pg_url, args.candidates)
                    )
                finally:
                    _drop_pg_schema(args.pg, schema_name)
            results.setdefault("API upload -> DuckDB", []).append(
                api_run(path, tmp, args.candidates, i, None)
            )

    native = statistics.median(r["seconds"] for r in results["duckdb native read_json"])
    table = []
    for name, runs in results.items():
        secs = statistics.median(r["seconds"] for r in runs)
        rows = runs[0]["rows"]
        table.append(
            {
                "path": name,
                "median_s": round(secs, 3),
                "candidates_per_s": round(rows / secs),
                "vs_native": round(secs / native, 2),
                "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs)),
                "rows": int(rows),
            }
        )
    print(f"report: {args.candidates} candidates, {size_mb:.0f} MB, generated in {gen_s:.1f} s")
    print(f"{'path':28} {'median s':>9} {'cand/s':>10} {'x native':>9} {'peak MB':>8}")
    for row in table:
        print(
            f"{row['path']:28} {row['median_s']:>9} {row['candidates_per_s']:>10} "
            f"{row['vs_native']:>9} {row['peak_rss_mb']:>8}"
        )
    out = REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ingest.json").write_text(
        json.dumps(
            {
                "candidates": args.candidates,
                "raw_samples": not args.no_raw_samples,
                "file_mb": size_mb,
                "repeat": args.repeat,
                "rows": table,
            },
            indent=2,
        )
    )


def _drop_pg_schema(url: str, name: str) -> None:
    import sqlalchemy as sa

    eng = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with eng.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    eng.dispose()


def _fresh_pg_schema(url: str, i: int) -> tuple[str, str]:
    import sqlalchemy as sa

    name = f"bench_ingest_{i}_{os.getpid()}"
    eng = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with eng.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        conn.exec_driver_sql(f"CREATE SCHEMA {name}")
    eng.dispose()
    return f"{url}?options=-csearch_path%3D{name}", name


if __name__ == "__main__":
    main()
