"""Suite speed, before and after: the same command in two checkouts, in one run.

Runs ``make test`` (or ``--command``) in each checkout one after the other -- never side
by side, so neither steals the other's cores -- and records wall time, the pytest
summary line (passed / failed counts) and the coverage total. Each checkout uses its own
Makefile and virtual environment, so the "before" side runs the old single-process
command and the "after" side the xdist one, as the issue asks ("measure before and after
with the same command").

Usage::

    git worktree add ../base 842ea2a && make -C ../base install assets browser-deps
    python bench/suite_speed.py --before ../base --after . [--order after-first]

The mean 1-minute load average during each side is recorded (anything else running
shows there), and the CPU seconds of the side's process tree (``RUSAGE_CHILDREN``: less
sensitive to other load than wall time). ``--sides after`` runs one side only.
Prints a table and writes bench/results/suite_speed.json. Goal: ``make test`` <= 12 min
on the 2-core machine. Keep the machine quiet while it runs (about 40 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "suite_speed.json"
SUMMARY = re.compile(r"(\d+) passed|(\d+) failed|(\d+) error")
COVERAGE = re.compile(r"Total coverage: (\d+(?:\.\d+)?)%")


def run_suite(checkout: Path, command: str, log: Path) -> dict[str, object]:
    """Run *command* in *checkout*, return wall seconds, counts and coverage."""
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    loads: list[float] = []
    with log.open("w") as out:
        proc = subprocess.Popen(
            command, shell=True, cwd=checkout, stdout=out, stderr=subprocess.STDOUT
        )
        while proc.poll() is None:
            loads.append(os.getloadavg()[0])
            time.sleep(15)
        rc = proc.returncode
    wall = time.monotonic() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    text = log.read_text(errors="replace")
    counts = {"passed": 0, "failed": 0, "errors": 0}
    tail = text[-4000:]
    for passed, failed, errors in SUMMARY.findall(tail):
        counts["passed"] = int(passed or counts["passed"])
        counts["failed"] = int(failed or counts["failed"])
        counts["errors"] = int(errors or counts["errors"])
    coverage = COVERAGE.findall(text)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True
    ).stdout.strip()
    return {
        "checkout": str(checkout),
        "commit": commit,
        "command": command,
        "returncode": rc,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "mean_load_1min": round(sum(loads) / max(len(loads), 1), 2),
        "coverage_pct": float(coverage[-1]) if coverage else None,
        "log": str(log),
        **counts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout of the old commit")
    parser.add_argument("--after", type=Path, default=REPO, help="checkout of the new commit")
    parser.add_argument("--command", default="make test", help="the same command in both")
    parser.add_argument("--order", choices=["before-first", "after-first"], default="before-first")
    parser.add_argument(
        "--sides", nargs="+", choices=["before", "after"], default=["before", "after"]
    )
    args = parser.parse_args()
    sides = [("before", args.before.resolve()), ("after", args.after.resolve())]
    if args.order == "after-first":
        sides.reverse()
    sides = [(name, path) for name, path in sides if name in args.sides]
    rows: dict[str, dict[str, object]] = {}
    for name, checkout in sides:
        print(f"{name}: {args.command} in {checkout} ...", flush=True)
        rows[name] = run_suite(checkout, args.command, Path(f"/tmp/suite_speed_{name}.log"))
        print(f"  {rows[name]}", flush=True)
    print(
        f"\n{'side':<8}{'commit':<10}{'tests':>7}{'failed':>8}{'wall':>12}"
        f"{'coverage':>10}{'CPU s':>8}{'load':>6}"
    )
    for name, row in rows.items():
        wall = float(row["wall_s"])  # type: ignore[arg-type]
        print(
            f"{name:<8}{row['commit']!s:<10}{row['passed']!s:>7}{row['failed']!s:>8}"
            f"{int(wall // 60):>6d} min {int(wall % 60):02d}s"
            f"{row['coverage_pct']!s:>9}%{row['cpu_s']!s:>8}{row['mean_load_1min']!s:>6}"
        )
    speedup = None
    if len(rows) == 2:
        speedup = round(float(rows["before"]["wall_s"]) / float(rows["after"]["wall_s"]), 2)  # type: ignore[arg-type]
        print(f"speed-up {speedup:.2f}x; cores {os.cpu_count()}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"sides": rows, "speedup": speedup, "cpus": os.cpu_count()}, indent=2)
    )
    print(f"wrote {RESULTS}")
    sys.exit(0)


if __name__ == "__main__":
    main()
