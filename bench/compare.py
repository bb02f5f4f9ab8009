"""Compare timings: two ~10k-candidate runs of one slice under two TensorRT-LLM versions.

Run: ``.venv/bin/python bench/compare.py [--repeats 20]``. Prints a table and writes
``bench/results/compare.json``. Goal (issue #15): compare of two 10k-candidate runs
p95 <= 300 ms.

Data: two complete sweeps of deepseek_v4_pro · GB300 · NVFP4, world size 8, stored
through ``Store.ingest`` (DuckDB file): 20 token counts x 4 parallel modes x CUDA graph
on/off x (4 backends x 4 comms + MEGAMOE_CUTEDSL / NONE) x low-precision combine on/off
x 1 or 2 chunks = 10,880 candidates per run (~7 % failed or skipped). The head run
(1.2.0rc28) is the base (1.2.0rc27) with 1 % noise, every 20th configuration 10 %
slower and 1 % newly failing.

Timed (wall clock, in process, after the store is built; p50/p95 over ``--repeats``):

* ``analysis``: ``analysis.compare.compare`` of the two runs' cell-frame rows;
* ``service``: ``service.compare.compare(data, "1.2.0rc27", "1.2.0rc28", scope)`` on a
  warm read path, a new threshold each call (so no cached answer is reused): slice,
  side resolution, compare;
* ``service cold``: the same on a fresh read path (loads the cell frame first);
* ``api json`` / ``api csv``: ``GET /api/v1/compare`` through the real ASGI app
  (Starlette's test client), all ~10k rows serialised; ``api json regr``: the same
  with ``verdict=regression`` (what a CI job asks for);
* ``regressions``: ``service.regressions.regressions_for_runs`` for the head run (what
  every upload that creates runs pays).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis import columns as C  # noqa: E402
from analysis.compare import compare as analysis_compare  # noqa: E402
from bench._common import run_dict  # noqa: E402
from db.store import Store, open_store  # noqa: E402
from ingest.records import Sweep, UploadMeta  # noqa: E402
from service.compare import compare  # noqa: E402
from service.frames import DashData  # noqa: E402
from service.regressions import regressions_for_runs  # noqa: E402
from service.scope import Scope  # noqa: E402

MODEL, HARDWARE, QUANT, WS = "deepseek_v4_pro", "GB300", "NVFP4", 8
BASE, HEAD = "1.2.0rc27", "1.2.0rc28"
TOKENS = np.unique(np.r_[2 ** np.arange(15), [24, 48, 96, 192, 384]])
MODES = ("DEP", "TEP", "DTP", "TTP")
BACKENDS = ("TRTLLM", "CUTEDSL", "CUTLASS", "DEEPGEMM")
COMMS = ("NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED", "DEEPEPLOWLATENCY", "ALLGATHER")
RECIPES = [*product(BACKENDS, COMMS), ("MEGAMOE_CUTEDSL", "NONE")]
SCOPE = Scope(model=MODEL, hardware=HARDWARE, quant=QUANT, world_size=WS)


def sweep_candidates(head: bool) -> pd.DataFrame:
    """One run's candidates (store columns); ``head`` applies the changes."""
    grid = list(product(TOKENS, MODES, (True, False), RECIPES, (True, False), (1, 2)))
    n = len(grid)
    tokens = np.array([g[0] for g in grid], dtype=np.int64)
    modes = np.array([g[1] for g in grid], dtype=object)
    graph = np.array([g[2] for g in grid])
    backend = np.array([g[3][0] for g in grid], dtype=object)
    comm = np.array([g[3][1] for g in grid], dtype=object)
    lpc = np.array([g[4] for g in grid])
    chunks = np.array([g[5] for g in grid], dtype=np.int64)
    rng = np.random.default_rng(0)
    score = 0.03 + tokens * 2e-4 * rng.uniform(0.8, 1.2, n) + np.where(graph, 0.0, 0.01)
    status = np.where(rng.uniform(size=n) < 0.05, "failed", "success").astype(object)
    status[rng.uniform(size=n) < 0.02] = "skipped"
    if head:
        score = score * np.random.default_rng(1).normal(1.0, 0.01, n)
        score[::20] *= 1.10
        status[np.random.default_rng(2).uniform(size=n) < 0.01] = "failed"
    dp = np.isin(modes, ("DEP", "DTP"))
    data: dict[str, Any] = {c: [None] * n for c in C.CANDIDATE_COLUMNS}
    ok = status == "success"
    data.update(
        {
            C.CANDIDATE_INDEX: np.arange(n),
            C.NUM_TOKENS: tokens,
            C.PARALLEL_MODE: modes,
            C.ATTENTION_DP: dp,
            C.ATTN: np.where(dp, "D", "T"),
            C.MOE_EP_SIZE: np.where(np.isin(modes, ("DEP", "TEP")), WS, 1),
            C.MOE_TP_SIZE: np.where(np.isin(modes, ("DEP", "TEP")), 1, WS),
            C.BACKEND: backend,
            C.REQUESTED_BACKEND: backend,
            C.COMM: comm,
            C.COMM_REQUESTED: comm,
            C.CUDA_GRAPH: graph,
            C.LOW_PRECISION_COMBINE: lpc,
            C.NUM_CHUNKS: chunks,
            C.DISPATCH: np.full(n, "balanced", dtype=object),
            C.STATUS: status,
            C.FAILURE_CATEGORY: np.where(status == "failed", "timed_phase_error", None),
            C.SCORE_MS: np.where(ok, score, np.nan),
            C.ITER_MEDIAN_MS: np.where(ok, score, np.nan),
            C.ITER_STDEV_MS: np.where(ok, score * 0.004, np.nan),
            C.ITER_P90_MS: np.where(ok, score * 1.005, np.nan),
            C.OUTLIER_COUNT: np.zeros(n, dtype=np.int64),
        }
    )
    return pd.DataFrame(data, columns=list(C.CANDIDATE_COLUMNS))


def build(store: Store) -> tuple[list[int], int]:
    ids, rows = [], 0
    for version, date, head in ((BASE, "2026-09-01", False), (HEAD, "2026-09-15", True)):
        run = run_dict(MODEL, HARDWARE, QUANT, WS, run_date=date)
        run.update({C.TRTLLM_VERSION: version, C.SYNTHETIC: True})
        cand = sweep_candidates(head)
        rows += len(cand)
        meta = UploadMeta(hardware=HARDWARE, synthetic=True, filename=f"{version}.json")
        res = store.ingest([Sweep(key="", run=run, candidates=cand)], version.encode(), meta)
        ids.append(res.runs[0].run_id)
    return ids, rows


Timings = tuple[list[float], list[float]]


def timed(call: Callable[[int], Any], repeats: int) -> tuple[Timings, Any]:
    """(wall seconds, CPU seconds of this process) per call, and the last answer. On a
    shared, loaded machine the CPU time is the steadier of the two."""
    wall, cpu, last = [], [], None
    for i in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        last = call(i)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return (wall, cpu), last


def stats(name: str, secs: Timings, note: str = "") -> dict[str, Any]:
    ms, cpu = np.asarray(secs[0]) * 1000.0, np.asarray(secs[1]) * 1000.0
    return {
        "what": name,
        "n": len(ms),
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "max_ms": float(ms.max()),
        "cpu_p50_ms": float(np.percentile(cpu, 50)),
        "cpu_p95_ms": float(np.percentile(cpu, 95)),
        "note": note,
    }


def measure(url: str, repeats: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from fastapi.testclient import TestClient

    from moedash.app import create_app
    from moedash.settings import Settings

    store = open_store(url)
    ids, rows = build(store)
    results = []
    data = DashData(store)
    frame = data.cell_frame(SCOPE.cell())  # type: ignore[arg-type]
    runs = frame[C.RUN_ID].to_numpy()
    base, head = frame[runs == ids[0]], frame[runs == ids[1]]
    secs, res = timed(lambda i: analysis_compare(base, head, threshold_pct=5.0), repeats)
    counts = {k: v for k, v in res.counts.items() if v}
    results.append(stats("analysis", secs, f"{len(res.rows)} rows, {counts}"))
    compare(data, BASE, HEAD, SCOPE)  # warm the frame
    secs, res = timed(
        lambda i: compare(data, BASE, HEAD, SCOPE, threshold_pct=5.0 + 0.001 * (i + 1)),
        repeats,
    )
    results.append(stats("service", secs, f"regressions {res.counts['regression']}"))
    secs, _ = timed(lambda i: compare(DashData(store), BASE, HEAD, SCOPE), max(3, repeats // 5))
    results.append(stats("service cold", secs, "fresh read path: loads the cell frame"))
    secs, found = timed(lambda i: regressions_for_runs(store, [ids[1]]), max(3, repeats // 2))
    results.append(stats("regressions", secs, f"{len(found)} regressions for the head run"))
    settings = Settings(database_url=url, enable_dashboard=False, warm_cache=False)
    with TestClient(create_app(settings, store=store)) as client:
        params = {**SCOPE.model_dump(exclude_none=True), "base": BASE, "head": HEAD}
        client.get("/api/v1/compare", params=params)

        def api(kind: int, fmt: str, **extra: Any) -> Callable[[int], Any]:
            def call(i: int) -> Any:
                # a new threshold per call and kind: no cached answer is reused
                pct = 6.0 + kind + 0.001 * (i + 1)
                q = {**params, **extra, "format": fmt, "threshold_pct": pct}
                resp = client.get("/api/v1/compare", params=q)
                assert resp.status_code == 200, resp.text
                return len(resp.content)

            return call

        for kind, (name, fmt, extra) in enumerate(
            (
                ("api json", "json", {}),
                ("api csv", "csv", {}),
                ("api json regr", "json", {"verdict": "regression"}),
            )
        ):
            secs, size = timed(api(kind, fmt, **extra), repeats)
            results.append(stats(name, secs, f"{size / 1024:.0f} KiB"))
    store.close()
    return results, {"candidates_per_run": rows // 2, "runs": ids}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="moedash-compare-bench-") as tmp:
        results, info = measure(f"duckdb:///{tmp}/compare.duckdb", args.repeats)
    print(f"two runs of {info['candidates_per_run']:,} candidates each")
    head = ("what", "n", "p50 ms", "p95 ms", "max ms", "cpu p50", "cpu p95")
    print("  ".join(f"{h:>14}" if i == 0 else f"{h:>8}" for i, h in enumerate(head)), " note")
    for r in results:
        print(
            f"{r['what']:>14}  {r['n']:>8}  {r['p50_ms']:>8.1f}  {r['p95_ms']:>8.1f}  "
            f"{r['max_ms']:>8.1f}  {r['cpu_p50_ms']:>8.1f}  {r['cpu_p95_ms']:>8.1f}   "
            f"{r['note']}"
        )
    print("goal: compare of two 10k-candidate runs p95 <= 300 ms")
    out = REPO / "bench" / "results" / "compare.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "cpus": __import__("os").cpu_count(),
        "load_average": __import__("os").getloadavg(),
        "repeats": args.repeats,
        **info,
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
