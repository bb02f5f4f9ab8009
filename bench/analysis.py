"""Time the analysis layer on synthetic candidate frames (100k, 1M, 10M rows).

Run: ``.venv/bin/python bench/analysis.py [--sizes 100000 1000000 10000000]``.
Prints a table and writes ``bench/results/analysis.json``. Timings are wall-clock
medians of ``--repeats`` runs (sizes >= ``--single-run-from`` use one run). Peak memory:
``tracemalloc`` peak of one extra, untimed pass per operation (numpy and pandas report
their buffers to tracemalloc; pyarrow-backed buffers are not traced), plus the process
peak RSS (``resource.getrusage``) after each size.

The generator is vectorised numpy: run-level facts (model shape, hardware, quant, world
size) per run of ~2000 candidates; per candidate a token count (powers of two), parallel
mode, backend, comm, CUDA graph flag, status (~92 % success, ~1 % autotune failures)
and a score from a simple cost model with a fixed cost plus a per-token cost, where the
fused MEGAMOE backend has the higher fixed and lower per-token cost, so the frame has
real crossovers. Text columns are pandas categoricals (as a dictionary-encoded load
gives); the nullable/JSON columns the analysis never reads are left out.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import columns as C  # noqa: E402
from analysis.best import best_by_workload  # noqa: E402
from analysis.derived import add_derived  # noqa: E402
from analysis.pareto import throughput_latency_frontier  # noqa: E402
from analysis.thresholds import derive_guide_thresholds, find_crossovers  # noqa: E402

MODELS = [
    ("deepseek_v4_pro", 384, 6, 7168, 3072),
    ("glm_5", 256, 8, 6144, 2048),
    ("kimi_k2", 384, 8, 7168, 2048),
    ("kimi_k3", 896, 16, 3584, 3072),
    ("qwen3_8", 512, 10, 8192, 2048),
]
HARDWARE = ["GB300", "B300", "GB200", "B200"]
QUANTS = ["NVFP4", "NVFP4", "NVFP4", "W4A8_MXFP4_MXFP8"]
WORLD = [4, 8, 16, 32, 64]
MODES = ["DEP", "TEP", "DTP", "TTP", "DTP2EP4", "TTP2EP4"]
BACKENDS = ["TRTLLM", "CUTEDSL", "MEGAMOE_CUTEDSL", "CUTLASS"]
COMMS = ["NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED", "DEEPEPLOWLATENCY", "ALLGATHER"]
RUN_SIZE = 2000


def cat(values: list[Any], codes: np.ndarray) -> pd.Categorical:
    uniq = list(dict.fromkeys(values))
    remap = np.array([uniq.index(v) for v in values])
    return pd.Categorical.from_codes(remap[codes], categories=uniq)


def generate(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` synthetic candidate rows (see module docstring)."""
    rng = np.random.default_rng(seed)
    n_runs = max(n // RUN_SIZE, 1)
    run = np.minimum(np.arange(n) // RUN_SIZE, n_runs - 1)
    r_model = rng.integers(0, len(MODELS), n_runs)[run]
    r_hw = rng.integers(0, len(HARDWARE), n_runs)[run]
    r_q = rng.integers(0, len(QUANTS), n_runs)[run]
    r_ws = np.array(WORLD)[rng.integers(0, len(WORLD), n_runs)][run]
    shape = np.array([m[1:] for m in MODELS])[r_model]
    nt = 2 ** rng.integers(0, 17, n)
    mode = rng.integers(0, len(MODES), n)
    backend = rng.integers(0, len(BACKENDS), n)
    comm = rng.integers(0, len(COMMS), n)
    graph = rng.random(n) < 0.5
    fused = backend == 2
    is_dp = np.isin(mode, [0, 2, 4])
    ep = np.select([np.isin(mode, [0, 1]), np.isin(mode, [2, 3])], [r_ws, 1], 4)
    ep = np.minimum(ep, r_ws)
    atpr = nt * shape[:, 1] / np.where(is_dp, r_ws, ep)
    fixed = np.where(fused, 0.08, 0.03) * np.where(graph, 1.0, 3.0)
    per_tok = np.where(fused, 2.0e-6, 4.0e-6) * (1 + 0.2 * backend)
    score = (fixed + per_tok * atpr * shape[:, 2] / 4096) * rng.lognormal(0, 0.05, n)
    status_draw = rng.random(n)
    status = np.where(status_draw < 0.92, 0, np.where(status_draw < 0.97, 1, 2))
    ok = status == 0
    autotune = np.where(ok & (rng.random(n) < 0.01), 2, np.where(ok, 0, 1))
    df = pd.DataFrame(
        {
            C.RUN_ID: run + 1,
            C.SOURCE_FORMAT: cat(["bench_moe"], np.zeros(n, int)),
            C.MODEL: cat([m[0] for m in MODELS], r_model),
            C.NUM_EXPERTS: shape[:, 0],
            C.TOP_K: shape[:, 1],
            C.HIDDEN_SIZE: shape[:, 2],
            C.INTERMEDIATE_SIZE: shape[:, 3],
            C.QUANT: cat(QUANTS, r_q),
            C.HARDWARE: cat(HARDWARE, r_hw),
            C.WORLD_SIZE: r_ws,
            C.TRTLLM_VERSION: cat(["1.3.0rc26"], np.zeros(n, int)),
            C.CANDIDATE_INDEX: np.arange(n) - run * RUN_SIZE,
            C.NUM_TOKENS: nt,
            C.PARALLEL_MODE: cat(MODES, mode),
            C.ATTENTION_DP: is_dp,
            C.ATTN: cat(["D", "T"], (~is_dp).astype(int)),
            C.MOE_EP_SIZE: ep,
            C.MOE_TP_SIZE: r_ws // ep,
            C.BACKEND: cat(BACKENDS, backend),
            C.COMM: cat(COMMS + ["NONE"], np.where(fused, 4, comm)),
            C.CUDA_GRAPH: graph,
            C.LOW_PRECISION_COMBINE: np.ones(n, bool),
            C.DISPATCH: cat(["balanced"], np.zeros(n, int)),
            C.STATUS: cat(["success", "failed", "skipped"], status),
            C.SCORE_MS: np.where(ok, score, np.nan),
            C.ITER_STDEV_MS: np.where(ok, score * rng.uniform(0.005, 0.03, n), np.nan),
            C.ITER_MEDIAN_MS: np.where(ok, score, np.nan),
            C.ITER_P90_MS: np.where(ok, score * 1.02, np.nan),
            C.OUTLIER_COUNT: np.where(ok, rng.integers(0, 2, n), 0),
            C.AUTOTUNE_STATUS: cat(["success", "not_run", "failed:RuntimeError: boom"], autotune),
        }
    )
    return df


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def traced_peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--single-run-from", type=int, default=10_000_000)
    ap.add_argument(
        "--no-trace-from",
        type=int,
        default=10_000_000,
        help="skip the tracemalloc pass for sizes >= this",
    )
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "analysis.json"))
    args = ap.parse_args()
    results = []
    for n in args.sizes:
        t0 = time.perf_counter()
        raw = generate(n)
        gen_s = time.perf_counter() - t0
        df = add_derived(raw)
        tpr = C.ACTIVATED_TOKENS_PER_RANK
        ops: dict[str, Callable[[], Any]] = {
            "add_derived": lambda raw=raw: add_derived(raw),
            "pareto_throughput_latency": lambda df=df: throughput_latency_frontier(df),
            "best_bench_moe": lambda df=df: best_by_workload(df, "bench_moe"),
            "best_dashboard": lambda df=df: best_by_workload(df, "dashboard"),
            "crossover_trtllm_vs_megamoe": lambda df=df, tpr=tpr: find_crossovers(
                df,
                {C.BACKEND: "TRTLLM"},
                {C.BACKEND: "MEGAMOE_CUTEDSL"},
                tpr,
                group_cols=[C.HARDWARE, C.QUANT, C.PHASE],
            ),
            "derive_guide_thresholds": lambda df=df: derive_guide_thresholds(df),
        }
        reps = 1 if n >= args.single_run_from else args.repeats
        for name, fn in ops.items():
            med, all_t = timed(fn, reps)
            peak = traced_peak_mb(fn) if n < args.no_trace_from else None
            results.append(
                {
                    "rows": n,
                    "op": name,
                    "median_s": round(med, 4),
                    "runs": [round(t, 4) for t in all_t],
                    "repeats": reps,
                    "traced_peak_mb": None if peak is None else round(peak, 1),
                }
            )
            print(
                f"{n:>10,} {name:<30} {med:8.3f} s  (x{reps})  "
                f"peak {'-' if peak is None else f'{peak:8.1f} MB'}",
                flush=True,
            )
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        results.append(
            {
                "rows": n,
                "op": "_process",
                "generate_s": round(gen_s, 3),
                "frame_mb": round(df.memory_usage(deep=True).sum() / 2**20, 1),
                "peak_rss_mb_so_far": round(rss, 1),
            }
        )
        print(
            f"{n:>10,} generate {gen_s:.2f} s, frame "
            f"{results[-1]['frame_mb']} MB, process peak RSS so far {rss:.0f} MB",
            flush=True,
        )
        del raw, df
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "machine": platform.machine(),
        "cpus": __import__("os").cpu_count(),
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
