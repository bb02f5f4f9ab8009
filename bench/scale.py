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
        [--duckdb-memory-limit 512MB]

Prints a table and writes bench/results/scale.json. Goals: RSS per replica <= 1 GB,
one-cell p95 <= 500 ms, first visit after an upload <= 1 s, within 2x of the engine's
SQL. The PostgreSQL store lives in its own schema, dropped afterwards.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis import columns as C  # noqa: E402
from bench._common import MODELS, run_dict  # noqa: E402
from db import dialects, schema  # noqa: E402
from db.store import Store, open_store  # noqa: E402

RESULTS = REPO / "bench" / "results" / "scale.json"
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
HARDWARE = ("GB300", "B300", "H200")
QUANTS = ("NVFP4", "FP8")
BACKENDS = np.array(["TRTLLM", "CUTEDSL", "CUTLASS", "MEGAMOE_CUTEDSL", "DENSEGEMM"], object)
COMMS = np.array(["NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED", "NONE"], object)
DISPATCH = np.array(["balanced", "random"], object)
TOKENS = 2 ** np.arange(14)
WORLD_SIZES = (4, 8)


def cells(n: int = 10) -> list[tuple[str, str, str]]:
    """``n`` distinct (model, hardware, quant) cells, in a fixed order (beyond the named
    models', synthetic ``moe_NNN`` models: a team's year spans many)."""
    out = [(m, h, q) for m in MODELS for h in HARDWARE for q in QUANTS]
    i = 0
    while len(out) < n:
        out += [(f"moe_{i:03d}", h, q) for h in HARDWARE for q in QUANTS]
        i += 1
    return out[:n]


def run_candidates(n: int, ws: int, seed: int) -> dict[str, np.ndarray]:
    """``n`` candidates of one run: the first ``n`` of a fixed grid of workloads x
    configurations (so runs of a cell measure the same configurations), scores from the
    configuration plus per-run noise, one in ten failed."""
    i = np.arange(n)
    tokens = TOKENS[i % len(TOKENS)]
    j = i // len(TOKENS)
    backend = BACKENDS[j % 5]
    comm = COMMS[(j // 5) % 3]
    dep = (j // 15) % 2 == 0
    graph = (j // 30) % 2 == 0
    dispatch = DISPATCH[(j // 60) % 2]
    chunks = 1 + (j // 120) % 64
    rng = np.random.default_rng(seed)
    base = 0.02 * tokens**0.8 * (1 + 0.15 * (j % 5)) * (1 + 0.01 * chunks)
    score = base * rng.lognormal(0.0, 0.03, n)
    failed = i % 10 == 9
    stdev = score * rng.uniform(0.005, 0.05, n)
    return {
        C.CANDIDATE_INDEX: i.astype(np.int64),
        C.NUM_TOKENS: tokens.astype(np.int64),
        C.PARALLEL_MODE: np.where(dep, "DEP", "TEP").astype(object),
        C.ATTENTION_DP: dep,
        C.ATTN: np.where(dep, "D", "T").astype(object),
        C.MOE_EP_SIZE: np.where(dep, ws, 1).astype(np.int64),
        C.MOE_TP_SIZE: np.where(dep, 1, ws).astype(np.int64),
        C.BACKEND: backend,
        C.REQUESTED_BACKEND: backend,
        C.COMM: comm,
        C.COMM_REQUESTED: comm,
        C.CUDA_GRAPH: graph,
        C.LOW_PRECISION_COMBINE: np.zeros(n, bool),
        C.NUM_CHUNKS: chunks.astype(np.int64),
        C.DISPATCH: dispatch,
        C.STATUS: np.where(failed, "failed", "success").astype(object),
        C.SCORE_MS: np.where(failed, np.nan, score),
        C.ITER_MEDIAN_MS: np.where(failed, np.nan, score),
        C.ITER_STDEV_MS: np.where(failed, np.nan, stdev),
        C.ITER_P90_MS: np.where(failed, np.nan, score + 1.28 * stdev),
        C.OUTLIER_COUNT: np.zeros(n, np.int64),
    }


def _arrow(run_id: int, cols: dict[str, np.ndarray]) -> pa.Table:
    n = len(cols[C.CANDIDATE_INDEX])
    data = {C.RUN_ID: pa.array(np.full(n, run_id, np.int64))}
    for name, values in cols.items():
        data[name] = pa.array(values, from_pandas=True)
    return pa.table(data)


def _next(conn: sa.Connection, seq: str) -> int:
    return int(conn.execute(sa.text(f"SELECT nextval('{seq}')")).scalar_one())


def build(store: Store, total: int, versions: int, n_cells: int = 10) -> dict[str, Any]:
    """Fill an empty store with ``total`` candidates in ``n_cells`` cells (see module
    docstring); returns the build times and the cells. The measurements table is
    bulk-loaded beside the candidates (the same rows with their run's cell keys, as
    ``StatsRepository.record_runs`` writes them)."""
    per_run = max(1, total // (n_cells * len(WORLD_SIZES) * versions))
    engine = store.engine
    t0 = time.perf_counter()
    made: list[dict[str, Any]] = []
    for k, (model, hardware, quant) in enumerate(cells(n_cells)):
        with engine.begin() as conn:
            upload_id = _next(conn, "upload_id_seq")
            conn.execute(
                schema.uploads.insert().values(
                    upload_id=upload_id,
                    sha256=uuid.uuid4().hex,
                    filename=f"bench-{k}.json",
                    source_format="bench_moe",
                    size_bytes=0,
                    compression="zstd",
                    content=b"",
                    meta_json="{}",
                    uploaded_at=sa.func.now(),
                )
            )
            tables, measured = [], []
            for v in range(versions):
                for ws in WORLD_SIZES:
                    run_id = _next(conn, "run_id_seq")
                    cols = run_candidates(per_run, ws, seed=run_id)
                    n_fail = int((cols[C.STATUS] == "failed").sum())
                    run = run_dict(model, hardware, quant, ws, f"2026-{1 + v // 28:02d}-01")
                    run.update(
                        {
                            C.RUN_ID: run_id,
                            C.TRTLLM_VERSION: f"1.{v // 20}.{v % 20}",
                            "upload_id": upload_id,
                            "run_key": f"bench-{run_id}",
                            "sweep_key": f"ws={ws}",
                            "n_candidates": per_run,
                            "n_success": per_run - n_fail,
                            "n_failed": n_fail,
                            "n_skipped": 0,
                            "created_at": sa.func.now(),
                        }
                    )
                    conn.execute(schema.runs.insert().values(**run))
                    tables.append(_arrow(run_id, cols))
                    keys = {c: run[c] for c in schema.MEASUREMENT_RUN_KEYS}
                    measured.append(_measurement_arrow(run_id, cols, keys))
            _bulk(conn, pa.concat_tables(tables))
            _bulk(conn, pa.concat_tables(measured), "measurements")
            made.append({"cell": [model, hardware, quant], "runs": len(tables)})
    t_cand = time.perf_counter() - t0
    t1 = time.perf_counter()
    for model, hardware, quant in cells(n_cells):
        store.stats.ensure_cell(model, hardware, quant)  # nothing left to copy: a check
    t_meas = time.perf_counter() - t1
    plan = ""
    if store.dialect == "postgresql":
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
            model, hardware, quant = cells()[0]
            rows = conn.exec_driver_sql(
                "EXPLAIN SELECT * FROM measurements WHERE model = %s AND hardware = %s "
                "AND quant = %s ORDER BY model, hardware, quant, run_id, candidate_index",
                (model, hardware, quant),
            ).all()
            plan = " / ".join(str(r[0]).strip() for r in rows[:2])
    return {
        "one_cell_plan": plan,
        "candidates": per_run * len(WORLD_SIZES) * versions * n_cells,
        "per_run": per_run,
        "load_candidates_s": round(t_cand, 1),
        "fill_measurements_s": round(t_meas, 1),
        "cells": made,
    }


def _measurement_arrow(run_id: int, cols: dict[str, np.ndarray], keys: dict[str, Any]) -> pa.Table:
    n = len(cols[C.CANDIDATE_INDEX])
    data = {C.RUN_ID: pa.array(np.full(n, run_id, np.int64))}
    for name, value in keys.items():
        data[name] = pa.array([value] * n)
    for name in schema.MEASUREMENT_COLUMNS:
        values = cols.get(name)
        data[name] = (
            pa.array(values, from_pandas=True) if values is not None else pa.nulls(n, pa.string())
        )
    return pa.table(data)


def _bulk(conn: sa.Connection, table: pa.Table, name: str = "candidates") -> None:
    """The engine's bulk path: DuckDB inserts from Arrow, PostgreSQL takes COPY CSV."""
    raw: Any = conn.connection.driver_connection
    if dialects.is_duckdb(conn):
        dialects.insert_arrow(raw, name, table)
        return
    buf = io.BytesIO()
    pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False))
    cols = ", ".join(f'"{c}"' for c in table.column_names)
    with raw.cursor() as cur, cur.copy(f"COPY {name} ({cols}) FROM STDIN (FORMAT csv)") as cp:
        view = buf.getbuffer()
        for start in range(0, len(view), 1 << 22):
            cp.write(view[start : start + (1 << 22)])


# ---------------------------------------------------------------- replica process
def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs) * 1000.0, q)) if xs else float("nan")


def replica(url: str, repeats: int, versions: int) -> dict[str, Any]:
    """The scenario of one replica (module docstring), in this process."""
    from fastapi.testclient import TestClient

    from moedash.app import create_app
    from moedash.settings import Settings
    from service.frames import DashData
    from service.precompute import precompute_runs, precomputer
    from service.warm import warm_all

    store = open_store(url, upgrade=False)
    app = create_app(Settings(database_url=url, enable_dashboard=False), store=store)
    app.state.data = data = DashData(store)  # what serve shares with the dashboard
    out: dict[str, Any] = {"rss_start_mb": round(_status_mb("VmRSS"))}
    (am, ah, aq), (bm, bh, bq) = cells()[0], cells()[1]
    cell_a = {"model": am, "hardware": ah, "quant": aq}
    cell_b = {"model": bm, "hardware": bh, "quant": bq}
    with TestClient(app) as client:
        t0 = time.perf_counter()
        warm_all(data)
        out["warm_up_s"] = round(time.perf_counter() - t0, 2)
        out["warm_up_peak_mb"] = round(_status_mb("VmHWM"))
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
        out["routes"] = timings
        out["peak_after_routes_mb"] = round(_status_mb("VmHWM"))
        # cell B's first visit (cold: not warmed), then an upload to it, then the
        # first visits of cell A (other) and cell B (same: its frame is appended to)
        t = time.perf_counter()
        client.get("/api/v1/pareto", params={**cell_b, "world_size": 8, "phase": "decode"})
        out["first_visit_cold_cell_ms"] = round((time.perf_counter() - t) * 1000, 1)
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
        out["peak_after_precompute_mb"] = round(_status_mb("VmHWM"))
        t = time.perf_counter()
        client.get("/api/v1/pareto", params={**cell_b, "world_size": 8, "phase": "decode"})
        client.get("/api/v1/best", params=cell_b)
        out["first_visit_same_cell_ms"] = round((time.perf_counter() - t) * 1000, 1)
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
    out["rss_steady_mb"] = round(_status_mb("VmRSS"))
    out["rss_peak_mb"] = round(_status_mb("VmHWM"))
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


def one(engine: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="moedash-scale-") as tmp:
        url, schema_name = _store_url(engine, Path(tmp), args.pg_url)
        try:
            store = open_store(url)
            try:
                built = build(store, size, args.versions, args.cells)
            finally:
                store.close()
            n = args.replicas if engine == "postgresql" else 1
            if engine == "duckdb" and args.duckdb_memory_limit:
                # a DuckDB URL's query sets its configuration (the replica's only)
                url += f"?memory_limit={args.duckdb_memory_limit}"
            cmd = [sys.executable, __file__, "--replica", url]
            cmd += ["--repeats", str(args.repeats), "--versions", str(args.versions)]
            procs = [
                subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=REPO, env=dict(os.environ))
                for _ in range(n)
            ]
            replicas = [json.loads(p.communicate()[0].decode().splitlines()[-1]) for p in procs]
        finally:
            _drop(args.pg_url, schema_name)
    return {
        "engine": engine,
        "size": size,
        "duckdb_memory_limit": args.duckdb_memory_limit,
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
        help="DuckDB memory_limit of the replica (e.g. 512MB; default DuckDB's 80%% of RAM)",
    )
    ap.add_argument("--replica", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.replica:
        print(json.dumps(replica(args.replica, args.repeats, args.versions)))
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
