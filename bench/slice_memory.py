"""Memory and time of reading one (hardware, quant) slice for the shape model: what the
replica that validates a slice's predictions reads (issue 23: at 10^8 candidates that
replica peaked at 1.1-1.25 GB, reading each of the slice's 17 cells whole).

Builds a store (``bench/scale_store.py``'s bulk path) holding one slice: ``--models``
cells (GB300 · NVFP4) of ``--rows`` candidates each, ``--versions`` TensorRT-LLM
versions x 2 world sizes per cell. Then, each in a fresh child process (its peak RSS,
VmHWM, is its own; ``rss_before_mib``: the child after opening the store):

* ``whole``: each cell's frame read whole through ``DashData.cell_frame`` (the cached
  read path), then ``configuration_frame(frame, rows=answer_rows(frame))`` -- how the
  slice was read before stop 35;
* ``pieces``: ``service.predictions_shape.slice_frame`` -- the cells read in pieces,
  keeping only the rows of each configuration's latest version
  (``service.cell_configurations``);
* ``validate``: ``service.predictions_shape.model_validation`` (slice read + shape
  fits + leave-one-model-out), what the validating replica computes;
* ``visited``: the same validation in a process whose frame cache visitors filled
  first (the slice's cells read through ``DashData.cell_frame`` until the cache is at
  its byte budget, then the Best table of the last one): the single DuckDB process
  that validates a slice after an upload, its visitors' frames held.

The two slice frames are compared (rows and values). Prints a table and writes
``bench/results/slice_memory-ENGINE.json``.

    .venv/bin/python bench/slice_memory.py [--engine postgresql] [--models 4]
        [--rows 1000000] [--versions 60] [--keep URL]

``--keep URL``: build into (or reuse) the store at URL and leave it; otherwise a
temporary DuckDB file or PostgreSQL schema, removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scale_store import build, cells  # noqa: E402
from db.store import open_store  # noqa: E402

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
HARDWARE, QUANT = "GB300", "NVFP4"
MODES = ("whole", "pieces", "validate", "visited")


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def slice_cells(models: int) -> list[tuple[str, str, str]]:
    """``models`` cells of the GB300 · NVFP4 slice (the named models, then synthetic)."""
    return [c for c in cells(6 * models) if c[1:] == (HARDWARE, QUANT)][:models]


def child(mode: str, url: str, out: str) -> None:
    """One measurement in this (fresh) process; writes its JSON to ``out``."""
    import pandas as pd

    from analysis.identity import configuration_frame
    from analysis.predict_shape import answer_rows
    from service import predictions_shape as PS
    from service.frames import DashData

    store = open_store(url, upgrade=False)
    data = DashData(store)
    before = _status_mib("VmRSS")
    t = time.perf_counter()
    extra: dict[str, Any] = {}
    if mode == "whole":
        parts = []
        for cell in data.cells_matching({"hardware": HARDWARE, "quant": QUANT}):
            frame = data.cell_frame(cell)
            parts.append(configuration_frame(frame, rows=answer_rows(frame)))
            del frame
        got = pd.concat(parts, ignore_index=True)
    elif mode == "pieces":
        got = PS.slice_frame(data, HARDWARE, QUANT)
    else:
        if mode == "visited":
            extra["rss_visited_mib"] = _visit(data)
        summary = PS.model_validation(data, HARDWARE, QUANT)["summary"]
        extra["models"] = summary.get("n_models")
        extra["prefer_tree_below"] = summary.get("prefer_tree_below")
        got = None
    seconds = time.perf_counter() - t
    if got is not None:
        plain = got.astype({c: object for c in got.columns if str(got[c].dtype) == "category"})
        plain.to_pickle(out + ".frame.pkl")
        extra["rows"] = len(got)
    result = {"mode": mode, "seconds": round(seconds, 1), "rss_before_mib": round(before),
              "rss_peak_mib": round(_status_mib("VmHWM")), **extra}  # fmt: skip
    Path(out).write_text(json.dumps(result))
    store.close()


def _visit(data: Any) -> int:
    """Fill the frame cache as visitors do (each cell's frame, the Best table of the
    last); returns the RSS after (MiB)."""
    from service.best import cell_best

    cell = None
    for cell in data.cells_matching({"hardware": HARDWARE, "quant": QUANT})[:3]:
        data.cell_frame(cell)
    if cell is not None:
        cell_best(data, cell, "dashboard")
    return round(_status_mib("VmRSS"))


def _run_child(mode: str, url: str, tmp: Path) -> dict[str, Any]:
    out = str(tmp / f"{mode}.json")
    subprocess.run([sys.executable, __file__, "--child", mode, url, out], check=True)
    result: dict[str, Any] = json.loads(Path(out).read_text())
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="postgresql", choices=["duckdb", "postgresql"])
    ap.add_argument("--models", type=int, default=4)
    ap.add_argument("--rows", type=int, default=1_000_000, help="candidates per cell")
    ap.add_argument("--versions", type=int, default=60)
    ap.add_argument("--pg-url", default=PG_URL)
    ap.add_argument("--keep", help="build into / reuse the store at this URL and keep it")
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    import pandas as pd

    tmp = Path(tempfile.mkdtemp(prefix="slice_memory_"))
    schema_name = None
    if args.keep:
        url = args.keep
    elif args.engine == "duckdb":
        url = f"duckdb:///{tmp / 'slice.duckdb'}"
    else:
        schema_name = "bench_slice_" + uuid.uuid4().hex[:8]
        url = f"{args.pg_url}?options=-csearch_path%3D{schema_name}"
    admin = sa.create_engine(args.pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        if schema_name:
            with admin.begin() as conn:
                conn.exec_driver_sql(f"CREATE SCHEMA {schema_name}")
        # the DuckDB builder with a large pool (bench/scale.py's); the children keep the
        # app's own setting
        store = open_store(f"{url}?memory_limit=8GB" if url.startswith("duckdb") else url)
        t = time.perf_counter()
        built = None
        if not store.runs.recent_runs(1).shape[0]:
            chosen = slice_cells(args.models)
            built = build(store, args.rows * len(chosen), args.versions, cell_list=chosen)
        store.close()
        build_s = time.perf_counter() - t
        results = [_run_child(m, url, tmp) for m in args.modes]
        rows = None
        if {"whole", "pieces"} <= set(args.modes):
            whole = pd.read_pickle(tmp / "whole.json.frame.pkl")
            pieces = pd.read_pickle(tmp / "pieces.json.frame.pkl")
            pd.testing.assert_frame_equal(pieces, whole, check_dtype=False, check_exact=True)
            rows = len(whole)
    finally:
        if schema_name:
            with admin.begin() as conn:
                conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema_name} CASCADE")
        admin.dispose()
    equal = "" if rows is None else f"; slice frames equal ({rows:,} rows)"
    print(f"{args.engine}: {args.models} cells x {args.rows:,} candidates, "
          f"{args.versions} versions; build {build_s:.0f} s{equal}")  # fmt: skip
    print(
        f"{'mode':<10}{'seconds':>10}{'RSS before MiB':>16}{'visited MiB':>13}{'RSS peak MiB':>14}"
    )
    for r in results:
        print(f"{r['mode']:<10}{r['seconds']:>10}{r['rss_before_mib']:>16}"
              f"{r.get('rss_visited_mib', '-'):>13}{r['rss_peak_mib']:>14}")  # fmt: skip
    saved = REPO / "bench" / "results" / f"slice_memory-{args.engine}.json"
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps({"engine": args.engine, "models": args.models,
                                 "rows_per_cell": args.rows, "versions": args.versions,
                                 "build_s": round(build_s), "build": built,
                                 "results": results}, indent=2))  # fmt: skip
    print(f"saved {saved}")


if __name__ == "__main__":
    main()
