"""Failure categories: a machine-usable label for why a candidate has no usable score.

bench_moe has only three statuses (success / skipped / failed); *why* lives in
``skip_reason``, whose prefix before the first ``:`` is stable (schema doc §2.4). We
map that text to a small vocabulary, and keep the full text in ``skip_reason``.

Categories:

* ``build_error`` - "build error: ..." (module construction; OOM at build too)
* ``timed_phase_error`` - "timed phase error: ..." (warmup/timing; OOM while timing)
* ``incomplete`` - "incomplete: ..." (the process died; checkpoint placeholder)
* ``watchdog_timeout`` - "watchdog_timeout: ..." (suspected hang)
* ``cuda_context_poisoned_after_success`` - a measured row demoted after a sticky
  CUDA error (its latency data are kept)
* ``cuda_context_poisoned_upstream`` - placeholder for a candidate never run because
  an earlier one poisoned the CUDA context (any ``*_upstream`` reason)
* ``routing_error`` - routing plan / materialise / native-logits projection errors
  and ``routing_realization rejected by projection_policy=reject``
* ``backend_fallback`` - "requested backend 'X' fell back to 'Y'"
* ``pruned_unsupported`` - capability, mapping, layout and forced-comm pruning
* ``budget_truncation`` - "time_budget_exceeded", "truncated by --max_configs=N"
* ``autotune_failed`` - a *success* row whose autotune_status starts with "failed"
  (bench_moe keeps it but excludes it from ``rankings[].best``)
* ``other`` - a failed row whose text matches nothing above

Every family of prefixes that bench_moe writes for *skipped* rows except pruning is
matched explicitly; pruning texts are open-ended ("<reject_reason>: <detail>"), so a
skipped row that matches nothing else is ``pruned_unsupported``.
"""

from __future__ import annotations

CATEGORIES: tuple[str, ...] = (
    "build_error",
    "timed_phase_error",
    "incomplete",
    "watchdog_timeout",
    "cuda_context_poisoned_after_success",
    "cuda_context_poisoned_upstream",
    "routing_error",
    "backend_fallback",
    "pruned_unsupported",
    "budget_truncation",
    "autotune_failed",
    "other",
)

# (prefix, category), checked in order against the lower-cased, stripped text.
_PREFIXES: tuple[tuple[str, str], ...] = (
    ("build error", "build_error"),
    ("timed phase error", "timed_phase_error"),
    ("incomplete", "incomplete"),
    ("watchdog_timeout", "watchdog_timeout"),
    ("cuda_context_poisoned_after_success", "cuda_context_poisoned_after_success"),
    ("cuda_context_poisoned_upstream", "cuda_context_poisoned_upstream"),
    ("routing plan error", "routing_error"),
    ("routing materialise error", "routing_error"),
    ("routing materialize error", "routing_error"),
    ("native logits projection error", "routing_error"),
    ("routing_realization rejected", "routing_error"),
    ("time_budget_exceeded", "budget_truncation"),
    ("truncated by --max_configs", "budget_truncation"),
)

# Substrings of pruning texts (mapping, backend/layout gates, forced comm).
_PRUNING_MARKERS: tuple[str, ...] = (
    "must equal world_size",
    "unknown parallel_mode",
    "parallel_mode=custom requires",
    "does not support",
    "comm_method=",
    "unknown moe backend",
    ".can_implement raised",
    "routing-control requires",
)


def categorize(
    status: str | None, skip_reason: str | None, autotune_status: str | None = None
) -> str | None:
    """The failure category of one row, or None for a clean success row.

    ``status`` is the row status; ``skip_reason`` its reason text (None allowed);
    ``autotune_status`` the row's ``instrumentation.autotune_status`` (only used for
    success rows). Matching is case-insensitive on the text's prefix.
    """
    if status == "success":
        if autotune_status is not None and autotune_status.startswith("failed"):
            return "autotune_failed"
        return None
    text = (skip_reason or "").strip().lower()
    if not text:
        return "other"
    for prefix, category in _PREFIXES:
        if text.startswith(prefix):
            return category
    head = text.split(":", 1)[0]
    if head.endswith("_upstream"):
        return "cuda_context_poisoned_upstream"
    if "fell back" in text:
        return "backend_fallback"
    if text == "invalid" or any(marker in text for marker in _PRUNING_MARKERS):
        return "pruned_unsupported"
    if status == "skipped":
        return "pruned_unsupported"
    return "other"
