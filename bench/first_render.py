"""First render of the main pages on the real published snapshot, in headless Chromium.

Starts ``moedash serve`` on a fresh DuckDB file per variant (an empty database loads
``data/published``, as on a user's first start), waits for the cache warm-up, then times
navigation -> main content drawn on Overview (coverage table), Pareto (chart drawn),
Best (grid rows), Recommend (verdict), Thresholds (status line over the re-derived
table) and Planner (its first plan's tables), each in a fresh browser context (empty HTTP
cache: a first visit) and once more in the same context (revisit). Variants run side by
side and are measured interleaved, so a busy machine slows both alike:

* ``partial``: the default -- the plotly.js partial bundle ``make assets`` vendors;
* ``full``: ``MOEDASH_PLOTLY_PARTIAL=false`` -- Dash's full plotly.js (4.8 MB).

Usage: python bench/first_render.py [--repeats 5] [--variants partial full]
(``bench/dashboard.py --published`` runs it too). Prints a table (median and best of
the repeats, seconds) and writes bench/results/first_render.json. Goal: first render
<= 1.5 s on each page.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._common import free_port, wait_healthy  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# page -> JS condition for "main content drawn"
PAGES: dict[str, str] = {
    "/": "() => document.querySelector('[data-testid=coverage] td')",
    "/pareto": (
        "() => { const g = document.querySelector('#page .js-plotly-plot');"
        " return g && g.data && g.data.length > 1 &&"
        " g.querySelector('.scatterlayer .trace, .gl-container canvas'); }"
    ),
    "/best": "() => document.querySelector('#page .ag-row')",
    "/recommend": (
        "() => document.querySelector('[data-testid=rec-verdict], [data-testid=rec-no-data]')"
    ),
    # issue 22 item 5: within 1.5x the Overview (their first answer comes with the page)
    "/thresholds": (
        "() => document.querySelector('[data-testid=th-status], [data-testid=th-empty]')"
    ),
    "/planner": "() => document.querySelector('#page [data-testid^=\"planner-\"]')",
}
VARIANTS: dict[str, dict[str, str]] = {
    "partial": {"MOEDASH_PLOTLY_PARTIAL": "true"},
    "full": {"MOEDASH_PLOTLY_PARTIAL": "false"},
}


@contextmanager
def serve(tmp: Path, name: str, env: dict[str, str]) -> Any:
    port = free_port()
    db = tmp / f"{name}.duckdb"
    log = (tmp / f"{name}.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moedash.cli", "serve", "--db", f"duckdb:///{db}"]
        + ["--port", str(port)],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, timeout_s=300)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def visit(context: Any, url: str, drawn: str) -> tuple[float, int]:
    """(seconds from navigation to ``drawn``, bytes received)."""
    page = context.new_page()
    received = [0]
    page.on("response", lambda r: received.__setitem__(0, received[0] + _size(r)))
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function(drawn, timeout=120_000, polling=20)
    seconds = time.perf_counter() - t0
    page.close()
    return seconds, received[0]


def _size(response: Any) -> int:
    try:
        return int(response.headers.get("content-length") or 0)
    except ValueError:
        return 0


def measure(bases: dict[str, str], repeats: int, settle_s: float) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    times: dict[str, dict[str, dict[str, list[float]]]] = {
        v: {p: {"first": [], "revisit": []} for p in PAGES} for v in bases
    }
    sizes: dict[str, dict[str, int]] = {v: {} for v in bases}
    time.sleep(settle_s)  # the servers' cache warm-up threads
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for _ in range(repeats):
            for path, drawn in PAGES.items():
                for variant, base in bases.items():
                    context = browser.new_context(viewport={"width": 1440, "height": 1000})
                    first, size = visit(context, base + path, drawn)
                    again, _ = visit(context, base + path, drawn)
                    context.close()
                    times[variant][path]["first"].append(first)
                    times[variant][path]["revisit"].append(again)
                    sizes[variant][path] = size
        browser.close()
    return {"seconds": times, "first_visit_bytes": sizes}


def table(result: dict[str, Any]) -> str:
    head = f"{'page':<12}{'variant':<9}{'first med':>10}{'first min':>10}{'revisit med':>12}"
    head += f"{'KB sent':>9}"
    lines = [head]
    for path in PAGES:
        for variant, pages in result["seconds"].items():
            first, again = pages[path]["first"], pages[path]["revisit"]
            kb = result["first_visit_bytes"][variant].get(path, 0) / 1024
            lines.append(
                f"{path:<12}{variant:<9}{statistics.median(first):>10.2f}{min(first):>10.2f}"
                f"{statistics.median(again):>12.2f}{kb:>9.0f}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--settle", type=float, default=20.0, help="seconds to let warm-up run")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="moedash-render-") as tmp, ExitStack() as stack:
        bases = {v: stack.enter_context(serve(Path(tmp), v, VARIANTS[v])) for v in args.variants}
        result = measure(bases, args.repeats, args.settle)
    load = os.getloadavg()
    result.update(
        measured_at=time.strftime("%Y-%m-%d %H:%M:%S"),
        repeats=args.repeats,
        cpus=os.cpu_count(),
        loadavg=load,
        goal_s=1.5,
    )
    print(table(result))
    print(f"load average while measuring: {load[0]:.1f} on {os.cpu_count()} CPUs")
    out = REPO / "bench" / "results" / "first_render.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
