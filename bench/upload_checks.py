"""What the upload path costs per file beyond storing it: the retry of stored bytes (a
sighting), the same measurements in other bytes (parse + fingerprint + sighting with the
bytes kept) and the regression check of a new version against the latest earlier one.

Runs the server-side work of ``POST /api/v1/runs`` in-process (``parse_upload`` →
``Store.ingest`` → ``regressions_for_runs``, no HTTP) on a fresh DuckDB file (or
``--db`` PostgreSQL URL, which must be empty). Reports are synthetic (``ingest.demo``:
kimi_k2 · GB300 · NVFP4 · ws 8, ``--tokens`` token counts x 48 configurations each,
672 candidates and ~6 MB at the default 14). Prints a table (p50 / p95 / max ms per
case) and writes bench/results/upload_checks.json.

    .venv/bin/python bench/upload_checks.py [--repeats 8] [--tokens 14] [--db URL]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from db.store import Store, open_store  # noqa: E402
from ingest.demo.jsontext import dump_report  # noqa: E402
from ingest.demo.report import generate_report  # noqa: E402
from ingest.detect import parse_upload  # noqa: E402
from ingest.records import UploadMeta  # noqa: E402
from service.regressions import regressions_for_runs  # noqa: E402

OUT = REPO / "bench" / "results" / "upload_checks.json"


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(ordered[-1], 1),
    }


def _upload(store: Store, raw: bytes, meta: UploadMeta) -> tuple[float, float, Any]:
    """(ms to parse + store, ms of the regression check, the ingest result)."""
    t0 = time.perf_counter()
    # as the route does: stored bytes are answered without parsing them again
    result = store.runs.ingest_known(raw, meta, uploaded_by="bench")
    if result is None:
        sweeps = parse_upload(raw, meta, meta.filename)
        result = store.ingest(sweeps, raw, meta, uploaded_by="bench")
    t1 = time.perf_counter()
    created = [r.run_id for r in result.runs if r.created and not result.already_existed]
    if created:
        regressions_for_runs(store, created)
    t2 = time.perf_counter()
    return 1000 * (t1 - t0), 1000 * (t2 - t1), result


def measure(store: Store, repeats: int, tokens: list[int]) -> list[dict[str, Any]]:
    """One row per case (see the module docstring)."""
    reports = [
        dump_report(generate_report("kimi_k2", "GB300", "NVFP4", 8, tokens, seed=100 + i))
        for i in range(repeats + 1)
    ]
    meta = UploadMeta(hardware="GB300", trtllm_version="v1.3.0rc1", filename="r.json")
    _upload(store, reports[0], meta)  # the base version
    new_store, new_check = [], []
    for i in range(1, repeats + 1):
        m = UploadMeta(hardware="GB300", trtllm_version=f"v1.3.0rc{i + 1}", filename="r.json")
        stored_ms, check_ms, _ = _upload(store, reports[i], m)
        new_store.append(stored_ms)
        new_check.append(check_ms)
    retry = []
    for i in range(repeats):
        m = UploadMeta(
            hardware="GB300",
            trtllm_version="v1.3.0rc1",
            filename="r.json",
            ci_url=f"https://ci.example/job/{i}",
        )
        retry.append(_upload(store, reports[0], m)[0])
    other = json.dumps(json.loads(reports[0])).encode()  # re-serialised: other bytes
    same = [_upload(store, other, meta)[0] for _ in range(repeats)]
    n = len(generate_report("kimi_k2", "GB300", "NVFP4", 8, tokens, seed=0)["results"])
    common = {"candidates": n, "report_kb": len(reports[0]) // 1024, "repeats": repeats}
    return [
        {"case": "new version: parse + store", **common, **_ms(new_store)},
        {"case": "new version: regression check", **common, **_ms(new_check)},
        {"case": "retry, same bytes (sighting)", **common, **_ms(retry)},
        {"case": "same measurements, other bytes", **common, **_ms(same)},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=14, help="token counts 1, 2, 4 …")
    parser.add_argument("--db", default=None, help="an empty database (default: a temp DuckDB)")
    args = parser.parse_args()
    tokens = [2**i for i in range(args.tokens)]
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"duckdb:///{Path(tmp) / 'bench.duckdb'}"
        store = open_store(url)
        try:
            rows = measure(store, args.repeats, tokens)
            database = store.dialect
        finally:
            store.close()
    header = f"{'case':34} {'cands':>6} {'KiB':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}"
    print(f"database: {database}")
    print(header)
    for r in rows:
        print(
            f"{r['case']:34} {r['candidates']:>6} {r['report_kb']:>6} "
            f"{r['p50_ms']:>8} {r['p95_ms']:>8} {r['max_ms']:>8}"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"database": database, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
