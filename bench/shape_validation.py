"""The shape model's leave-one-model-out validation
(``analysis.predict_shape_validate.validate_models``) on one synthetic (hardware, quant)
slice of M models: wall time, peak RSS, fits and predictions made.

Run: ``.venv/bin/python bench/shape_validation.py [--models 4 6 17] [--world-sizes 4 8]``.

The slice is a team's store as ``bench/scale_store.py`` builds it: world sizes 4 and 8,
14 token counts (1 to 8,192), 60 configuration kinds (5 backends x 3 comms x DEP/TEP x
CUDA graph on/off), one score per configuration and workload; here each model has its
own shape (experts, top-k, hidden, intermediate drawn from a grid, seeded) and its
scores follow a kernel law (launch floor, weight bytes read, FLOPs per rank) with 3 %
noise, so that the fits and the picks have something to find. Each M runs in a fresh
child process, so its peak RSS (``ru_maxrss``) is its own; ``rss_before_mb`` is the
child's after the slice is built, before the validation; ``cpu_seconds``: the
validation's user + system time (all threads), steadier than the wall time on a shared
machine. ``fits`` / ``predictions``:
calls of ``analysis.predict_shape.fit_shapes`` / ``predict_shape`` counted in the child.

Prints a table and writes ``bench/results/shape_validation.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis import predict_shape as S  # noqa: E402
from analysis import predict_shape_validate as L  # noqa: E402
from service.frames import prepare_frame  # noqa: E402
from tests import factories  # noqa: E402

GRID = (
    (64, 128, 256, 384, 512),  # experts
    (4, 6, 8, 10),  # top-k
    (4096, 6144, 7168, 8192),  # hidden
    (1536, 2048, 3072),  # intermediate
)
BACKENDS = {"MEGAMOE_CUTEDSL": (0.02, 1.0e15), "TRTLLM": (0.05, 2.5e15),
            "CUTLASS": (0.04, 1.8e15), "CUTEDSL": (0.03, 1.4e15),
            "DENSEGEMM": (0.06, 3.0e15)}  # fmt: skip  # launch floor ms, FLOP/s
COMMS = {"NONE": 1.0, "NVLINK_ONE_SIDED": 1.05, "NVLINK_TWO_SIDED": 1.1}
TOKENS = tuple(2**i for i in range(14))
WORLD_SIZES = (4, 8)


def shapes(m: int) -> dict[str, S.Shape]:
    """``m`` distinct shapes from :data:`GRID` (seeded), named ``moe_000`` …"""
    grid = list(itertools.product(*GRID))
    pick = np.random.default_rng(7).choice(len(grid), size=m, replace=False)
    return {f"moe_{i:03d}": S.Shape(*grid[j]) for i, j in enumerate(pick)}


def law(backend: str, comm: str, shape: S.Shape, ws: int, t: int, ep: int, tp: int,
        graph: bool) -> float:  # fmt: skip
    """A configuration's score (ms): a launch floor (eager: 1.6 x), the rank's share of
    the experts' weights read at 4 TB/s and its FLOPs at the backend's rate."""
    rank = t * shape.top_k / ws
    flops = rank * 6 * shape.hidden_size * shape.intermediate_size / tp
    touched = -np.expm1(-t * shape.top_k / shape.num_experts)
    weights = shape.num_experts / ep * touched * 3 * shape.hidden_size * shape.intermediate_size
    floor, rate = BACKENDS[backend]
    ms = floor * (1.0 if graph else 1.6) + 1000 * (weights * 0.5 / tp / 4e12 + flops / rate)
    return float(ms * COMMS[comm])


def slice_frame(m: int, world_sizes: tuple[int, ...] = WORLD_SIZES) -> pd.DataFrame:
    """The candidate frame of an ``m``-model GB300 x NVFP4 slice (module docstring)."""
    rng = np.random.default_rng(m)
    rows = []
    for (name, shape), ws, t in itertools.product(shapes(m).items(), world_sizes, TOKENS):
        kinds = itertools.product(BACKENDS, COMMS, (("DEP", True), ("TEP", False)), (True, False))
        for backend, comm, (mode, dp), graph in kinds:
            ep, tp = (ws, 1) if dp else (1, ws)
            rows.append({
                "model": name, "hardware": "GB300", "quant": "NVFP4", "world_size": ws,
                "num_tokens": t, "backend": backend, "comm": comm, "parallel_mode": mode,
                "moe_ep_size": ep, "moe_tp_size": tp, "attention_dp": dp, "cuda_graph": graph,
                "num_experts": shape.num_experts, "top_k": shape.top_k,
                "hidden_size": shape.hidden_size, "intermediate_size": shape.intermediate_size,
                "score_ms": law(backend, comm, shape, ws, t, ep, tp, graph)
                * rng.lognormal(0.0, 0.03), "dispatch": "balanced",
            })  # fmt: skip
    out = factories.make_candidates(rows)
    out["candidate_index"] = np.arange(len(out))
    out["run_id"] = pd.factorize(out["model"].astype(str) + out["world_size"].astype(str))[0] + 1
    return prepare_frame(out)


def one(m: int, world_sizes: tuple[int, ...] = WORLD_SIZES) -> dict[str, Any]:
    """Validate an ``m``-model slice in this process; the measurements."""
    frame = slice_frame(m, world_sizes)
    calls = {"fits": 0, "predictions": 0}
    fit, predict = S.fit_shapes, S.predict_shape

    def counted_fit(*a: Any, **k: Any) -> S.ShapeModel:
        calls["fits"] += 1
        return fit(*a, **k)

    def counted_predict(*a: Any, **k: Any) -> pd.DataFrame:
        calls["predictions"] += 1
        return predict(*a, **k)

    S.fit_shapes, S.predict_shape = counted_fit, counted_predict  # type: ignore[assignment]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0, c0 = time.perf_counter(), time.process_time()
    table = L.validate_models(frame)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    summary = L.summarize_models(table)
    return {
        "models": m, "world_sizes": list(world_sizes), "rows": len(frame),
        "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
        "rss_before_mb": round(before),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), **calls,
        "thresholds": table.groupby("model")["prefer_tree_below"].first().to_dict(),
        "p90_regret_pct": summary["predicted"]["p90_regret_pct"],
        "coverage": summary["coverage"],
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, nargs="+", default=[4, 6, 17])
    ap.add_argument("--world-sizes", type=int, nargs="+", default=list(WORLD_SIZES))
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child's M
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "shape_validation.json"))
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, tuple(args.world_sizes))))
        return 0
    results = []
    print(f"{'M':>3} {'rows':>7} {'seconds':>8} {'CPU s':>8} {'peak MB':>8} {'fits':>5} "
          f"{'predictions':>11}")  # fmt: skip
    for m in args.models:
        sizes = [str(ws) for ws in args.world_sizes]
        child = subprocess.run([sys.executable, __file__, "--one", str(m), "--world-sizes", *sizes],
                               check=True, capture_output=True, text=True)  # fmt: skip
        got = json.loads(child.stdout.strip().splitlines()[-1])
        results.append(got)
        print(f"{m:>3} {got['rows']:>7} {got['seconds']:>8} {got['cpu_seconds']:>8} "
              f"{got['peak_rss_mb']:>8} {got['fits']:>5} {got['predictions']:>11}",
              flush=True)  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"python": platform.python_version(), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
