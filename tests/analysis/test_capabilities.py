"""Capabilities from the data vs the hand tables (analysis.capabilities)."""

from __future__ import annotations

import pandas as pd

from analysis.capabilities import (
    capability_conflicts,
    check_export,
    measured_mnnvl,
    mnnvl_at,
    mnnvl_evidence,
    normalise_capabilities,
)
from analysis.tree import Deployment, auto_comm, recommend


def caps(*rows: tuple[str, int, str, str, str]) -> pd.DataFrame:
    return normalise_capabilities(
        pd.DataFrame(
            [(*r, 3, 1) for r in rows],
            columns=["hardware", "world_size", "quant", "backend", "comm", "n_success", "n_runs"],
        )
    )


B300 = caps(
    ("B300", 4, "NVFP4", "CUTLASS", "NVLINK_ONE_SIDED"),
    ("B300", 8, "NVFP4", "CUTLASS", "NVLINK_ONE_SIDED"),
    ("B300", 8, "NVFP4", "TRTLLM", "NVLINK_TWO_SIDED"),
    ("B300", 8, "W4A8_MXFP4_MXFP8", "CUTLASS", "ALLGATHER"),
    ("H200", 8, "FP8_BLOCK_SCALES", "CUTLASS", "ALLGATHER"),
)


def test_mnnvl_is_proven_up_to_the_largest_world_size_that_ran() -> None:
    assert measured_mnnvl(B300) == {"B300": 8}
    assert mnnvl_evidence(B300, "b300") == {"NVLINK_ONE_SIDED": [4, 8], "NVLINK_TWO_SIDED": [8]}
    assert mnnvl_at(measured_mnnvl(B300), "B300", 8) is True
    assert mnnvl_at(measured_mnnvl(B300), "B300", 16) is None  # never measured: the table
    assert mnnvl_at(measured_mnnvl(B300), "H200", 8) is None


def test_conflicts_are_listed_not_resolved_silently() -> None:
    table = capability_conflicts(B300)
    assert list(table["subject"]) == ["backend CUTLASS x W4A8_MXFP4_MXFP8", "mnnvl"]
    mnnvl = table[table["subject"] == "mnnvl"].iloc[0]
    assert "no MNNVL for B300" in mnnvl["table"]
    assert "NVLINK_ONE_SIDED at world size 4, 8" in mnnvl["data"] and mnnvl["used"] == "data"


def test_tree_uses_the_measured_mnnvl() -> None:
    dep = dict(
        hardware="B300", num_experts=384, top_k=6, hidden_size=7168, quant="NVFP4",
        world_size=8, attention_dp=True, cuda_graph=True, num_tokens=64,
    )  # fmt: skip
    table = recommend(Deployment(**dep))  # type: ignore[arg-type]
    data = recommend(Deployment(**dep, mnnvl=True))  # type: ignore[arg-type]
    assert table.expected_comm != "NVLINK_ONE_SIDED"
    assert data.expected_comm == "NVLINK_ONE_SIDED"
    assert any("stored measurements" in n for n in data.notes)
    method, _, _ = auto_comm(Deployment(**dep, mnnvl=True), "CUTLASS", 8, 1)  # type: ignore[arg-type]
    assert method == "NVLINK_ONE_SIDED"


def test_export_check_names_the_conflict() -> None:
    ev = mnnvl_evidence(B300, "B300")
    w = check_export("CUTLASS", "NVLINK_ONE_SIDED", "NVFP4", "B300", forced=True, nvlink_ran=ev)
    assert any(
        x.startswith("capability conflict: the hand table lists no MNNVL for B300")
        for x in w.warnings
    )
    bare = check_export("CUTLASS", "NVLINK_ONE_SIDED", "NVFP4", "B300", forced=True)
    assert any("no stored measurement shows" in x for x in bare.warnings)
    assert not any("guide's table" in x for x in bare.warnings)  # the guide has no such table
