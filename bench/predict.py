"""Predictions: the validation table of a cell and the latency of one prediction.

Run: ``.venv/bin/python bench/predict.py [--repeats 30] [--world-sizes 4 8 16 32]``.
Prints the leave-one-token-count-out validation (``service.predictions.validation``:
regret of the predicted pick and of the nearest-workload answer, interval coverage) and
the wall-clock latency of ``service.predictions.prediction`` on a warm read path, each
call at a new token count (no cached answer reused; the curves of each world size
fitted by a first question, timed apart); writes
``bench/results/predict.json``. Goal (issue 24): p95 <= 200 ms.

Data: deepseek_v4_pro · GB300 · NVFP4 of the synthetic demo generator (one report per
world size, token counts 1 .. 32768), stored through ``Store.ingest`` in a DuckDB file.
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from db.store import open_store  # noqa: E402
from ingest.bench_moe import parse_bench_moe  # noqa: E402
from ingest.demo.generate import dump_report, generate_report  # noqa: E402
from ingest.records import UploadMeta  # noqa: E402
from service import predictions as S  # noqa: E402
from service.frames import DashData  # noqa: E402

CELL = ("deepseek_v4_pro", "GB300", "NVFP4")


def _seed(url: str, world_sizes: list[int]) -> int:
    store = open_store(url)
    n = 0
    for ws in world_sizes:
        raw = dump_report(generate_report(*CELL, ws, tuple(2**j for j in range(16))))
        meta = UploadMeta(hardware="GB300", filename=f"demo-ws{ws}.json")
        n += store.ingest(parse_bench_moe(raw, meta), raw, meta).n_candidates
    store.close()
    return n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--world-sizes", type=int, nargs="+", default=[4, 8, 16, 32])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="moedash-bench-predict-") as tmp:
        url = f"duckdb:///{tmp}/predict.duckdb"
        n_candidates = _seed(url, args.world_sizes)
        store = open_store(url)
        data = DashData(store)
        t0 = time.perf_counter()
        val = S.validation(data, *CELL)
        validation_s = time.perf_counter() - t0
        fits = []
        for ws in args.world_sizes:  # the first question of a group fits its curves
            t0 = time.perf_counter()
            S.prediction(data, *CELL, 3, ws)
            fits.append(time.perf_counter() - t0)
        rng = np.random.default_rng(0)
        times = []
        for _ in range(args.repeats):
            ws = int(rng.choice(args.world_sizes))
            tokens = int(rng.integers(2, 30000)) | 1  # odd: never a measured power of 2
            t0 = time.perf_counter()
            got = S.prediction(data, *CELL, tokens, ws)
            times.append(time.perf_counter() - t0)
        store.close()
    ms = np.array(times) * 1000
    summary = val["summary"]
    rows = [
        ("answer", "n", "median regret %", "p90 regret %", "worst regret %", "wrong picks"),
        *(
            (name, summary[name]["n"], summary[name]["median_regret_pct"],
             summary[name]["p90_regret_pct"], summary[name]["worst_regret_pct"],
             summary[name]["wrong_picks"])
            for name in ("predicted", "nearest")
        ),
    ]  # fmt: skip
    print(f"validation of {' · '.join(CELL)}: {summary['n_queries']} held-out token counts "
          f"({n_candidates} candidates, {validation_s:.1f} s)")  # fmt: skip
    for row in rows:
        print("  ".join(f"{v:>16.3f}" if isinstance(v, float) else f"{v!s:>16}" for v in row))
    print(f"coverage of the 90 % intervals: {summary['coverage']:.3f}")
    p50, p95 = np.percentile(ms, 50), np.percentile(ms, 95)
    print(f"one prediction (service, warm, {args.repeats} calls): p50 {p50:.1f} ms, "
          f"p95 {p95:.1f} ms, max {ms.max():.1f} ms; last pick {got['pick']}")  # fmt: skip
    print(f"first question of a world size (fits its curves): "
          f"{1000 * float(np.median(fits)):.0f} ms median")  # fmt: skip
    out: dict[str, Any] = {
        "cell": CELL,
        "world_sizes": args.world_sizes,
        "n_candidates": n_candidates,
        "validation": summary,
        "validation_s": validation_s,
        "prediction_ms": {"p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)),
                          "max": float(ms.max()), "n": args.repeats},
        "first_question_ms": [1000 * f for f in fits],
        "python": platform.python_version(),
    }  # fmt: skip
    path = REPO / "bench" / "results" / "predict.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
