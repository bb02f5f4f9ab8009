"""Answers of /serving-configs and /crossval/*: deployed serving configs vs bench_moe."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from api.schemas.common import Open, Page, Row, examples

_IMPORT: dict[str, Any] = {
    "import_id": 1,
    "content_hash": "f78bc7f30666be0624cf2c2fb7c90413dc58961efb820d919345016670a91002",
    "source": "upload by ci: 12 files",
    "imported_at": "2026-12-02T06:20:02.037190+00:00",
    "n_entries": 6,
    "n_points": 16,
    "n_workloads": 32,
    "n_mappable": 20,
    "n_new_workloads": 32,
    "n_updated_workloads": 0,
}
_WORKLOAD: dict[str, Any] = {
    "workload_id": "3f37b4c04b182b6d:decode",
    "point_id": "3f37b4c04b182b6d",
    "phase": "decode",
    "entry": "dsr1-fp8-h200-dynamo-trt",
    "conc": 8,
    "model": "deepseek_r1",
    "hardware": "H200",
    "world_size": 8,
    "num_tokens": 8,
    "backend": "CUTLASS",
    "parallel_mode": "TEP",
}
SWEEP_SCRIPT = "#!/bin/sh\n# bench_moe sweeps that fill the cross-validation 'no data' rows\n"
_TOL = "Nearest num_tokens within this factor (log axis)"
_NOISE = "rule within_noise: % the deployed score may be above the best"


class ServingImport(Open):
    """What an import stored (201) or found already imported (200)."""

    model_config = examples(
        {
            **_IMPORT,
            "already_existed": False,
            "n_unmappable": 12,
            "n_existing_workloads": 0,
            "n_recipes_resolved": 5,
            "n_recipes_unresolved": 0,
        }
    )

    already_existed: bool
    import_id: int
    content_hash: str = Field(description="Hash of the files' contents")
    source: str
    imported_at: Any = Field(description="When it was imported (ISO 8601)")
    n_entries: int = Field(description="Master entries read")
    n_points: int = Field(description="Serving points")
    n_workloads: int = Field(description="Workloads (point x phase)")
    n_mappable: int
    n_unmappable: int
    n_new_workloads: int
    n_existing_workloads: int
    n_updated_workloads: int
    n_recipes_resolved: int
    n_recipes_unresolved: int


class ImportRow(Row):
    import_id: int
    content_hash: str | None = None
    source: str | None = None
    imported_at: str | None = None
    n_workloads: int | None = None


class ServingImports(Open):
    """Serving-config imports, newest first."""

    model_config = examples({"items": [_IMPORT]})

    items: list[ImportRow]


class WorkloadRow(Row):
    """A deployed serving workload and the MoE configuration it runs."""

    workload_id: str = Field(description="<point_id>:<phase>")
    phase: str | None = None
    model: str | None = None
    hardware: str | None = None
    num_tokens: int | None = None
    backend: str | None = None
    parallel_mode: str | None = None
    mappable: bool | None = Field(None, description="Has a bench_moe equivalent")


class Workloads(Page):
    model_config = examples(
        {"total": 32, "limit": 1, "offset": 0, "items": [{**_WORKLOAD, "mappable": True}]}
    )

    items: list[WorkloadRow]


class LedgerRow(WorkloadRow):
    crossval_status: str | None = Field(None, description="Match, Mismatch, no data …")
    best_backend: str | None = None
    best_score_ms: float | None = Field(None, description="ms")
    deployed_score_ms: float | None = Field(None, description="ms")
    deployed_gap_pct: float | None = Field(None, description="Deployed slower by, %")


class Ledger(Open):
    """Deployed config vs the best bench_moe candidate, per workload."""

    model_config = examples(
        {
            "total": 32,
            "token_tolerance": 2.0,
            "rule": "exact",
            "noise_pct": 3.0,
            "items": [
                {
                    **_WORKLOAD,
                    "crossval_status": "Match",
                    "best_backend": "CUTLASS",
                    "best_score_ms": 1.0,
                    "deployed_score_ms": 1.0,
                    "deployed_gap_pct": 0.0,
                }
            ],
        }
    )

    total: int
    token_tolerance: float = Field(description=_TOL)
    rule: str = Field(description="The match rule")
    noise_pct: float = Field(description=_NOISE)
    items: list[LedgerRow]


_GUIDE_ROW: dict[str, Any] = {
    "Model": "DeepSeek-V4-Pro",
    "Hardware": "GB300",
    "Match": "92/108 (85.19%, prefill 54/54, decode 38/54)",
    "Mismatch": "16/108",
    "Improvement": "9/16",
    "Flat": "6/16",
    "Regression": "1/16",
    "Regression after Perfect Routing": "0/16",
}


class Summary(Open):
    """The guide's table: Match rate and end-to-end outcomes per model and hardware."""

    model_config = examples(
        {
            "band_pct": 3.0,
            "token_tolerance": 2.0,
            "rule": "exact",
            "noise_pct": 3.0,
            "items": [{**_GUIDE_ROW, "n_compared": 108, "n_match": 92, "match_pct": 85.19}],
        }
    )

    band_pct: float = Field(description="±band (%) within which an outcome is Flat")
    token_tolerance: float = Field(description=_TOL)
    rule: str
    noise_pct: float = Field(description=_NOISE)
    items: list[Row]


class Rules(Open):
    """The summary's Match cell under every match rule."""

    model_config = examples(
        {
            "definitions": {"exact": "Match when the fastest bench_moe candidate has ..."},
            "items": [{"Model": "DeepSeek-R1", "Hardware": "H200", "exact": "1/2"}],
        }
    )

    definitions: dict[str, str] = Field(description="Each match rule, in words")
    items: list[Row]


class Guide(Open):
    """The guide's published table beside ours."""

    model_config = examples(
        {
            "rule": "exact",
            "noise_pct": 3.0,
            "published": [_GUIDE_ROW],
            "items": [
                {
                    "Model": "DeepSeek-V4-Pro",
                    "model": "deepseek_v4_pro",
                    "hardware": "GB300",
                    "phase": "prefill",
                    "guide_match": 54,
                    "guide_n": 54,
                    "ours_match": 0,
                    "ours_n": 0,
                }
            ],
        }
    )

    rule: str
    noise_pct: float = Field(description=_NOISE)
    published: list[Row] = Field(description="The guide's table as published")
    items: list[Row]


class Sweeps(Open):
    """bench_moe commands that would measure every no-data workload."""

    model_config = examples(
        {
            "filename": "crossval-sweeps-all-all-all.sh",
            "n_commands": 1,
            "items": [
                {
                    "hardware": "B300",
                    "model": "deepseek_r1",
                    "world_size": 4,
                    "num_tokens_list": "8192",
                    "command": "python -m bench_moe ...",
                }
            ],
            "coverage": [{"hardware": "B300", "n_workloads": 1, "n_covered": 0}],
        }
    )

    filename: str = Field(description="Name of the shell script (format=sh)")
    n_commands: int
    items: list[Row] = Field(description="One command per row")
    coverage: list[Row] = Field(description="Workloads covered per sweep group")
    cannot_fill: list[Row] = Field(
        default_factory=list,
        description="No-data workloads bench_moe cannot fill (a deployed backend it does "
        "not build, e.g. WIDEEP): no command, the reason",
    )


class OutcomeState(BaseModel):
    workload_id: str
    state: str = Field(description="created, already existed or replaced")


class OutcomesStored(Open):
    """What an outcomes upload stored (201) or found stored with these values (200)."""

    model_config = examples(
        {
            "n_created": 1,
            "n_existing": 0,
            "n_replaced": 0,
            "items": [{"workload_id": "3f37b4c04b182b6d:decode", "state": "created"}],
        }
    )

    n_created: int
    n_existing: int
    n_replaced: int
    items: list[OutcomeState]


class Outcomes(Open):
    """Stored end-to-end outcomes, classified at ``band_pct``."""

    model_config = examples(
        {
            "band_pct": 3.0,
            "items": [
                {
                    "workload_id": "3f37b4c04b182b6d:decode",
                    "tps_per_user_deployed": 50.0,
                    "tps_per_user_candidate": 55.0,
                    "outcome": "Improvement",
                }
            ],
        }
    )

    band_pct: float = Field(description="±band (%) within which an outcome is Flat")
    items: list[Row]


class GuideFit(Open):
    """Which match rule reproduces each row of the guide's table, and the rule that fits
    it best overall."""

    model_config = examples(
        {
            "fixed_only": True,
            "headline": "Ours 25.1 % Match (exact) vs the guide's 79.8 % ...",
            "default_rule": "within_noise 3 %, no MegaMoE in prefill",
            "fit": [
                {
                    "spec": "within_noise 3 %, no MegaMoE in prefill",
                    "mean_error_points": 8.4,
                    "n_rows": 5,
                    "n_reproduced": 4,
                }
            ],
            "items": [],
        }
    )

    fixed_only: bool = Field(description="Agentic-coding traces left out (the guide's table)")
    headline: str = Field(description="The gap between ours and the guide, explained")
    default_rule: str = Field(description="The rule with the smallest mean error")
    fit: list[Row] = Field(description="Per rule: mean error (percentage points), rows reproduced")
    items: list[Row] = Field(
        description="Per guide row: our Match count under every rule, the rules that "
        "reproduce it, or why none does"
    )
