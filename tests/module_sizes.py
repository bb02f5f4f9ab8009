"""`make lint` gate: no source module over 500 lines (conventions: split by concept first)."""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 500


def main(folders: list[str]) -> int:
    over = []
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > LIMIT:
                over.append(f"{path}: {lines} lines (limit {LIMIT})")
    for line in over:
        print(line, file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["."]))
