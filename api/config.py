"""What the HTTP layer needs to know of the settings (built by the composition root)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ApiConfig:
    """Limits and access rules of one API instance.

    ``max_upload_bytes``: the largest accepted request body (413 above);
    ``read_requires_token``: reads (GET) need a valid bearer token too.
    """

    max_upload_bytes: int = 512 * 1024 * 1024
    read_requires_token: bool = False
