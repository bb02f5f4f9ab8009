"""A team's year of sweeps: route timings, memory per replica and the engine's own SQL on
synthetic stores of 1M-100M candidates (issue 23).

For each engine and size the store is built with the engine's bulk path (DuckDB: insert
from Arrow; PostgreSQL: COPY of CSV made by Arrow), 10 cells (model x hardware x quant)
of equal size, 2 world sizes x ``--versions`` TensorRT-LLM versions (one run each) per
cell; then the measurements table is filled the way an old database is caught up
(``StatsRepository.ensure_cell``, one INSERT ... SELECT per cell). Then a fresh
**replica** process (the real app, dashboard off, over Starlette's test client) does:

* ``warm-up``: ``service.warm.warm_all`` (what ``moedash serve`` starts), its time and
  the process's peak RSS;
* per route, one cell: p50 / p95 over ``--repeats`` requests (warm caches; every
  request re-reads the cells' versions, as the API does);
* ``cold cell``: the first /pareto of cell B (not warmed: its frame is read whole);
  then an upload (10k candidates) to cell B and ``first visit, other cell``: the first
  /pareto and /best of cell A; ``first visit, same cell``: the first /pareto of cell B
  after that upload (its cached frame is appended to, the answer computed again);
* ``unfiltered``: /pareto and /best without a filter (a 422 naming the filter to add
  once the store is bigger than one answer may read);
* ``engine SQL``: the best configuration per workload of cell A written directly in the
  engine's SQL (median over repeats, rank 1 per workload) and the /best route's p50
  against it (ratio);
* RSS: peak (VmHWM) and steady (VmRSS after the scenario) of the replica.

With ``--replicas N`` (PostgreSQL), N replica processes run the scenario at the same
time on the same database; each reports its own numbers.

    .venv/bin/python bench/scale.py [--sizes 1000000 10000000] [--engines duckdb postgresql]
        [--repeats 15] [--replicas 1] [--pg-url postgresql://postgres@127.0.0.1:5432/test]
        [--duckdb-memory-limit 512MB] [--keep-stores DIR]

``--keep-stores DIR`` builds each store once and measures later runs on it (see
``--help``). Prints a table and writes bench/results/scale.json. Goals: RSS per replica <= 1 GB,
one-cell p95 <= 500 ms, first visit after an upload <= 1 s, within 2x of the engine's
SQL. The PostgreSQL store lives in its own schema, dropped afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis import columns as C  # noqa: E402
from bench._common import run_dict  # noqa: E402
from bench.scale_store import build, cells, run_candidates  # noqa: E402
from db import dialects  # noqa: E402
from db.errors import NotFound  # noqa: E402
from db.session import DUCKDB_MEMORY_LIMIT  # noqa: E402
from db.store import Store, open_store  # noqa: E402

RESULTS = REPO / "bench" / "results" / "scale.json"
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
BUILD_MEMORY_LIMIT = "8GB"  # DuckDB builder only (_builder_url)


# ---------------------------------------------------------------- replica process
def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


class _Peak:
    """The process's peak RSS per phase: ``phase()`` reads the peak since the last
    phase (VmHWM, then reset through ``/proc/self/clear_refs``) and keeps the overall
    maximum, so each route's own peak shows, not the largest one before it."""

    def __init__(self) -> None:
        self.max_mb = _status_mb("VmHWM")

    def phase(self) -> dict[str, float]:
        peak = _status_mb("VmHWM")
        self.max_mb = max(self.max_mb, peak)
        with contextlib.suppress(OSError):  # not Linux: the peaks stay cumulative
            Path("/proc/self/clear_refs").write_text("5")
        return {"peak_mb": round(peak), "rss_mb": round(_status_mb("VmRSS"))}


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs) * 1000.0, q)) if xs else float("nan")


def replica(url: str, repeats: int, versions: int, warm_predictions: bool = True) -> dict[str, Any]:
    """The scenario of one replica (module docstring), in this process
    (``warm_predictions``: the predictions' validation warmed at start and after the
    upload, as ``moedash serve`` does by default)."""
    from fastapi.testclient import TestClient

    from moedash.app import create_app
    from moedash.settings import Settings
    from service.frames import DashData
    from service.precompute import precompute_runs, precomputer
    from service.warm import warm_all

    store = open_store(url, upgrade=False)
    app = create_app(Settings(database_url=url, enable_dashboard=False), store=store)
    app.state.data = data = DashData(store)  # what serve shares with the dashboard
    data.warm_predictions = warm_predictions
    out: dict[str, Any] = {"rss_start_mb": round(_status_mb("VmRSS"))}
    (am, ah, aq), (bm, bh, bq) = cells()[0], cells()[1]
    cell_a = {"model": am, "hardware": ah, "quant": aq}
    cell_b = {"model": bm, "hardware": bh, "quant": bq}
    with TestClient(app) as client:
        t0 = time.perf_counter()
        warm_all(data)
        out["warm_up_s"] = round(time.perf_counter() - t0, 2)
        peaks = _Peak()
        out["warm_up_peak_mb"] = round(peaks.max_mb)
        out["memory"] = {"warm_up": peaks.phase()}
        base, head = "1.0.1", f"1.{(versions - 1) // 20}.{(versions - 1) % 20}"
        routes = {
            "pareto": ("/api/v1/pareto", {**cell_a, "world_size": 8, "phase": "decode"}),
            "best": ("/api/v1/best", cell_a),
            "history": ("/api/v1/history", {**cell_a, "world_size": 8, "num_tokens": 64}),
            "compare": ("/api/v1/compare", {**cell_a, "base": base, "head": head}),
            "crossovers": ("/api/v1/crossovers", cell_a),
            "thresholds": ("/api/v1/thresholds", cell_a),
            "agreement": ("/api/v1/agreement", cell_a),
        }
        timings: dict[str, Any] = {}
        for name, (path, params) in routes.items():
            times, status = [], 0
            for i in range(repeats + 1):
                t = time.perf_counter()
                res = client.get(path, params=params)
                if i:  # the first request of a route fills its cache
                    times.append(time.perf_counter() - t)
                status = res.status_code
            timings[name] = {
                "status": status,
                "first_ms": None,
                "p50_ms": round(_pct(times, 50), 1),
                "p95_ms": round(_pct(times, 95), 1),
                "bytes": len(res.content),
            }
            out["memory"][name] = peaks.phase()
        out["routes"] = timings
        out["peak_after_routes_mb"] = round(peaks.max_mb)
        # cell B's first visit (cold: not warmed), then an upload to it, then the
        # first visits of cell A (other) and cell B (same: its frame is appended to)
        t = time.perf_counter()
        client.get("/api/v1/pareto", params={**cell_b, "world_size": 8, "phase": "decode"})
        out["first_visit_cold_cell_ms"] = round((time.perf_counter() - t) * 1000, 1)
        out["memory"]["cold_cell"] = peaks.phase()
        upload = _upload_sweep(store, bm, bh, bq)
        # what the upload route does next: the cell's first answers, off-request
        t_up = time.perf_counter()
        precompute_runs(data, [upload])
        t = time.perf_counter()
        client.get("/api/v1/pareto", params={**cell_a, "world_size": 8, "phase": "decode"})
        client.get("/api/v1/best", params=cell_a)
        out["first_visit_other_cell_ms"] = round((time.perf_counter() - t) * 1000, 1)
        precomputer(data).wait()
        out["precompute_after_upload_s"] = round(time.perf_counter() - t_up, 2)
        out["memory"]["upload_precompute"] = peaks.phase()
        out["peak_after_precompute_mb"] = round(peaks.max_mb)
        t = time.perf_counter()
        client.get("/api/v1/pareto", params={**cell_b, "world_size": 8, "phase": "decode"})
        client.get("/api/v1/best", params=cell_b)
        out["first_visit_same_cell_ms"] = round((time.perf_counter() - t) * 1000, 1)
        out["memory"]["same_cell_after_upload"] = peaks.phase()
        # another replica (its own read path, same database): the stored answers
        other = create_app(Settings(database_url=url, enable_dashboard=False), store=store)
        other.state.data = DashData(store)
        with TestClient(other) as client2:
            t = time.perf_counter()
            client2.get("/api/v1/pareto", params={**cell_b, "world_size": 8, "phase": "decode"})
            client2.get("/api/v1/best", params=cell_b)
            out["first_visit_same_cell_other_replica_ms"] = round(
                (time.perf_counter() - t) * 1000, 1
            )
        out["upload_run"] = upload
        unfiltered = {}
        for name in ("pareto", "best"):
            t = time.perf_counter()
            res = client.get(f"/api/v1/{name}")
            unfiltered[name] = {
                "status": res.status_code,
                "ms": round((time.perf_counter() - t) * 1000, 1),
                "msg": res.json()["detail"][0]["msg"][:120] if res.status_code == 422 else "",
            }
        out["unfiltered"] = unfiltered
        sql_times = [_engine_best(store, am, ah, aq) for _ in range(max(3, repeats // 3))]
        out["engine_sql_best_p50_ms"] = round(_pct(sql_times, 50), 1)
        out["ratio_best_vs_sql"] = round(
            timings["best"]["p50_ms"] / out["engine_sql_best_p50_ms"], 2
        )
    import gc

    gc.collect()
    out["memory"]["rest"] = peaks.phase()
    out["rss_steady_mb"] = round(_status_mb("VmRSS"))
    out["rss_peak_mb"] = round(peaks.max_mb)
    store.close()
    return out


def _upload_sweep(store: Store, model: str, hardware: str, quant: str) -> int:
    """One 10k-candidate upload to a cell through ``Store.ingest`` (the API's path)."""
    import pandas as pd

    from ingest.records import Sweep, UploadMeta

    cols = run_candidates(10_000, 8, seed=int(time.time()))
    frame = pd.DataFrame({c: cols.get(c, [None] * 10_000) for c in C.CANDIDATE_COLUMNS})
    run = run_dict(model, hardware, quant, 8, "2026-12-01")
    run[C.TRTLLM_VERSION] = "1.9.9"
    sweep = Sweep(key="", run=run, candidates=frame)
    result = store.ingest([sweep], uuid.uuid4().bytes, UploadMeta(hardware=hardware))
    return result.runs[0].run_id


_BEST_SQL = """
WITH cfg AS (
  SELECT world_size, num_tokens, dispatch, attn, cuda_graph, backend, comm_requested, comm,
         parallel_mode, moe_ep_size, moe_tp_size, attention_dp, low_precision_combine,
         num_chunks, {median} AS s
  FROM measurements
  WHERE model = ? AND hardware = ? AND quant = ? AND status = 'success'
    AND score_ms IS NOT NULL
  GROUP BY world_size, num_tokens, dispatch, attn, cuda_graph, backend, comm_requested,
           comm, parallel_mode, moe_ep_size, moe_tp_size, attention_dp,
           low_precision_combine, num_chunks
), ranked AS (
  SELECT *, row_number() OVER (PARTITION BY world_size, num_tokens, dispatch, attn,
         cuda_graph ORDER BY s) AS r FROM cfg
)
SELECT * FROM ranked WHERE r = 1
"""


def _engine_best(store: Store, model: str, hardware: str, quant: str) -> float:
    """Seconds for the best configuration per workload of one cell in the engine's own
    SQL (median over all runs of a configuration: a simplification of moedash's rule,
    which pools repeats per version), fetched into a DataFrame."""
    median = (
        "quantile_cont(score_ms, 0.5)"
        if store.dialect == "duckdb"
        else "percentile_cont(0.5) WITHIN GROUP (ORDER BY score_ms)"
    )
    with store.engine.connect() as conn:
        t = time.perf_counter()
        dialects.read_frame(conn, _BEST_SQL.format(median=median), [model, hardware, quant])
        return time.perf_counter() - t


# ---------------------------------------------------------------- driver
def _store_url(engine: str, tmp: Path, pg_url: str) -> tuple[str, str | None]:
    if engine == "duckdb":
        return f"duckdb:///{tmp / 'scale.duckdb'}", None
    name = "bench_scale_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {name}")
    admin.dispose()
    return f"{pg_url}?options=-csearch_path%3D{name}", name


def _drop(pg_url: str, name: str | None) -> None:
    if name is None:
        return
    admin = sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    admin.dispose()


def _kept(
    engine: str, size: int, args: argparse.Namespace, tmp: Path
) -> tuple[str, dict[str, Any]]:
    """``--keep-stores``: the store of this engine and size built once into that
    directory (DuckDB: a file, copied for each run so the replica's upload leaves it as
    built; PostgreSQL: a schema kept between runs, the upload deleted after each), and
    its build figures."""
    keep = Path(args.keep_stores)
    keep.mkdir(parents=True, exist_ok=True)
    name = f"scale_{size}_{args.cells}c_{args.versions}v"
    info = keep / f"{engine}-{name}.json"
    kept = keep / f"{name}.duckdb"
    schema_name = f"bench_keep_{name}"
    if engine == "duckdb":
        url = f"duckdb:///{kept}"
        if not info.exists():  # a build that did not finish: from the start
            for path in (kept, kept.with_suffix(".duckdb.wal")):
                path.unlink(missing_ok=True)
    else:
        admin = sa.create_engine(args.pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
        with admin.begin() as conn:
            if not info.exists():
                conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema_name} CASCADE")
            conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {schema_name}")
        admin.dispose()
        url = f"{args.pg_url}?options=-csearch_path%3D{schema_name}"
    if not info.exists():
        store = open_store(_builder_url(url))
        try:
            info.write_text(json.dumps(build(store, size, args.versions, args.cells)))
        finally:
            store.close()
    if engine == "duckdb":
        copy = tmp / "scale.duckdb"
        shutil.copyfile(kept, copy)
        url = f"duckdb:///{copy}"
    return url, {**json.loads(info.read_text()), "reused": str(info)}


def _builder_url(url: str) -> str:
    """The builder's URL: on DuckDB with a buffer pool for the bulk load (its inserts of a
    1M-row cell beside a store of millions ran out of the app's default
    ``db.session.DUCKDB_MEMORY_LIMIT``); the replicas keep the app's own setting."""
    return f"{url}?memory_limit={BUILD_MEMORY_LIMIT}" if url.startswith("duckdb") else url


def _forget_uploads(url: str, replicas: list[dict[str, Any]]) -> None:
    """A kept PostgreSQL store as built again: the replicas' uploads deleted and the
    answers they shared forgotten (the next run computes them as on a new store)."""
    store = open_store(url, upgrade=False)
    try:
        # replicas uploading the same sweep share one run (uploads are idempotent)
        for run_id in sorted({int(r["upload_run"]) for r in replicas if r.get("upload_run")}):
            with contextlib.suppress(NotFound):  # gone already
                store.delete_run(run_id)
        store.answers.forget_cells(["|".join(cell) for cell in cells()])
    finally:
        store.close()


def one(engine: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="moedash-scale-") as tmp:
        schema_name = None
        if args.keep_stores:
            url, built = _kept(engine, size, args, Path(tmp))
        else:
            url, schema_name = _store_url(engine, Path(tmp), args.pg_url)
        try:
            if not args.keep_stores:
                store = open_store(_builder_url(url))
                try:
                    built = build(store, size, args.versions, args.cells)
                finally:
                    store.close()
            replica_url = url
            n = args.replicas if engine == "postgresql" else 1
            if engine == "duckdb" and args.duckdb_memory_limit:
                # a DuckDB URL's query sets its configuration (the replica's only)
                replica_url += f"?memory_limit={args.duckdb_memory_limit}"
            cmd = [sys.executable, __file__, "--replica", replica_url]
            cmd += ["--repeats", str(args.repeats), "--versions", str(args.versions)]
            cmd += ["--no-warm-predictions"] if args.no_warm_predictions else []
            procs = [
                subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=REPO, env=dict(os.environ))
                for _ in range(n)
            ]
            replicas = [json.loads(p.communicate()[0].decode().splitlines()[-1]) for p in procs]
            RESULTS.parent.mkdir(parents=True, exist_ok=True)  # kept whatever happens next
            RESULTS.with_name(f"scale-replicas-{engine}-{size}.json").write_text(
                json.dumps(replicas, indent=1)
            )
            if args.keep_stores and engine == "postgresql":
                _forget_uploads(url, replicas)
        finally:
            _drop(args.pg_url, schema_name)
    return {
        "engine": engine,
        "size": size,
        "duckdb_memory_limit": args.duckdb_memory_limit or DUCKDB_MEMORY_LIMIT,
        "warm_predictions": not args.no_warm_predictions,
        "build": built,
        "replicas": replicas,
    }


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| engine | candidates | route (one cell) | p50 ms | p95 ms | status |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        rep = r["replicas"][0]
        for name, t in rep["routes"].items():
            lines.append(
                f"| {r['engine']} | {r['build']['candidates']:,} | {name} | {t['p50_ms']} | "
                f"{t['p95_ms']} | {t['status']} |"
            )
    lines += [
        "",
        "| engine | candidates | build s (candidates + measurements) | warm-up s | warm-up "
        "peak MB | RSS peak / steady MB (per replica) | first visit other cell ms | upload's "
        "answers precomputed s | first visit same cell ms (this / another replica) | "
        "cold cell first visit ms | unfiltered /pareto, /best | engine SQL "
        "best ms | /best : SQL |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        b = r["build"]
        reps = r["replicas"]
        rss = ", ".join(f"{x['rss_peak_mb']} / {x['rss_steady_mb']}" for x in reps)
        rep = reps[0]
        unf = ", ".join(f"{v['status']} in {v['ms']} ms" for v in rep["unfiltered"].values())
        lines.append(
            f"| {r['engine']} | {b['candidates']:,} | {b['load_candidates_s']} + "
            f"{b['fill_measurements_s']} | {rep['warm_up_s']} | {rep['warm_up_peak_mb']} | "
            f"{rss} | {rep['first_visit_other_cell_ms']} | {rep['precompute_after_upload_s']} | "
            f"{rep['first_visit_same_cell_ms']} / "
            f"{rep['first_visit_same_cell_other_replica_ms']} | "
            f"{rep['first_visit_cold_cell_ms']} | "
            f"{unf} | {rep['engine_sql_best_p50_ms']} | {rep['ratio_best_vs_sql']} |"
        )
    lines += [
        "",
        "| engine | candidates | phase | peak MB | RSS after MB |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        for phase, m in r["replicas"][0].get("memory", {}).items():
            lines.append(
                f"| {r['engine']} | {r['build']['candidates']:,} | {phase} | {m['peak_mb']} | "
                f"{m['rss_mb']} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--engines", nargs="+", default=["duckdb", "postgresql"])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--versions", type=int, default=60)
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--cells", type=int, default=10, help="cells the candidates spread over")
    ap.add_argument("--pg-url", default=PG_URL)
    ap.add_argument(
        "--duckdb-memory-limit",
        help="DuckDB memory_limit of the replica (e.g. 512MB; default the app's, "
        "db.session.DUCKDB_MEMORY_LIMIT)",
    )
    ap.add_argument(
        "--keep-stores",
        metavar="DIR",
        help="build each engine and size's store once and reuse it on later runs (DuckDB: "
        "a file in DIR, copied per run; PostgreSQL: a kept schema, the run's upload "
        "deleted after it; drop it by hand when done)",
    )
    ap.add_argument(
        "--no-warm-predictions",
        action="store_true",
        help="the replica does not warm the predictions' validation (MOEDASH_WARM_PREDICTIONS"
        "=false): the read path's own memory without issue 24's slice-wide validation",
    )
    ap.add_argument("--replica", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.replica:
        print(
            json.dumps(
                replica(args.replica, args.repeats, args.versions, not args.no_warm_predictions)
            )
        )
        return
    results = []
    for size in args.sizes:
        for engine in args.engines:
            print(f"{engine} {size:,} ...", file=sys.stderr, flush=True)
            results.append(one(engine, size, args))
            print(table(results[-1:]), file=sys.stderr, flush=True)
    print(table(results))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    runs = old.get("runs", [])
    runs.append({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": results})
    RESULTS.write_text(json.dumps({"runs": runs}, indent=1))


if __name__ == "__main__":
    main()
