"""Crossover explorer timings on a store of ~1M candidates (DuckDB file).

Run: ``.venv/bin/python bench/crossovers.py [--rows 1000000] [--repeats 5]``.
Prints a table and writes ``bench/results/crossovers.json``. Goal: explorer answer
p95 <= 300 ms at 1M stored candidates.

Data: complete bench_moe sweeps stored through ``Store.ingest`` (the upload path), one
run per sweep of one model x hardware x quant x world size: 15 token counts (1 ..
16384) x 4 parallel modes x CUDA graph on/off x 2 dispatch patterns x (4 backends x 4
comms + the fused MEGAMOE_CUTEDSL with comm NONE) = 4,080 candidates. Scores follow a
small cost model with a fixed and a per-token cost per backend (the fused backend:
higher fixed, lower per-token cost, so rank 1 switches along the axis), 3 % run-to-run
noise; the sweeps cycle through 1, 2, 3 and 5 repeat runs per world size, so most
configurations have repeats to pool. ~92 % of candidates succeed.

Timed (wall clock, in process, after the store is built):

* ``cold``: a fresh read path's first question on a cell (loads the cell frame,
  collapses repeats, builds the index) and on all data (the all-candidates frame);
* ``service``: ``service.crossovers.crossover_answer`` over :data:`SLICES` (each a
  distinct question: slice x option x axis) on a warm read path, ``--repeats`` rounds;
* ``api``: ``GET /api/v1/crossovers`` for the same questions through the real ASGI app
  (Starlette's test client: routing, validation, the store-version check, JSON).

p50/p95 are over every timed call of a kind.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis import columns as C  # noqa: E402
from bench._common import MODELS, run_dict  # noqa: E402
from db.store import open_store  # noqa: E402
from ingest.records import Sweep, UploadMeta  # noqa: E402
from service.crossovers import CrossoverQuery, crossover_answer  # noqa: E402
from service.frames import DashData  # noqa: E402

HARDWARE = ("GB300", "B300")
QUANTS = ("NVFP4", "W4A8_MXFP4_MXFP8")
WORLD = (4, 8, 16, 32, 64)
REPEAT_CYCLE = (1, 2, 3, 5)
TOKENS = 2 ** np.arange(15)
MODES = ("DEP", "TEP", "DTP", "TTP")
BACKENDS = ("TRTLLM", "CUTEDSL", "CUTLASS", "DEEPGEMM")
COMMS = ("NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED", "DEEPEPLOWLATENCY", "ALLGATHER")
FIXED = {"TRTLLM": 0.030, "CUTEDSL": 0.034, "CUTLASS": 0.040, "DEEPGEMM": 0.045, "MEGA": 0.060}
PER_TOKEN = {"TRTLLM": 5e-6, "CUTEDSL": 4.6e-6, "CUTLASS": 5.5e-6, "DEEPGEMM": 4.4e-6, "MEGA": 3e-6}
COMM_COST = {"NVLINK_ONE_SIDED": 1.0, "NVLINK_TWO_SIDED": 1.1, "DEEPEPLOWLATENCY": 1.25,
             "ALLGATHER": 1.6, "NONE": 0.0}  # fmt: skip

# (filters, option, axis): distinct questions a person asks on the page or the API
CELL = {"model": "deepseek_v4_pro", "hardware": "GB300", "quant": "NVFP4"}
SLICES: tuple[tuple[dict[str, Any], str, str], ...] = (
    (CELL, "backend", C.NUM_TOKENS),
    (CELL, "backend", C.ACTIVATED_TOKENS_PER_RANK),
    (CELL, "comm", C.DISPATCH_KB),
    (CELL, "backend+comm", C.NUM_TOKENS),
    (CELL, "parallel_mode", C.NUM_TOKENS),
    ({**CELL, "world_size": 8}, "backend", C.NUM_TOKENS),
    ({**CELL, "world_size": 16, "phase": "decode"}, "backend+comm", C.DISPATCH_KB),
    ({**CELL, "phase": "prefill", "attention": "dp"}, "backend", C.ACTIVATED_TOKENS_PER_RANK),
    ({**CELL, "dispatch": "recv_hotspot"}, "comm", C.NUM_TOKENS),
    (
        {**CELL, "world_size": 32, "phase": "decode", "attention": "dp", "dispatch": "balanced"},
        "backend",
        C.NUM_TOKENS,
    ),  # fmt: skip
    ({"model": "kimi_k2"}, "backend", C.NUM_TOKENS),
    ({"hardware": "B300", "world_size": 64}, "comm", C.DISPATCH_KB),
    ({}, "backend", C.NUM_TOKENS),
    ({}, "backend+comm", C.ACTIVATED_TOKENS_PER_RANK),
    ({"phase": "decode"}, "parallel_mode", C.NUM_TOKENS),
)


def sweep_candidates(model: str, ws: int, seed: int) -> pd.DataFrame:
    """One complete sweep (see module docstring), vectorised."""
    rng = np.random.default_rng(seed)
    _, top_k, hidden, _ = MODELS[model]
    pairs = [(b, c) for b in BACKENDS for c in COMMS] + [("MEGAMOE_CUTEDSL", "NONE")]
    grid = pd.MultiIndex.from_product(
        [
            range(len(TOKENS)),
            range(len(MODES)),
            (True, False),
            ("balanced", "recv_hotspot"),
            range(len(pairs)),
        ],  # fmt: skip
        names=["t", "m", "g", "d", "p"],
    ).to_frame(index=False)
    n = len(grid)
    nt = TOKENS[grid["t"].to_numpy()]
    mode = np.array(MODES, dtype=object)[grid["m"].to_numpy()]
    dp = np.isin(mode, ("DEP", "DTP"))
    ep = np.where(np.isin(mode, ("DEP", "TEP")), ws, 1)
    backend = np.array([p[0] for p in pairs], dtype=object)[grid["p"].to_numpy()]
    comm = np.array([p[1] for p in pairs], dtype=object)[grid["p"].to_numpy()]
    kind = np.where(backend == "MEGAMOE_CUTEDSL", "MEGA", backend)
    graph = grid["g"].to_numpy()
    hot = grid["d"].to_numpy() == "recv_hotspot"
    atpr = nt * top_k / np.where(dp, ws, ep)
    fixed = pd.Series(kind).map(FIXED).to_numpy() * np.where(graph, 1.0, 2.5)
    per_tok = pd.Series(kind).map(PER_TOKEN).to_numpy() * hidden / 4096
    comm_ms = pd.Series(comm).map(COMM_COST).to_numpy() * atpr * 2e-7 * (ws > 1)
    score = (fixed + per_tok * atpr + comm_ms) * np.where(hot, 1.15, 1.0)
    score = score * rng.lognormal(0.0, 0.03, n)
    status = np.where(rng.random(n) < 0.92, "success", "failed")
    score = np.where(status == "success", score, np.nan)
    data: dict[str, Any] = {c: [None] * n for c in C.CANDIDATE_COLUMNS}
    data.update(
        {
            C.CANDIDATE_INDEX: np.arange(n),
            C.NUM_TOKENS: nt,
            C.PARALLEL_MODE: mode,
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
            C.DISPATCH: grid["d"].to_numpy(dtype=object),
            C.STATUS: status,
            C.FAILURE_CATEGORY: np.where(status == "success", None, "timed_phase_error"),
            C.SCORE_MS: score,
            C.RAW_SCORE_MS: score * 1.01,
            C.ITER_MEDIAN_MS: score,
            C.ITER_STDEV_MS: score * rng.uniform(0.005, 0.02, n),
            C.ITER_P90_MS: score * 1.02,
            C.OUTLIER_COUNT: np.zeros(n, np.int64),
            C.N_ITERS: np.full(n, 12),
            C.AUTOTUNE_STATUS: "success",
        }
    )
    return pd.DataFrame({c: data[c] for c in C.CANDIDATE_COLUMNS})


def build(url: str, rows: int) -> tuple[float, int, int]:
    """Store sweeps until ``rows`` candidates; returns (seconds, candidates, runs)."""
    store = open_store(url)
    t0 = time.perf_counter()
    stored = runs = seq = 0
    combos = [
        (m, h, q, w) for m in MODELS for h in HARDWARE for q in QUANTS for w in WORLD
    ]  # fmt: skip
    while stored < rows:
        model, hw, quant, ws = combos[seq % len(combos)]
        for rep in range(REPEAT_CYCLE[seq % len(REPEAT_CYCLE)]):
            if stored >= rows:
                break
            cands = sweep_candidates(model, ws, seed=runs)
            sweep = Sweep(
                key="",
                run=run_dict(model, hw, quant, ws, f"2026-11-{1 + rep:02d}"),
                candidates=cands,
            )
            meta = UploadMeta(hardware=hw, synthetic=True, filename=f"bench-{runs}.json")
            store.ingest([sweep], f"xo-bench-{runs}".encode(), meta)
            stored += len(cands)
            runs += 1
        seq += 1
    store.close()
    return time.perf_counter() - t0, stored, runs


def _query(filters: dict[str, Any], option: str, axis: str) -> CrossoverQuery:
    return CrossoverQuery(**filters, option=option, axis=axis)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q)) if values else float("nan")


def measure(url: str, repeats: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from moedash.app import create_app
    from moedash.settings import Settings

    store = open_store(url)
    out: dict[str, Any] = {}
    data = DashData(store)
    for label, filters in (("cold_cell_s", CELL), ("cold_all_s", {})):
        t0 = time.perf_counter()
        crossover_answer(data, _query(filters, "backend", C.NUM_TOKENS))
        out[label] = time.perf_counter() - t0
    per_slice: list[dict[str, Any]] = []
    service_t: list[float] = []
    for filters, option, axis in SLICES:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            ans = crossover_answer(data, _query(filters, option, axis))
            times.append(time.perf_counter() - t0)
        service_t += times
        res = ans.result
        per_slice.append(
            {
                "filters": filters,
                "option": option,
                "axis": axis,
                "configs_in_slice": int(res.points["n_configs"].sum()) if len(res.points) else 0,
                "series": len(res.series),
                "switches": len(res.switches),
                "robust": int((res.switches["verdict"] == "robust").sum()),
                "service_p50_ms": pct(times, 50),
                "service_max_ms": pct(times, 100),
            }
        )
    settings = Settings(database_url=url, enable_dashboard=False)
    api_t: list[float] = []
    sizes: list[int] = []
    with TestClient(create_app(settings, store=store)) as client:
        client.get("/api/v1/crossovers", params=CELL)  # the app's own read path warms up
        client.get("/api/v1/crossovers")
        for i, (filters, option, axis) in enumerate(SLICES):
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                resp = client.get(
                    "/api/v1/crossovers", params={**filters, "option": option, "axis": axis}
                )
                times.append(time.perf_counter() - t0)
                assert resp.status_code == 200, resp.text
            sizes.append(len(resp.content))
            api_t += times
            per_slice[i]["api_p50_ms"] = pct(times, 50)
            per_slice[i]["api_kb"] = len(resp.content) / 1024
    store.close()
    out.update(
        service_p50_ms=pct(service_t, 50),
        service_p95_ms=pct(service_t, 95),
        service_max_ms=pct(service_t, 100),
        api_p50_ms=pct(api_t, 50),
        api_p95_ms=pct(api_t, 95),
        api_max_ms=pct(api_t, 100),
        api_max_kb=max(sizes) / 1024,
        slices=per_slice,
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="moedash-xo-bench-") as tmp:
        url = f"duckdb:///{tmp}/crossovers.duckdb"
        build_s, stored, runs = build(url, args.rows)
        print(f"stored {stored:,} candidates in {runs} runs in {build_s:.1f} s", flush=True)
        res = {
            "stored_rows": stored,
            "runs": runs,
            "build_s": build_s,
            **measure(url, args.repeats),
        }
    print(f"\ncold: first question on a cell {res['cold_cell_s']:.2f} s, on all data "
          f"{res['cold_all_s']:.2f} s (frame load + repeats collapsed + index)")  # fmt: skip
    head = (
        "slice",
        "option",
        "axis",
        "series",
        "switches",
        "robust",
        "svc p50 ms",
        "api p50 ms",
        "KB",
    )
    print("  ".join(f"{h:>12}" for h in head))
    for s in res["slices"]:
        name = ",".join(f"{k}={v}" for k, v in s["filters"].items()) or "(all data)"
        timing = (f"{s['service_p50_ms']:.0f}", f"{s['api_p50_ms']:.0f}", f"{s['api_kb']:.0f}")
        vals = (name[:40], s["option"], s["axis"][:12], s["series"], s["switches"], s["robust"])
        vals += timing
        print("  ".join(f"{v!s:>12}" for v in vals))
    print(
        f"\nservice p50 {res['service_p50_ms']:.0f} ms, p95 {res['service_p95_ms']:.0f} ms, "
        f"max {res['service_max_ms']:.0f} ms; API p50 {res['api_p50_ms']:.0f} ms, "
        f"p95 {res['api_p95_ms']:.0f} ms, max {res['api_max_ms']:.0f} ms (goal p95 <= 300 ms)"
    )
    out = REPO / "bench" / "results" / "crossovers.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "cpus": __import__("os").cpu_count(),
        "repeats": args.repeats,
    }
    out.write_text(json.dumps({"meta": meta, "results": res}, indent=1, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
