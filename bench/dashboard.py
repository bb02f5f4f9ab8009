"""Dashboard timings at 1M and 10M stored candidates.

For each size: generate candidates with numpy and store them through ``Store.ingest``
(DuckDB native frame insert), then measure in-process

* ``pareto``: filter change -> Pareto figure (``pages.pareto.update_figure``: the view
  from ``service.pareto.cell_pareto`` and the figure builder, plus the JSON
  serialisation Dash does), over a rotation of filter/axis combinations, warm cell
  cache; and the figure payload size;
* ``best``: the best-by-workload table callback (first call computes
  ``service.best.cell_best_table``; later calls hit the cache) plus its JSON size;
* ``cell load``: the cold load of one cell frame from the store;

then start ``moedash serve`` on the file and time the first render of the Pareto page
in headless Chromium (navigation -> figure drawn): cold (server just started; its cache
warm-up may still be running), warm (server cache warm, fresh browser context each time)
and revisit (the same browser context again: HTTP and V8 code caches warm).

Layout of the data: 1M = one model x hardware x quant cell (4 world sizes, 10 runs);
10M = four cells of 2.5M rows each (the callbacks work on one cell at a time), and again
as one cell of 10M rows (the worst case: the Pareto page's "all world sizes" view of that
cell draws from all 10M rows; ``--no-huge-cell`` skips it).

Usage: python bench/dashboard.py [--sizes 1000000 10000000] [--repeats 40]
Prints a table and writes bench/results/dashboard.json (the first results written there
stay under "baseline"). Goals: p95 <= 150 ms at 1M,
<= 400 ms at 10M, payload <= 500 KB, first render <= 1.5 s.

``python bench/dashboard.py --published [--repeats N]`` instead times the first render
of Overview, Pareto, Best and Recommend on the real published snapshot, with the
plotly.js partial bundle and with Dash's full one (bench/first_render.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.io as pio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis import columns as C  # noqa: E402
from bench._common import MODELS, free_port, run_dict, wait_healthy  # noqa: E402
from dashboard.pages import best, pareto  # noqa: E402
from db.store import Store, open_store  # noqa: E402
from ingest.records import Sweep, UploadMeta  # noqa: E402
from service.frames import Cell, DashData  # noqa: E402

BACKENDS = np.array(["TRTLLM", "CUTEDSL", "CUTLASS", "MEGAMOE_CUTEDSL", "DENSEGEMM"], object)
COMMS = np.array(
    ["NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED", "DEEPEP", "DEEPEPLOWLATENCY", "ALLGATHER", "NONE"],
    object,
)
MODES = np.array(["DEP", "TEP", "DTP", "TTP"], object)
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def make_candidates(n: int, ws: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mode_i = rng.integers(0, 4, n)
    dp = (mode_i % 2) == 0
    ep = np.where(mode_i < 2, ws, 1)
    nt = 2 ** rng.integers(0, 16, n)
    backend = BACKENDS[rng.integers(0, len(BACKENDS), n)]
    comm = np.where(dp, COMMS[rng.integers(0, len(COMMS), n)], "NONE")
    graph = rng.random(n) < 0.5
    status = np.where(
        rng.random(n) < 0.9, "success", np.where(rng.random(n) < 0.5, "failed", "skipped")
    )
    base = 0.02 + nt * (6e-5 if dp.any() else 1e-4) / np.maximum(ep, 1) * 4
    score = base * rng.lognormal(0.0, 0.25, n) * np.where(graph, 1.0, 1.3)
    score = np.where(status == "success", score, np.nan)
    data: dict[str, Any] = {c: None for c in C.CANDIDATE_COLUMNS}
    data.update(
        {
            C.CANDIDATE_INDEX: np.arange(n),
            C.NUM_TOKENS: nt,
            C.PARALLEL_MODE: MODES[mode_i],
            C.ATTENTION_DP: dp,
            C.ATTN: np.where(dp, "D", "T"),
            C.MOE_EP_SIZE: ep,
            C.MOE_TP_SIZE: ws // ep,
            C.BACKEND: backend,
            C.REQUESTED_BACKEND: backend,
            C.COMM: comm,
            C.COMM_REQUESTED: comm,
            C.CUDA_GRAPH: graph,
            C.LOW_PRECISION_COMBINE: np.ones(n, bool),
            C.DISPATCH: np.where(rng.random(n) < 0.8, "balanced", "recv_hotspot"),
            C.STATUS: status,
            C.FAILURE_CATEGORY: np.where(status == "success", None, "timed_phase_error"),
            C.SCORE_MS: score,
            C.RAW_SCORE_MS: score * 1.01,
            C.ITER_MEDIAN_MS: score,
            C.ITER_STDEV_MS: score * 0.01,
            C.ITER_P90_MS: score * 1.02,
            C.OUTLIER_COUNT: np.zeros(n, np.int64),
            C.N_ITERS: np.full(n, 12),
            C.AUTOTUNE_STATUS: "success",
        }
    )
    frame = pd.DataFrame(
        {c: (data[c] if data[c] is not None else [None] * n) for c in C.CANDIDATE_COLUMNS}
    )
    return frame


def build(url: str, total: int, n_cells: int | None = None) -> tuple[float, list[Cell]]:
    """Store ``total`` rows in ``n_cells`` cells (default: 1 up to 1M rows, else 4);
    returns (seconds, cells)."""
    n_cells = n_cells or (1 if total <= 1_000_000 else 4)
    per_cell = total // n_cells
    per_run = min(250_000, per_cell // 4)
    store = open_store(url)
    t0 = time.perf_counter()
    cells, seq = [], 0
    for model in list(MODELS)[:n_cells]:
        cells.append(Cell(model, "GB300", "NVFP4"))
        stored = 0
        while stored < per_cell:
            ws = (4, 8, 16, 32)[seq % 4]
            n = min(per_run, per_cell - stored)
            sweep = Sweep(
                key="",
                run=run_dict(model, "GB300", "NVFP4", ws),
                candidates=make_candidates(n, ws, seq),
            )
            store.ingest(
                [sweep],
                f"bench-{total}-{seq}".encode(),
                UploadMeta(hardware="GB300", synthetic=True, filename=f"bench-{seq}.json"),
            )
            stored += n
            seq += 1
    store.close()
    return time.perf_counter() - t0, cells


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def queries(cell: Cell) -> list[pareto.ParetoQuery]:
    out = []
    for ws in (None, 4, 8, 16, 32):
        for phase in ("decode", "prefill", "all"):
            out.append(pareto.ParetoQuery(cell=cell, ws=ws, phase=phase))
    out += [
        pareto.ParetoQuery(cell=cell, ws=8, backend=("TRTLLM", "CUTEDSL")),
        pareto.ParetoQuery(cell=cell, ws=16, attn="D", comm=("NONE", "DEEPEP")),
        pareto.ParetoQuery(
            cell=cell, ws=8, x=C.ACTIVATED_TOKENS_PER_RANK, y=C.TOKENS_PER_S_PER_GPU
        ),
        pareto.ParetoQuery(cell=cell, ws=None, phase="all", logx=False, logy=False),
    ]
    return out


def measure_callbacks(store: Store, cell: Cell, repeats: int) -> dict[str, Any]:
    data = DashData(store)
    t0 = time.perf_counter()
    frame = data.cell_frame(cell)
    cold_load = time.perf_counter() - t0
    qs = queries(cell)
    times, sizes = [], []
    for i in range(repeats):  # the first one also builds the cell's Pareto index
        q = qs[i % len(qs)]
        t0 = time.perf_counter()
        fig, _ = pareto.update_figure(data, q)
        payload = pio.to_json(fig, validate=False, engine="orjson")
        times.append(time.perf_counter() - t0)
        sizes.append(len(payload))
    best_cold, best_warm, best_sizes = [], [], []
    for grouping in ("bench_moe", "dashboard"):
        t0 = time.perf_counter()
        body, _ = best.update_table(data, cell.key, grouping, "all")
        best_cold.append(time.perf_counter() - t0)
        for ws in ("all", 4, 8, 16, 32) * max(1, repeats // 10):
            t0 = time.perf_counter()
            body, _ = best.update_table(data, cell.key, grouping, ws)
            best_warm.append(time.perf_counter() - t0)
        best_sizes.append(len(json.dumps(body.to_plotly_json(), default=str)))
    return {
        "cell_rows": len(frame),
        "cell_load_s": cold_load,
        "pareto_first_ms": times[0] * 1000,
        "pareto_p50_ms": pct(times, 50),
        "pareto_p95_ms": pct(times, 95),
        "pareto_max_ms": pct(times, 100),
        "payload_max_kb": max(sizes) / 1024,
        "payload_median_kb": float(np.median(sizes)) / 1024,
        "best_cold_ms": [t * 1000 for t in best_cold],
        "best_warm_p50_ms": pct(best_warm, 50),
        "best_warm_p95_ms": pct(best_warm, 95),
        "best_payload_max_kb": max(best_sizes) / 1024,
    }


def measure_first_render(url: str, cell: Cell) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    port = free_port()
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "moedash.cli",
            "serve",
            "--db",
            url,
            "--port",
            str(port),
            "--no-demo",
        ],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {}
    try:
        wait_healthy(base)
        path = (
            f"/pareto?model={cell.model}&hardware={cell.hardware}&quant={cell.quant}"
            "&ws=8&phase=decode"
        )
        drawn = (
            "() => { const g = document.querySelector('.pareto-graph .js-plotly-plot');"
            " return g && g.data && g.data.length > 1 &&"
            " g.querySelector('.gl-container, .scatterlayer'); }"
        )
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            # cold: the server has just started (its cache warm-up may still run);
            # warm, warm2: server cache warm, new browser context (empty browser cache);
            # revisit: same context as warm2 again (HTTP cache and V8 code cache warm).
            context = None
            for label in ("cold", "warm", "warm2", "revisit"):
                if label != "revisit":
                    if context is not None:
                        context.close()
                    context = browser.new_context(viewport={"width": 1440, "height": 1000})
                page = context.new_page()
                t0 = time.perf_counter()
                page.goto(base + path)
                page.wait_for_function(drawn, timeout=120_000, polling=20)
                out[f"first_render_{label}_s"] = time.perf_counter() - t0
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
    return out


def layouts(sizes: list[int], huge_cell: bool) -> list[tuple[int, int]]:
    """(rows, cells) to measure: each size in its default layout (1 cell up to 1M rows,
    else 4), plus -- with ``huge_cell`` -- every larger size as one cell (the worst case
    a view can show: one model x hardware x quant, "all world sizes")."""
    out = [(size, 1 if size <= 1_000_000 else 4) for size in sizes]
    if huge_cell:
        out += [(size, 1) for size in sizes if size > 1_000_000]
    return out


def main() -> int:
    if "--published" in sys.argv[1:]:
        from bench.first_render import main as first_render

        return first_render([a for a in sys.argv[1:] if a != "--published"])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument(
        "--no-huge-cell",
        action="store_true",
        help="skip the extra one-cell layout of sizes above 1M",
    )
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="moedash-bench-") as tmp:
        for size, n_cells in layouts(args.sizes, not args.no_huge_cell):
            url = f"duckdb:///{tmp}/bench-{size}-{n_cells}.duckdb"
            build_s, cells = build(url, size, n_cells)
            per_cell = size // n_cells
            layout = (
                f"{n_cells} cell(s) x {per_cell:,} rows; each cell = world sizes "
                f"4/8/16/32 in runs of <= {min(250_000, per_cell // 4):,} rows"
            )
            print(f"[{size:,} / {n_cells} cells] stored in {build_s:.1f} s", flush=True)
            store = open_store(url)
            res = {
                "stored_rows": size,
                "cells": len(cells),
                "layout": layout,
                "build_s": build_s,
                **measure_callbacks(store, cells[0], args.repeats),
            }
            store.close()
            if not args.no_browser:
                res.update(measure_first_render(url, cells[0]))
            results.append(res)
            print(json.dumps(res, indent=1), flush=True)
            Path(url.split(":///", 1)[1]).unlink(missing_ok=True)
    head = (
        "rows",
        "cell rows",
        "cell load s",
        "pareto p50 ms",
        "pareto p95 ms",
        "payload max KB",
        "best cold ms",
        "best warm p95 ms",
        "render cold s",
        "render warm s",
        "render revisit s",
    )
    print("  ".join(f"{h:>15}" for h in head))
    for r in results:
        vals = (
            f"{r['stored_rows']:,}",
            f"{r['cell_rows']:,}",
            f"{r['cell_load_s']:.2f}",
            f"{r['pareto_p50_ms']:.0f}",
            f"{r['pareto_p95_ms']:.0f}",
            f"{r['payload_max_kb']:.0f}",
            "/".join(f"{t:.0f}" for t in r["best_cold_ms"]),
            f"{r['best_warm_p95_ms']:.1f}",
            f"{r.get('first_render_cold_s', float('nan')):.2f}",
            f"{r.get('first_render_warm_s', float('nan')):.2f}",
            f"{r.get('first_render_revisit_s', float('nan')):.2f}",
        )
        print("  ".join(f"{v:>15}" for v in vals))
    out = REPO / "bench" / "results" / "dashboard.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(out.read_text()) if out.exists() else {}
    doc = {"measured_at": time.strftime("%Y-%m-%d %H:%M:%S"), "results": results}
    if "baseline" in previous or "results" in previous:  # keep the first measurement
        doc["baseline"] = previous.get("baseline") or {
            "measured_at": previous.get("measured_at"),
            "results": previous["results"],
        }
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
