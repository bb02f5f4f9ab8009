"""The synthetic store of ``bench/scale.py`` (issue 23): ``n_cells`` cells (model x
hardware x quant) of equal size, 2 world sizes x ``versions`` TensorRT-LLM versions (one
run each) per cell, loaded with each engine's bulk path (DuckDB: insert from Arrow;
PostgreSQL: COPY of CSV made by Arrow), candidates and measurements side by side."""

from __future__ import annotations

import io
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import sqlalchemy as sa

from analysis import columns as C
from bench._common import MODELS, run_dict
from db import dialects, schema, summaries
from db.store import Store

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


def _run(model: str, hardware: str, quant: str, ws: int, run_date: str) -> dict[str, Any]:
    """``run_dict``'s row; a synthetic ``moe_NNN`` model takes a named model's shape."""
    shapes = list(MODELS)
    shape = model if model in MODELS else shapes[int(model.removeprefix("moe_")) % len(shapes)]
    run = run_dict(shape, hardware, quant, ws, run_date)
    run[C.MODEL] = model
    return run


def _arrow(run_id: int, cols: dict[str, np.ndarray]) -> pa.Table:
    n = len(cols[C.CANDIDATE_INDEX])
    data = {C.RUN_ID: pa.array(np.full(n, run_id, np.int64))}
    for name, values in cols.items():
        data[name] = pa.array(values, from_pandas=True)
    return pa.table(data)


def _next(conn: sa.Connection, seq: str) -> int:
    return int(conn.execute(sa.text(f"SELECT nextval('{seq}')")).scalar_one())


def build(
    store: Store,
    total: int,
    versions: int,
    n_cells: int = 10,
    cell_list: list[tuple[str, str, str]] | None = None,
) -> dict[str, Any]:
    """Fill an empty store with ``total`` candidates in ``n_cells`` cells (see module
    docstring; ``cell_list``: these cells instead); returns the build times and the
    cells. The measurements table is bulk-loaded beside the candidates (the same rows
    with their run's cell keys, as ``StatsRepository.record_runs`` writes them), and
    the runs' summaries from it. PostgreSQL's bulk path: the two tables' keys and
    indexes are dropped for the load and built after it (2M rows: 52 -> 26 s), then the
    summaries are written."""
    chosen = cell_list if cell_list is not None else cells(n_cells)
    n_cells = len(chosen)
    per_run = max(1, total // (n_cells * len(WORLD_SIZES) * versions))
    engine = store.engine
    t0 = time.perf_counter()
    deferred = _drop_indexes(engine) if store.dialect == "postgresql" else []
    made: list[dict[str, Any]] = []
    every_run: list[int] = []
    for k, (model, hardware, quant) in enumerate(chosen):
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
            tables, measured, ids = [], [], []
            for v in range(versions):
                for ws in WORLD_SIZES:
                    run_id = _next(conn, "run_id_seq")
                    cols = run_candidates(per_run, ws, seed=run_id)
                    n_fail = int((cols[C.STATUS] == "failed").sum())
                    run = _run(model, hardware, quant, ws, f"2026-{1 + v // 28:02d}-01")
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
                    ids.append(run_id)
                    keys = {c: run[c] for c in schema.MEASUREMENT_RUN_KEYS}
                    measured.append(_measurement_arrow(run_id, cols, keys))
            _bulk(conn, pa.concat_tables(tables))
            _bulk(conn, pa.concat_tables(measured), "measurements")
            if not deferred:  # (else after the indexes: see below)
                summaries.summarize(conn, ids)
            made.append({"cell": [model, hardware, quant], "runs": len(tables)})
            every_run += ids
    t_cand = time.perf_counter() - t0
    t1 = time.perf_counter()
    _create_indexes(engine, deferred)
    t_index = time.perf_counter() - t1
    t1 = time.perf_counter()
    if deferred:
        _summarize_all(engine, every_run)
    t_summary = time.perf_counter() - t1
    t1 = time.perf_counter()
    if store.dialect == "postgresql":
        # statistics before the first query over the fresh tables: without them the
        # planner hashes every measurement row for the check below (140 s at 10M)
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                # this store's tables only: a bare ANALYZE takes every schema's
                "ANALYZE runs, candidates, measurements, run_workloads, run_capabilities"
            )
    t_analyze = time.perf_counter() - t1
    t1 = time.perf_counter()
    for model, hardware, quant in chosen:
        store.stats.ensure_cell(model, hardware, quant)  # nothing left to copy: a check
    t_meas = time.perf_counter() - t1
    plan = ""
    if store.dialect == "postgresql":
        with engine.connect() as conn:
            model, hardware, quant = chosen[0]
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
        "build_indexes_s": round(t_index, 1),
        "summaries_s": round(t_summary, 1),
        "analyze_s": round(t_analyze, 1),
        "fill_measurements_s": round(t_meas, 1),
        "cells": made,
    }


# The bulk-loaded tables whose indexes PostgreSQL builds after the load (sorted once)
# instead of maintaining them row by row through it.
_DEFERRED = (schema.candidates, schema.measurements)


def _drop_indexes(engine: sa.Engine) -> list[sa.schema.ExecutableDDLElement]:
    """Drop the loaded tables' primary keys and indexes; returns the DDL that builds
    them again (the same definitions as the tables'). Only for an empty store: no row is
    checked against a key while they are gone, and bench data is unique by making."""
    again: list[sa.schema.ExecutableDDLElement] = []
    with engine.begin() as conn:
        for table in _DEFERRED:
            for index in table.indexes:
                conn.execute(sa.schema.DropIndex(index))
                again.append(sa.schema.CreateIndex(index))
            conn.execute(sa.schema.DropConstraint(table.primary_key))
            again.append(sa.schema.AddConstraint(table.primary_key))
    return again


def _unbounded(engine: sa.Engine) -> sa.Engine:
    """An engine on the same database without the app's statement timeout and watchdog
    (``db.timeouts``): an index over 10^8 rows takes minutes, not the app's seconds."""
    return sa.create_engine(engine.url)


def _create_indexes(engine: sa.Engine, ddl: list[sa.schema.ExecutableDDLElement]) -> None:
    if not ddl:
        return
    builder = _unbounded(engine)
    try:
        with builder.begin() as conn:
            conn.exec_driver_sql("SET LOCAL maintenance_work_mem = '1GB'")
            for statement in ddl:
                conn.execute(statement)
    finally:
        builder.dispose()


def _summarize_all(engine: sa.Engine, run_ids: list[int]) -> None:
    """The runs' summaries, as the recording of an upload writes them: on PostgreSQL
    once the measurements have their index (without one, each cell's would scan every
    row loaded so far), in one statement per table over every run."""
    builder = _unbounded(engine)
    try:
        with builder.begin() as conn:
            summaries.summarize(conn, run_ids)
    finally:
        builder.dispose()


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
