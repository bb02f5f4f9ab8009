"""Fixtures the browser tests share (the ``browser`` fixture itself is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

# Console noise that is not ours: software WebGL performance hints.
IGNORED_CONSOLE = ("GL Driver Message", "GPU stall", "WebGL")


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh 1440x1000 page in its own context (downloads allowed); ``page.errors``
    collects console errors (less :data:`IGNORED_CONSOLE`) and uncaught page errors, so a
    test can assert the page raised none. A module's own ``page`` fixture overrides it."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    errors: list[str] = []
    pg.on(
        "console",
        lambda m: (
            errors.append(m.text)
            if m.type == "error" and not any(s in m.text for s in IGNORED_CONSOLE)
            else None
        ),
    )
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    context.close()
