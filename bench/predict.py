"""Predictions: the validation table on the data we ship, and the latency of one
prediction on a 1M-candidate store.

Run: ``.venv/bin/python bench/predict.py [--repeats 40] [--candidates 1000000]``.

1. **Validation** on the published snapshot (``data/published``: NVIDIA's bench_moe
   sweeps, top 3 per workload only), stored as ``moedash serve`` stores it
   (``moedash.published.load_published``): for every cell
   ``service.predictions.validation`` -- leave one token count out (regret of the
   predicted pick and of the nearest-workload answer, coverage of the 90 % intervals)
   and leave one model out per GPU and quant (the shape model's pick against the
   published tree and the nearest model's winner). Pooled over the cells.
2. **Latency** of ``service.predictions.prediction`` on a warm read path of a store of
   ``--candidates`` synthetic candidates (``bench/scale_store.py``'s bulk build: 10 cells, 2
   world sizes, 2 versions), each call at a new token count (no cached answer reused);
   the first question of each world size (fits its curves) timed apart. Goal (issue
   24): p95 <= 200 ms.

Writes ``bench/results/predict.json``.
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

from analysis import predict_shape_validate as L  # noqa: E402
from analysis import predict_validate as V  # noqa: E402
from bench.scale_store import WORLD_SIZES, build, cells  # noqa: E402
from db.store import open_store  # noqa: E402
from moedash.published import load_published  # noqa: E402
from service import predictions as S  # noqa: E402
from service.frames import DashData  # noqa: E402
from service.predictions_shape import model_validation  # noqa: E402


def validation(tmp: str) -> dict[str, Any]:
    """Leave one token count out and leave one model out over every published cell."""
    store = open_store(f"duckdb:///{tmp}/published.duckdb")
    load_published(store)
    data = DashData(store)
    t0 = time.perf_counter()
    token_rows, model_rows, thresholds = [], [], {}
    for cell in data.cells():
        got = S.validation(data, cell.model, cell.hardware, cell.quant)
        token_rows += got["items"]
        name = f"{cell.hardware} · {cell.quant}"
        if name not in thresholds:  # the slice's table, once
            models = model_validation(data, cell.hardware, cell.quant)
            model_rows += models["items"]
            # the tie-break threshold an answer of this slice uses (chosen on all models)
            thresholds[name] = models["summary"].get("prefer_tree_below")
    seconds = time.perf_counter() - t0
    store.close()
    return {
        "cells": len(data.cells()),
        "seconds": seconds,
        "token_counts": V.summarize(pd.DataFrame(token_rows)),
        "models": L.summarize_models(pd.DataFrame(model_rows)),
        "answer_thresholds": thresholds,
    }


def latency(tmp: str, total: int, repeats: int) -> dict[str, Any]:
    url = f"duckdb:///{tmp}/large.duckdb"
    store = open_store(url)
    built = build(store, total, versions=2)
    data = DashData(store)
    model, hardware, quant = cells()[0]
    fits = []
    for ws in WORLD_SIZES:  # the first question of a world size fits its curves
        t0 = time.perf_counter()
        S.prediction(data, model, hardware, quant, 3, ws)
        fits.append(time.perf_counter() - t0)
    rng = np.random.default_rng(0)
    times, picks = [], []
    for _ in range(repeats):
        ws = int(rng.choice(list(WORLD_SIZES)))
        tokens = int(rng.integers(2, 8000)) | 1  # odd: never a measured power of 2
        t0 = time.perf_counter()
        got = S.prediction(data, model, hardware, quant, tokens, ws)
        times.append(time.perf_counter() - t0)
        picks.append(got["pick"])
    store.close()
    ms = np.array(times) * 1000
    return {
        "candidates": built["candidates"],
        "cell": [model, hardware, quant],
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "max_ms": float(ms.max()),
        "n": repeats,
        "first_question_ms": [1000 * f for f in fits],
    }


def _row(name: str, s: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        return "—" if v is None else f"{v:.2f}"

    stats = (s["median_regret_pct"], s["p90_regret_pct"], s["worst_regret_pct"])
    return (f"{name:<38} {s['n']:>6} {s.get('censored', 0):>9} "
            + " ".join(f"{f(v):>8}" for v in stats) + f" {s['wrong_picks']:>6}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--candidates", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="moedash-bench-predict-") as tmp:
        val = validation(tmp)
        lat = latency(tmp, args.candidates, args.repeats)
    tok, mod = val["token_counts"], val["models"]
    head = (f"{'answer':<38} {'scored':>6} {'censored':>9} {'median%':>8} {'p90%':>8} "
            f"{'worst%':>8} {'wrong':>6}")  # fmt: skip
    print(f"published snapshot, {val['cells']} cells ({val['seconds']:.0f} s)")
    print(f"\nleave one token count out: {tok['n_queries']} held-out token counts")
    print(head)
    print(_row("predicted pick", tok["predicted"]))
    print(_row("nearest measured workload", tok["nearest"]))
    print(f"coverage of the 90 % intervals: {tok['coverage']:.3f}")
    print(f"\nleave one model out: {mod['n_workloads']} workloads")
    print(head)
    print(_row("predicted pick (shape model)", mod["predicted"]))
    print(_row("published tree", mod["tree"]))
    print(_row("nearest model's winner", mod["nearest"]))
    print(_row("predicted, paired with the tree", mod["paired"]["predicted"]))
    print(_row("tree, paired with the predicted", mod["paired"]["tree"]))
    print(f"coverage of the 90 % intervals: {mod['coverage']:.3f}")
    print("tie-break threshold of the answers (prefer_tree_below): "
          + ", ".join(f"{k} {v}" for k, v in val["answer_thresholds"].items()))  # fmt: skip
    print(f"\none prediction ({lat['candidates']:,} candidates, warm, {lat['n']} calls): "
          f"p50 {lat['p50_ms']:.1f} ms, p95 {lat['p95_ms']:.1f} ms, "
          f"max {lat['max_ms']:.1f} ms")  # fmt: skip
    print("first question of a world size (fits its curves): "
          + ", ".join(f"{v:.0f} ms" for v in lat["first_question_ms"]))  # fmt: skip
    out = {"validation": val, "latency": lat, "python": platform.python_version()}
    path = REPO / "bench" / "results" / "predict.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
