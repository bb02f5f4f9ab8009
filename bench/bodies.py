"""Server memory under hostile request bodies, no token: the figures of docs/security.md.

One `moedash serve` (embedded DuckDB, dashboard on, default limits) takes, from raw
sockets on loopback:

- ``dash_stream``: 30 chunked bodies of 8 MiB to ``/_dash-update-component`` (the issue's
  case: 2.5 GB before the budget), one after another;
- ``dash_at_once``: 40 bodies of 2 MiB declared to the Dash route at the same moment;
- ``planner_big``: one streamed 100 MB body to ``POST /api/v1/planner/plan``;
- ``planner_at_once``: 40 bodies of 64 KiB to the planner at once;
- ``every_route_1g``: a declared 1 GiB body to every POST route.

Prints bodies tried, bytes offered, answers by status, and the server's resident set
before and its peak (``VmHWM``) after; writes bench/results/bodies.json.

    .venv/bin/python bench/bodies.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.factories.bodies import (  # noqa: E402
    DASH,
    connect,
    head,
    memory_kib,
    post_routes,
    read_answer,
    send_body,
    send_chunked,
    server_pid,
)
from tests.factories.servers import running_server  # noqa: E402

MIB = 1024 * 1024
PLAN = "/api/v1/planner/plan"


def streamed(base: str, path: str, size: int) -> tuple[int, int]:
    with connect(base, timeout=120) as sock:
        sock.sendall(head(path, None))
        sent = send_chunked(sock, size)
        return read_answer(sock).status, sent


def at_once(base: str, path: str, n: int, size: int) -> tuple[list[int], int]:
    socks = [connect(base, timeout=120) for _ in range(n)]
    offered = 0
    try:
        for sock in socks:
            sock.sendall(head(path, size))
            if send_body(sock, b" " * size):
                offered += size
        return [read_answer(sock).status for sock in socks], offered
    finally:
        for sock in socks:
            sock.close()


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"duckdb:///{tmp}/bodies.duckdb"
        with running_server(url, env={"MOEDASH_WARM_CACHE": "false"}) as base:
            pid = server_pid(base)
            start = memory_kib(pid)["VmRSS"]

            def record(name: str, statuses: list[int], offered: int) -> None:
                mem = memory_kib(pid)
                rows.append(
                    {
                        "scenario": name,
                        "bodies": len(statuses),
                        "offered_mib": round(offered / MIB, 1),
                        "statuses": dict(Counter(statuses)),
                        "rss_start_mib": round(start / 1024),
                        "rss_now_mib": round(mem["VmRSS"] / 1024),
                        "rss_peak_mib": round(mem["VmHWM"] / 1024),
                    }
                )

            t0 = time.monotonic()
            results = [streamed(base, DASH, 8 * MIB) for _ in range(30)]
            record("dash_stream", [s for s, _ in results], sum(n for _, n in results))
            statuses, offered = at_once(base, DASH, 40, 2 * MIB - 1024)
            record("dash_at_once", statuses, offered)
            status, sent = streamed(base, PLAN, 100 * MIB)
            record("planner_big", [status], sent)
            statuses, offered = at_once(base, PLAN, 40, 64 * 1024)
            record("planner_at_once", statuses, offered)
            statuses = []
            for path in post_routes():
                with connect(base) as sock:
                    sock.sendall(head(path, 1 << 30))
                    statuses.append(read_answer(sock).status)
            record("every_route_1g", statuses, len(statuses) << 30)
            elapsed = time.monotonic() - t0
    print(
        f"{'scenario':<16} {'bodies':>6} {'offered MiB':>11} {'RSS start':>9} "
        f"{'RSS peak':>8}  statuses"
    )
    for r in rows:
        print(
            f"{r['scenario']:<16} {r['bodies']:>6} {r['offered_mib']:>11} "
            f"{r['rss_start_mib']:>9} {r['rss_peak_mib']:>8}  {r['statuses']}"
        )
    print(f"total {elapsed:.1f} s")
    out = REPO / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "bodies.json").write_text(json.dumps({"rows": rows, "elapsed_s": elapsed}, indent=1))


if __name__ == "__main__":
    main()
