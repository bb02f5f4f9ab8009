"""The real-data tier (marker ``realdata``): third-party data read from
``$MOEDASH_SHARED_DATA`` (default ``$MOEDASH_SHARED/data``, else ``<repo>/../shared/data``).

Only this tier reads ``../shared``; a missing data directory fails it (CI runs it on
purpose), it never skips. The default suite (``make test``) deselects it by marker.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def shared_data_dir() -> Path:
    """Where the third-party data lives (not checked: see :func:`require`)."""
    if "MOEDASH_SHARED_DATA" in os.environ:
        return Path(os.environ["MOEDASH_SHARED_DATA"])
    shared = Path(os.environ.get("MOEDASH_SHARED", REPO.parent / "shared"))
    return shared / "data"


def require(path: Path) -> Path:
    """``path`` if it exists; else fail the test naming the variable to set."""
    if not path.exists():
        pytest.fail(f"real data not found at {path} (set MOEDASH_SHARED_DATA)")
    return path
