"""Time the planner's worst requests at the work caps (and a typical one).

Run: ``.venv/bin/python bench/planner.py [--repeats 1]``. Each request runs in its own
fresh subprocess (``--one NAME``) so its peak RSS (``resource.getrusage`` max RSS of that
process, MiB) is its own and not the largest earlier case's. Wall-clock seconds are of
``service.planner.run_plan`` alone (no store: roofline Te), the median of ``--repeats``.
Prints a table and writes ``bench/results/planner.json``.

The cases are the typical page default on an empty store and the largest requests the caps allow
(``MAX_ESTIMATED_EVALUATIONS``): a heterogeneous search over four GPUs for a model with
hundreds of experts (many experts-per-node choices), and one with eight TP choices
and Nm = 8 near the estimate cap. The goals (issue 16) are typical <= 1 s and the
largest allowed <= 10 s; the run-time budget (``MAX_EVALUATIONS``, ``WALL_BUDGET_S``)
stops anything longer and marks it truncated.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service.planner import run_plan  # noqa: E402
from service.planner_request import (  # noqa: E402
    MAX_ESTIMATED_EVALUATIONS,
    MAX_EVALUATIONS,
    WALL_BUDGET_S,
    PlanInputError,
    PlanRequest,
)

BLACKWELL = ["GB300", "B200", "B300", "H200"]
PAPER4 = ["H20", "L40S", "A800", "H800"]
CASES: dict[str, dict[str, Any]] = {
    "typical: empty-store page default (Mixtral, H20)": {},
    "paper: Mixtral heterogeneous H20+L40S": {"gpus": ["H20", "L40S"], "mode": "heterogeneous"},
    "cap: deepseek_v4_pro hetero 4 Blackwell": {
        "model": "deepseek_v4_pro",
        "gpus": BLACKWELL,
        "mode": "heterogeneous",
    },
    "cap: kimi_k3 hetero 4 Blackwell, max_na 4096": {
        "model": "kimi_k3",
        "gpus": BLACKWELL,
        "mode": "heterogeneous",
        "options": {"max_na": 4096},
    },
    "cap: Mixtral hetero 4 paper GPUs, Nm 6": {
        "gpus": PAPER4,
        "mode": "heterogeneous",
        "options": {"max_micro_batches": 6, "max_na": 4096},
    },
    "refused: issue 16's request (tp 1..8, Nm 8, 4096)": {
        "gpus": PAPER4,
        "mode": "heterogeneous",
        "options": {
            "tp_choices": [1, 2, 3, 4, 5, 6, 7, 8],
            "max_micro_batches": 8,
            "max_na": 4096,
        },
    },
}
OUT = Path(__file__).resolve().parent / "results" / "planner.json"


def run_one(name: str, repeats: int) -> dict[str, Any]:
    """Run one case ``repeats`` times in this process; its numbers as a dict."""
    req = PlanRequest.model_validate(CASES[name])
    times, payload = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        try:
            payload = run_plan(req, None)
        except PlanInputError as exc:
            return {"case": name, "refused": f"{'.'.join(map(str, exc.loc))}: {exc.msg[:80]}"}
        times.append(time.perf_counter() - t0)
    assert payload is not None
    best = payload["best"] or {}
    return {
        "case": name,
        "seconds": statistics.median(times),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "estimated_evaluations": payload["estimated_evaluations"],
        "evaluations": payload["evaluations"],
        "truncated": payload["truncated"],
        "plans": payload["n_alternatives"],  # offered: every pipeline constraint met
        "broken_plans": payload["n_broken_plans"],
        "best": f"{best.get('attention_gpu')}/{best.get('expert_gpu')} {best.get('gpus')} GPUs",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--one", help="run one case (internal: the subprocess)")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.repeats)))
        return
    rows = []
    for name in CASES:
        out = subprocess.run(
            [sys.executable, __file__, "--one", name, "--repeats", str(args.repeats)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    head = (
        f"{'case':52} {'s':>6} {'RSS MiB':>8} {'est.':>7} {'evals':>7} {'trunc':>5} "
        f"{'offered':>7} {'broken':>6}"
    )
    print(head)
    for r in rows:
        if "refused" in r:
            print(f"{r['case']:52} refused (422) — {r['refused']}")
            continue
        print(
            f"{r['case']:52} {r['seconds']:6.2f} {r['peak_rss_mib']:8.0f} "
            f"{r['estimated_evaluations']:7d} {r['evaluations']:7d} {str(r['truncated']):>5} "
            f"{r['plans']:7d} {r['broken_plans']:6d}"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "python": platform.python_version(),
                "machine": platform.machine(),
                "limits": {
                    "max_estimated_evaluations": MAX_ESTIMATED_EVALUATIONS,
                    "max_evaluations": MAX_EVALUATIONS,
                    "wall_budget_s": WALL_BUDGET_S,
                },
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
