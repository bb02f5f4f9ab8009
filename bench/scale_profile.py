"""Where one replica's memory goes on one 1M-row cell (issue 23): the raw read, the
prepared frame, each route's first (filling) request, what the caches hold, and how much
the allocator keeps after the frames are gone.

    .venv/bin/python bench/scale_profile.py [--engine duckdb|postgresql] [--rows 1000000]
        [--no-trim]

Builds a one-cell store with ``bench/scale_store.build`` (DuckDB in a temp dir;
PostgreSQL in its own schema, dropped afterwards), then profiles a fresh process:
per step the peak RSS since the previous step (VmHWM, reset through
``/proc/self/clear_refs``) and the RSS after it, in MB: the cell read whole and
prepared (the store's ``cell_frame``, then ``prepare_frame``), the read path's own read
(``DashData.cell_frame``), the routes, then a 10k-candidate upload to the cell and its
precompute (the cached frame appended to; the upload is deleted afterwards). Prints a
table and the JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scale import PG_URL, _drop, _store_url, _upload_sweep  # noqa: E402
from bench.scale_store import build, cells  # noqa: E402
from db.store import open_store  # noqa: E402


def _mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _step(out: list[dict[str, Any]], name: str, t0: float, **extra: Any) -> float:
    peak = _mb("VmHWM")
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    out.append(
        {
            "step": name,
            "peak_mb": round(peak),
            "rss_mb": round(_mb("VmRSS")),
            "s": round(time.perf_counter() - t0, 2),
            **extra,
        }
    )
    return time.perf_counter()


def _frame_mb(value: Any) -> float:
    """MB of the DataFrames and arrays a cached value holds, as the caches weigh it
    (``service.lru.bytes_held``: deep, each object once)."""
    from service.lru import bytes_held

    return bytes_held(value) / 2**20


def _caches(data: Any) -> dict[str, Any]:
    out = {}
    for name in ("_cells", "_results", "_per_frame", "_small", "_coverage"):
        lru = getattr(data, name)
        items = list(lru._items.items())
        out[name] = {
            "entries": len(items),
            "weight_mb": round(lru.weight / 2**20, 1),  # what the cache counts (bytes)
            "frames_mb": round(sum(_frame_mb(v) for _k, v in items), 1),
            "top": sorted(((round(_frame_mb(v), 1), str(k)[:80]) for k, v in items), reverse=True)[
                :4
            ],
        }
    return out


def profile(url: str, trim: bool) -> dict[str, Any]:
    """The steps of the module docstring in this process."""
    from fastapi.testclient import TestClient

    from moedash.app import create_app
    from moedash.settings import Settings
    from service.allocator import limit_arenas
    from service.frames import CELL_COLUMNS, Cell, DashData, prepare_frame
    from service.precompute import precompute_runs, precomputer

    limit_arenas()  # what create_app does first; here before the raw read
    libc = ctypes.CDLL("libc.so.6")

    def trimmed() -> None:
        gc.collect()
        if trim:
            libc.malloc_trim(0)

    steps: list[dict[str, Any]] = []
    store = open_store(url, upgrade=False)
    model, hardware, quant = cells(1)[0]
    # answers shared by an earlier profile of a --url store: computed again, as new
    store.answers.forget_cells([f"{model}|{hardware}|{quant}"])
    t = _step(steps, "start", time.perf_counter())
    raw = store.stats.cell_frame(model, hardware, quant, columns=CELL_COLUMNS, categorical=True)
    t = _step(steps, "raw read", t, frame_mb=round(_frame_mb(raw)))
    prep = prepare_frame(raw)
    t = _step(steps, "prepare_frame", t, frame_mb=round(_frame_mb(prep)))
    del raw, prep
    gc.collect()
    t = _step(steps, "frames freed", t)
    trimmed()
    t = _step(steps, "malloc_trim" if trim else "gc", t)
    # the read path's own read of the cell (since issue 23's last change: in pieces)
    cell_frame = DashData(store).cell_frame(Cell(model, hardware, quant))
    t = _step(steps, "DashData.cell_frame", t, frame_mb=round(_frame_mb(cell_frame)))
    del cell_frame
    trimmed()
    t = _step(steps, "freed, " + ("trimmed" if trim else "gc"), t)
    app = create_app(Settings(database_url=url, enable_dashboard=False), store=store)
    app.state.data = data = DashData(store)
    cell = {"model": model, "hardware": hardware, "quant": quant}
    routes = {
        "pareto": ("/api/v1/pareto", {**cell, "world_size": 8, "phase": "decode"}),
        "best": ("/api/v1/best", cell),
        "history": ("/api/v1/history", {**cell, "world_size": 8, "num_tokens": 64}),
        "compare": ("/api/v1/compare", {**cell, "base": "1.0.1", "head": "1.2.19"}),
        "crossovers": ("/api/v1/crossovers", cell),
        "thresholds": ("/api/v1/thresholds", cell),
        "agreement": ("/api/v1/agreement", cell),
    }
    with TestClient(app) as client:
        t = _step(steps, "app", t)
        for name, (path, params) in routes.items():
            res = client.get(path, params=params)
            t = _step(steps, f"{name} ({res.status_code})", t)
        caches = _caches(data)
        trimmed()
        t = _step(steps, "after routes, " + ("trimmed" if trim else "gc"), t)
        # an upload to the cell and what follows it (bench/scale.py's "upload +
        # precompute"): the cached frame appended to, the cell's answers again
        upload = _upload_sweep(store, model, hardware, quant)
        t = _step(steps, "upload", t)
        data.invalidate()
        appended = data.cell_frame(Cell(model, hardware, quant))
        t = _step(steps, "cell frame appended to", t, frame_mb=round(_frame_mb(appended)))
        del appended
        precompute_runs(data, [upload])
        precomputer(data).wait()
        t = _step(steps, "precompute", t)
        trimmed()
        t = _step(steps, "after, " + ("trimmed" if trim else "gc"), t)
    store.delete_run(upload)  # a store given with --url is profiled again as it was
    store.close()
    return {"steps": steps, "caches": caches}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="duckdb", choices=["duckdb", "postgresql"])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--versions", type=int, default=60)
    ap.add_argument("--pg-url", default=PG_URL)
    ap.add_argument("--no-trim", action="store_true")
    ap.add_argument("--url", help="profile this store (built before) instead of a new one")
    ap.add_argument("--build-to", help="only build a one-cell store at this URL")
    ap.add_argument("--profile", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.profile:
        print(json.dumps(profile(args.profile, not args.no_trim)))
        return
    if args.build_to:
        store = open_store(args.build_to)
        t0 = time.perf_counter()
        build(store, args.rows, args.versions, n_cells=1)
        store.close()
        print(f"built in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory(prefix="moedash-profile-") as tmp:
        url, schema_name = args.url, None
        if url is None:
            url, schema_name = _store_url(args.engine, Path(tmp), args.pg_url)
        try:
            if args.url is None:
                store = open_store(url)
                try:
                    build(store, args.rows, args.versions, n_cells=1)
                finally:
                    store.close()
            cmd = [sys.executable, __file__, "--profile", url]
            cmd += ["--no-trim"] if args.no_trim else []
            out = subprocess.run(cmd, capture_output=True, cwd=REPO, check=True)
            result = json.loads(out.stdout.decode().splitlines()[-1])
        finally:
            _drop(args.pg_url, schema_name)
    print("| step | peak MB | RSS after MB | s | frame MB |\n|---|---|---|---|---|")
    for s in result["steps"]:
        print(
            f"| {s['step']} | {s['peak_mb']} | {s['rss_mb']} | {s['s']} | {s.get('frame_mb', '')} |"
        )
    print(json.dumps(result["caches"], indent=1))


if __name__ == "__main__":
    main()
