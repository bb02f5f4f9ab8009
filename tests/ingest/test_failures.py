# ruff: noqa: E501 - the case table reads best one case per line
"""Failure categories of skipped/failed rows (ingest.failures)."""

from __future__ import annotations

import pytest

from ingest.failures import CATEGORIES, categorize


@pytest.mark.parametrize(
    ("status", "reason", "autotune", "expected"),
    [
        ("success", None, "success", None),
        ("success", None, "failed:RuntimeError: x", "autotune_failed"),
        ("failed", "build error: OutOfMemoryError: CUDA out of memory", None, "build_error"),
        ("failed", "timed phase error: RuntimeError: x", None, "timed_phase_error"),
        ("failed", "incomplete: process died before this candidate finished (crash) (x)", None, "incomplete"),
        ("failed", "watchdog_timeout: exceeded 60s; suspected NCCL/CUDA hang (x)", None, "watchdog_timeout"),
        ("failed", "cuda_context_poisoned_after_success: x", None, "cuda_context_poisoned_after_success"),
        ("skipped", "cuda_context_poisoned_upstream: prior candidate poisoned", None, "cuda_context_poisoned_upstream"),
        ("skipped", "routing plan error: ValueError: x", None, "routing_error"),
        ("skipped", "routing materialise error: x", None, "routing_error"),
        ("skipped", "native logits projection error: x", None, "routing_error"),
        ("skipped", "routing_realization rejected by projection_policy=reject: x", None, "routing_error"),
        ("skipped", "requested backend 'CUTEDSL' fell back to 'CUTLASS'", None, "backend_fallback"),
        ("skipped", "moe_ep_size * moe_tp_size = 6 must equal world_size=8", None, "pruned_unsupported"),
        ("skipped", "DENSEGEMM does not support EP (moe_ep_size=8)", None, "pruned_unsupported"),
        ("skipped", "comm_method=DEEPEP has no effect at world_size=1", None, "pruned_unsupported"),
        ("skipped", "invalid", None, "pruned_unsupported"),
        ("skipped", "time_budget_exceeded", None, "budget_truncation"),
        ("skipped", "truncated by --max_configs=100", None, "budget_truncation"),
        ("failed", "something new: x", None, "other"),
        ("failed", None, None, "other"),
    ],
)  # fmt: skip
def test_categorize(
    status: str, reason: str | None, autotune: str | None, expected: str | None
) -> None:
    assert categorize(status, reason, autotune) == expected
    assert expected is None or expected in CATEGORIES
