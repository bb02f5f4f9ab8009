"""What the HTTP layer needs to know of the settings (built by the composition root)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ApiConfig:
    """Limits and access rules of one API instance. Sizes in bytes, times in seconds.

    ``max_upload_bytes``: the largest accepted API request body (413 above);
    ``max_json_body_bytes``: the largest body to any other API route (the planner's form);
    ``max_outcomes_body_bytes``: the largest ``POST /api/v1/crossval/outcomes`` body;
    ``max_page_body_bytes``: the largest body to anything else (dashboard callbacks);
    ``max_buffered_body_bytes``: bytes of non-upload bodies held in memory at once before
    429 (``Retry-After``);
    ``body_idle_s`` / ``body_min_rate``: a body stalled that long, or slower than that
    many bytes/s after ``body_grace_s``, answers 408;
    ``max_concurrent_uploads``: uploads in flight before 429 (``Retry-After``);
    ``max_uploads_per_token``: uploads in flight with one credential before 429;
    ``max_expensive_requests``: planner / cross-validation / thresholds requests in
    flight before 429;
    ``parse_budget_bytes``: upload bytes parsed at once (more wait their turn; one
    upload larger than the budget is parsed alone);
    ``read_requires_token``: reads (GET, /docs, the OpenAPI schema) need a valid token
    too, as Bearer or as the password of HTTP Basic;
    ``auth_failures_per_minute``: failed authentications per client address per minute
    before 429.
    """

    max_upload_bytes: int = 512 * 1024 * 1024
    max_json_body_bytes: int = 64 * 1024
    max_outcomes_body_bytes: int = 1024 * 1024
    max_page_body_bytes: int = 2 * 1024 * 1024
    max_buffered_body_bytes: int = 64 * 1024 * 1024
    body_idle_s: float = 30.0
    body_grace_s: float = 10.0
    body_min_rate: float = 16 * 1024
    max_concurrent_uploads: int = 32
    max_uploads_per_token: int = 8
    max_expensive_requests: int = 4
    parse_budget_bytes: int = 256 * 1024 * 1024
    read_requires_token: bool = False
    auth_failures_per_minute: int = 30
