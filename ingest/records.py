"""Records that cross the `db` boundary: what a parser hands to the store.

Parsers in ``ingest`` build :class:`Sweep` objects; the store persists them. Nothing
here touches SQL, so both sides can import it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd


@dataclasses.dataclass(frozen=True)
class UploadMeta:
    """Metadata supplied at upload time for facts a bench_moe file does not carry.

    ``hardware`` is the system label (GB300, B300, H200, ...); None means "infer from
    the report's device_name" (the parser fails if it cannot). All other fields are
    optional free text; ``run_date`` is an ISO date (YYYY-MM-DD).
    """

    hardware: str | None = None
    trtllm_version: str | None = None
    trtllm_commit: str | None = None
    run_date: str | None = None
    ci_url: str | None = None
    notes: str | None = None
    dispatch: str | None = None
    filename: str | None = None
    synthetic: bool = False


@dataclasses.dataclass
class Sweep:
    """One run: the candidates of one process group (one model, world size, hardware).

    ``run`` maps run-level column names (``analysis.columns.RUN_COLUMNS`` minus
    ``run_id``, plus the extra keys listed in :data:`RUN_EXTRA_KEYS`) to values.
    ``candidates`` has exactly the columns ``analysis.columns.CANDIDATE_COLUMNS``.
    ``key`` identifies the sweep inside its upload (e.g. "" for a bench_moe file,
    "deepseek_v4_pro/NVFP4/B300.csv#ws=8" for a dashboard payload); the store combines
    it with the upload's content hash to make the idempotency key.
    """

    key: str
    run: dict[str, Any]
    candidates: pd.DataFrame


# Run-level keys beyond analysis.columns.RUN_COLUMNS that the store keeps.
RUN_EXTRA_KEYS: tuple[str, ...] = (
    "device_name",
    "sm",
    "cuda_version",
    "torch_version",
    "driver_version",
    "routing_method",
    "ci_url",
    "notes",
    "dispatch",
    "model_json",  # JSON text of the report's `model` block (lossless)
    "environment_json",  # JSON text of `environment`
    "search_json",  # JSON text of `search`
    "base_config_json",  # JSON text of `base_config`
    "rankings_json",  # JSON text of `rankings`
    "extra_json",  # JSON text of unknown top-level keys
    "warnings_json",  # JSON list of parser warnings (e.g. unknown keys seen)
)
