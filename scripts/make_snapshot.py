"""Write the published-data snapshot (``data/published/``) from ``../shared/data``.

Usage: ``python scripts/make_snapshot.py [SHARED_DATA] [--out DIR] [--check]``.
SHARED_DATA defaults to $MOEDASH_SHARED_DATA or ../shared/data. ``--check`` writes
nothing and exits 1 when a committed file differs from what the data give.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from ingest.snapshot import SNAPSHOT_DIR, build_snapshot


def main(argv: list[str] | None = None) -> int:
    """Build the snapshot; write it (replacing the folder) or, with --check, compare it."""
    parser = argparse.ArgumentParser(description=__doc__)
    default = os.environ.get("MOEDASH_SHARED_DATA") or str(Path("..") / "shared" / "data")
    parser.add_argument("shared", nargs="?", default=default)
    parser.add_argument("--out", default=str(SNAPSHOT_DIR))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    shared, out = Path(args.shared), Path(args.out)
    if not (shared / "nvidia_moe_dashboard" / "csv").is_dir():
        print(f"{shared}: no nvidia_moe_dashboard/csv (wrong SHARED_DATA?)", file=sys.stderr)
        return 2
    files = build_snapshot(shared)
    if args.check:
        stale = [
            n for n, b in files.items() if not (out / n).is_file() or (out / n).read_bytes() != b
        ]
        for name in stale:
            print(f"differs: {name}", file=sys.stderr)
        return 1 if stale else 0
    if out.exists():
        shutil.rmtree(out)  # files of models no longer published go too
    for name, raw in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(raw)
    total = sum(len(b) for b in files.values())
    print(f"wrote {len(files)} files, {total / 1e6:.2f} MB, to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
