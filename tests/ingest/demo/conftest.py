"""Demo reports shared by the demo tests (built once per package: the full set is slow)."""

from __future__ import annotations

import pytest

from ingest.demo import generate as demo


@pytest.fixture(scope="package")
def demo_set():
    return demo.demo_reports()


@pytest.fixture(scope="package")
def small():
    """A small GB300 report covering all row kinds cheaply."""
    return demo.generate_report(
        "deepseek_v4_pro",
        "GB300",
        "NVFP4",
        8,
        [1, 16, 256, 4096, 32768],
        seed=3,
        time_budget_tail=3,
    )


@pytest.fixture(scope="package")
def b300_cross():
    return demo.generate_report(
        "deepseek_v4_pro", "B300", "NVFP4", 16, [2**j for j in range(0, 16)], seed=5
    )
