"""Time the per-configuration aggregate behind every answer (issue 10).

Run: ``.venv/bin/python bench/answers.py [--sizes 100000 1000000] [--repeats 3]``.
Prints a table and writes ``bench/results/answers.json``. Frames come from
``bench/analysis.py``'s generator (its runs draw model, hardware, quant and world size
at random, so about half the configurations already repeat across runs); a second frame
per size appends a repeat of every run (the same candidates, scores jittered by 1 %), so
every configuration has at least two measurements. Timed, median of ``--repeats`` wall-clock runs:

* ``configuration_frame``: repeats collapsed to one row per workload x configuration;
* ``best dashboard (pooled)``: ``best_by_workload(grouping="dashboard")``, which now
  collapses first; ``best bench_moe (per run)`` is unchanged by it, for reference.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import columns as C  # noqa: E402
from analysis.best import best_by_workload  # noqa: E402
from analysis.derived import add_derived  # noqa: E402
from analysis.identity import configuration_frame  # noqa: E402
from bench.analysis import generate, timed  # noqa: E402


def with_repeat(df: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    """``df`` plus a repeat of every run (new run ids, scores x lognormal(0, 0.01))."""
    rep = df.copy()
    rep[C.RUN_ID] = rep[C.RUN_ID] + int(df[C.RUN_ID].max())
    jitter = np.random.default_rng(seed).lognormal(0, 0.01, len(rep))
    rep[C.SCORE_MS] = rep[C.SCORE_MS] * jitter
    return pd.concat([df, rep], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        base = add_derived(generate(n))
        for label, frame in (("as generated", base), ("every run repeated", with_repeat(base))):
            ops = {
                "configuration_frame": lambda f=frame: configuration_frame(f),
                "best dashboard (pooled)": lambda f=frame: best_by_workload(f, "dashboard"),
                "best bench_moe (per run)": lambda f=frame: best_by_workload(f, "bench_moe"),
            }
            for name, fn in ops.items():
                fn()  # warm-up (first-call allocations)
                median, times = timed(fn, args.repeats)
                rows.append(
                    {
                        "rows": len(frame),
                        "frame": label,
                        "operation": name,
                        "median_s": median,
                        "times_s": times,
                    }  # fmt: skip
                )
                print(f"{len(frame):>10,}  {label:<20} {name:<26} {median:8.3f} s", flush=True)
    out = Path(__file__).resolve().parent / "results" / "answers.json"
    out.parent.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine()}
    out.write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
