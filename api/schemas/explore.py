"""Answers of /crossovers and /routing-skew: where the best option changes along an axis,
and one workload under balanced vs skewed routing."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api.schemas.common import PROVENANCE_EXAMPLE, Open, Provenance, Row, examples

_SERIES = "deepseek_v4_pro · GB300 · NVFP4 · ws 8 · decode · attention DP · balanced"


class SeriesRow(Row):
    series: int = Field(description="Series id (switches and segments name it)")
    series_label: str
    n_switches: int | None = None
    rank1_sequence: str | None = Field(None, description="The rank-1 options along the axis")


class SwitchRow(Row):
    """Where the rank-1 option changes: between two measured axis points."""

    series: int
    series_label: str
    before: str | None = None
    after: str | None = None
    bracket_lo: float | None = Field(None, description="Last axis value of `before` (axis unit)")
    bracket_hi: float | None = Field(None, description="First axis value of `after`")
    margin_lo_pct: float | None = Field(None, description="%")
    margin_hi_pct: float | None = Field(None, description="%")
    verdict: str | None = Field(None, description="robust, tie within noise or not compared")


class SegmentRow(Row):
    series: int
    series_label: str
    option: str | None = None
    axis_lo: float | None = None
    axis_hi: float | None = None


class PointRow(Row):
    series: int
    series_label: str
    axis_value: float | None = None
    option: str | None = None
    score_ms: float | None = Field(None, description="ms")
    rank: int | None = None


class Units(Open):
    axis: str = Field(description="tokens, tokens per rank or KiB")
    score: str
    margin: str
    noise: str


class Crossovers(Open):
    """The rank-1 option along an axis, per series: segments and switches (``points``
    with ``curves=true`` only)."""

    model_config = examples(
        {
            "option": "backend",
            "axis": "num_tokens",
            "filters": {},
            "units": {"axis": "tokens", "score": "ms", "margin": "%", "noise": "%"},
            "name": "crossovers_backend_num_tokens",
            "provenance": PROVENANCE_EXAMPLE,
            "series": [
                {
                    "series": 1,
                    "series_label": _SERIES,
                    "n_switches": 1,
                    "rank1_sequence": "MEGAMOE_CUTEDSL → TRTLLM",
                }
            ],
            "switches": [
                {
                    "series": 1,
                    "series_label": _SERIES,
                    "before": "MEGAMOE_CUTEDSL",
                    "after": "TRTLLM",
                    "bracket_lo": 256.0,
                    "bracket_hi": 1024.0,
                    "margin_lo_pct": 25.0,
                    "margin_hi_pct": 50.0,
                    "verdict": "robust",
                }
            ],
            "segments": [
                {
                    "series": 1,
                    "series_label": _SERIES,
                    "option": "MEGAMOE_CUTEDSL",
                    "axis_lo": 256.0,
                    "axis_hi": 256.0,
                }
            ],
        }
    )

    option: str = Field(description="backend, comm, backend+comm or parallel_mode")
    axis: str = Field(description="num_tokens, activated_tokens_per_rank or dispatch_kb")
    filters: dict[str, Any] = Field(description="The filters applied")
    units: Units
    name: str = Field(description="File name stem of the CSV downloads")
    provenance: Provenance
    series: list[SeriesRow]
    switches: list[SwitchRow]
    segments: list[SegmentRow]
    points: list[PointRow] | None = Field(None, description="Score curves (curves=true)")


class SkewRow(Row):
    configuration: str
    balanced_rank: int | None = None
    balanced_score_ms: float | None = Field(None, description="ms")
    skewed_rank: int | None = None
    skewed_score_ms: float | None = Field(None, description="ms")
    slowdown_pct: float | None = Field(None, description="skewed / balanced - 1, %")
    noise_band_pct: float | None = Field(None, description="%")


class Check(Open):
    condition: str
    observed: str
    met: bool | None


class Advice(Open):
    technique: str = Field(description="EPLB, DWDP or low-precision combine")
    verdict: str
    summary: str
    checks: list[Check]
    details: list[str]


class RoutingSkew(Open):
    """One workload under balanced vs skewed routing (``items: []`` and a ``message``
    when only one pattern is stored)."""

    model_config = examples(
        {
            "workload": {
                "model": "kimi_k2",
                "hardware": "GB300",
                "quant": "NVFP4",
                "world_size": 16,
                "num_tokens": 256,
                "phase": "decode",
                "attention": "dp",
            },
            "repeats": "median",
            "patterns": ["balanced", "recv_hotspot"],
            "balanced": "balanced",
            "skewed": "recv_hotspot",
            "message": None,
            "facts": {"local_batch": 16.0, "activated_tokens_per_rank": 128.0},
            "summary": {"winner_changes": True, "median_slowdown_pct": 20.0},
            "items": [
                {
                    "configuration": "TRTLLM · NVLINK_ONE_SIDED · DEP (EP 16 / TP 1)",
                    "balanced_rank": 1,
                    "balanced_score_ms": 1.0,
                    "skewed_rank": 3,
                    "skewed_score_ms": 1.5,
                    "slowdown_pct": 50.0,
                    "noise_band_pct": 2.0,
                }
            ],
            "advice": [
                {
                    "technique": "EPLB",
                    "verdict": "indicated",
                    "summary": "EPLB is indicated here",
                    "checks": [{"condition": "decode phase", "observed": "decode", "met": True}],
                    "details": [],
                }
            ],
            "provenance": PROVENANCE_EXAMPLE,
        }
    )

    workload: dict[str, Any]
    repeats: str
    patterns: list[str] = Field(description="Routing patterns stored for the workload")
    balanced: str | None
    skewed: str | None
    message: str | None = Field(description="Why there is nothing to compare (else null)")
    facts: dict[str, Any] = Field(description="local_batch, activated_tokens_per_rank")
    summary: dict[str, Any] | None
    items: list[SkewRow]
    advice: list[Advice]
    provenance: Provenance
