"""Blocks many answers share: provenance, the routing (dispatch) block, paging, a table
row, and the non-JSON bodies (CSV, YAML, text) a route can answer instead of JSON."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Open(BaseModel):
    """An object whose listed fields are stable; the API may add others (kept, never
    dropped: clients ignore what they do not know)."""

    model_config = ConfigDict(extra="allow")


class Row(Open):
    """One row of a table: a column per key, missing values as null. The columns listed
    are the stable ones; an answer may carry more."""


class Truncated(BaseModel):
    rows: int = Field(description="Rows the whole table has")
    returned: int = Field(description="Rows in this answer (the first ones)")


class Table(Open):
    """An answer holding a table (``items``), which is cut at 100,000 rows."""

    truncated: Truncated | None = Field(
        None,
        description="Present only when the table was cut (the CSV then carries the header "
        "X-Moedash-Truncated: <rows>)",
    )


class Provenance(Open):
    """The stored data an answer was computed from."""

    run_ids: list[int] = Field(description="Runs whose candidates were used, ascending")
    trtllm_versions: list[str] = Field(description="Their TensorRT-LLM versions, sorted")
    n_candidates: int = Field(description="Candidate rows used")
    synthetic: bool = Field(description="True when any of them is generated demo data")


class SideProvenance(Open):
    """Provenance of each side of a comparison."""

    base: Provenance
    head: Provenance


class Dispatch(Open):
    """The routing (dispatch) pattern an answer covers."""

    requested: str | None = Field(description="The pattern asked for (null: the default)")
    used: list[str] = Field(description="Patterns whose rows the answer holds")
    default: bool = Field(description="True when the default pattern rule chose `used`")
    known: list[str] = Field(description="Patterns stored for the slice")
    rule: str = Field(description="How the default pattern is chosen")


class Page(Open):
    """Paging of a list answer."""

    total: int = Field(description="Rows matching the filters (before limit/offset)")
    limit: int = Field(description="Rows asked for at most")
    offset: int = Field(description="Rows skipped")


PROVENANCE_EXAMPLE: dict[str, Any] = {
    "run_ids": [1, 4],
    "trtllm_versions": ["1.2.0rc27"],
    "n_candidates": 89,
    "synthetic": False,
}
DISPATCH_EXAMPLE: dict[str, Any] = {
    "requested": None,
    "used": ["balanced"],
    "default": True,
    "known": ["balanced", "recv_hotspot"],
    "rule": "balanced routing where measured (the guide ranks under perfect routing), "
    "else the most-measured pattern",
}


def examples(*bodies: dict[str, Any]) -> ConfigDict:
    """Model config of an open answer with these examples in its schema."""
    return ConfigDict(extra="allow", json_schema_extra={"examples": list(bodies)})


def alternatives(media: dict[str, str]) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entry for a 200 that can also be a text body: ``media`` maps each
    media type (``text/csv``) to an example of it."""
    content = {kind: {"schema": {"type": "string"}, "example": ex} for kind, ex in media.items()}
    return {200: {"content": content}}


def merged(*parts: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries combined (later parts win per status)."""
    out: dict[int | str, dict[str, Any]] = {}
    for part in parts:
        out.update(part)
    return out


CSV_EXAMPLE = "model,hardware,quant,world_size,num_tokens,backend,score_ms\n" + (
    "deepseek_v4_pro,GB300,NVFP4,8,256,MEGAMOE_CUTEDSL,0.8\n"
)
CSV = alternatives({"text/csv": CSV_EXAMPLE})
"""A table route's ``format=csv``: the rows alone, as a download."""
YAML_EXAMPLE = "# moedash recommended MoE configuration\nmoe_config:\n  backend: TRTLLM\n"
ENV_EXAMPLE = "TRTLLM_FORCE_COMM_METHOD=NVLINK_ONE_SIDED\n"
TEXT_DOWNLOADS = alternatives({"application/yaml": YAML_EXAMPLE, "text/plain": ENV_EXAMPLE})
# a YAML body is a document, not a string: a client (and schemathesis) parses it
TEXT_DOWNLOADS[200]["content"]["application/yaml"]["schema"] = {
    "type": "object",
    "description": "trtllm-serve --extra_llm_api_options (moe_config, parallel sizes …)",
}
"""An export's ``format=yaml`` (the --extra_llm_api_options file) and ``format=env``."""
