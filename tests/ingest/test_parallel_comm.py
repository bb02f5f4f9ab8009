"""ingest.parallel_modes and ingest.comm, including the facts pinned by bench_moe's
test_parallel_mode.py (schema doc §6.4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.columns import COMM_CANONICAL
from ingest.comm import canonical_comm_name, resolve_comm
from ingest.parallel_modes import (
    ParallelModeError,
    attn_family,
    normalize_mode,
    resolve_layout,
    resolve_parallel_mode,
)


@pytest.mark.parametrize(
    ("mode", "world_size", "expected"),
    [
        ("DEP", 4, (4, 1, True)),
        ("TEP", 4, (4, 1, False)),
        ("DTP", 4, (1, 4, True)),
        ("TTP", 4, (1, 4, False)),
        ("TTP", 1, (1, 1, False)),
        ("DTP2EP2", 4, (2, 2, True)),
        ("TTP2EP2", 4, (2, 2, False)),
        ("DTP2EP4", 8, (4, 2, True)),
        ("TTP4EP2", 8, (2, 4, False)),
        ("DTP8EP4", 32, (4, 8, True)),
        ("TTP4EP8", 32, (8, 4, False)),
        ("dtp2ep4", 8, (4, 2, True)),  # case-insensitive
    ],
)
def test_resolve_parallel_mode(mode: str, world_size: int, expected: tuple[int, int, bool]) -> None:
    assert resolve_parallel_mode(mode, world_size) == expected


@pytest.mark.parametrize(
    ("hybrid", "world_size", "ep", "tp", "dp"),
    [("DTP2EP2", 4, 2, 2, True), ("TTP4EP2", 8, 2, 4, False), ("DTP8EP4", 32, 4, 8, True)],
)
def test_hybrid_equals_equivalent_custom(
    hybrid: str, world_size: int, ep: int, tp: int, dp: bool
) -> None:
    assert resolve_parallel_mode(hybrid, world_size) == resolve_parallel_mode(
        "CUSTOM", world_size, ep, tp, dp
    )


def test_world_size_mismatch() -> None:
    with pytest.raises(ParallelModeError, match="must equal world_size=8"):
        resolve_parallel_mode("DTP2EP2", 8)


@pytest.mark.parametrize(
    "name", ["TP2EP2", "DEP2", "DTP2", "XTP2EP2", "DTP2EP", "HYBRID", "", "DTP0EP4"]
)
def test_invalid_names(name: str) -> None:
    with pytest.raises(ParallelModeError, match="Unknown parallel_mode"):
        normalize_mode(name)
    with pytest.raises(ParallelModeError, match="Unknown parallel_mode"):
        resolve_parallel_mode(name, 4)


def test_custom() -> None:
    assert resolve_parallel_mode("CUSTOM", 8, 2, 4) == (2, 4, False)  # attention DP defaults off
    assert resolve_parallel_mode("custom", 8, 8, 1, True) == (8, 1, True)
    with pytest.raises(ParallelModeError, match="requires explicit"):
        resolve_parallel_mode("CUSTOM", 8)


def test_attn_family() -> None:
    assert [attn_family(m) for m in ("DEP", "DTP4EP2", "tep", "TTP2EP2", "CUSTOM", "NOPE")] == [
        "D", "D", "T", "T", "?", "?",
    ]  # fmt: skip


def test_resolve_layout_prefers_actual() -> None:
    # actual values win when present (even if they disagree with the name)
    assert resolve_layout("DEP", 4, (None, None, None), (2, 2, True)) == (2, 2, True)
    # partially known actual: fill the gaps from the mode
    assert resolve_layout("DEP", 4, (None, None, None), (None, 1, None)) == (4, 1, True)
    # pruned: nothing built
    assert resolve_layout("TTP", 8, (None, None, None), (None, None, None)) == (1, 8, False)
    assert resolve_layout("DEP", 6 * 1, (None, None, None), (None, None, None)) == (6, 1, True)
    # unknown name, nothing built
    assert resolve_layout("DTP3", 4, (None, None, None), (None, None, None)) == (None, None, None)
    # CUSTOM whose sizes do not fit still reports what was requested
    assert resolve_layout("CUSTOM", 8, (2, 2, None), (None, None, None)) == (2, 2, False)


@given(st.sampled_from(["D", "T"]), st.integers(1, 16), st.integers(1, 16))
def test_hybrid_property(attn: str, tp: int, ep: int) -> None:
    mode = f"{attn}TP{tp}EP{ep}"
    assert resolve_parallel_mode(mode, tp * ep) == (ep, tp, attn == "D")
    assert attn_family(mode) == attn


@pytest.mark.parametrize(
    ("requested", "actual", "expected"),
    [
        ("AUTO", "NVLinkOneSided", "NVLINK_ONE_SIDED"),
        ("NVLINK_TWO_SIDED", "NVLinkTwoSided", "NVLINK_TWO_SIDED"),
        ("NVLINK_TWO_SIDED", "NVLinkTwoSidedFlashinfer", "NVLINK_TWO_SIDED"),
        ("AUTO", "MNNVLLatency", "NVLINK_TWO_SIDED"),
        ("AUTO", "MNNVLThroughput", "NVLINK_ONE_SIDED"),
        ("DEEPEP", "DeepEP", "DEEPEP"),
        ("DEEPEPLOWLATENCY", "DeepEPLowLatency", "DEEPEPLOWLATENCY"),
        ("AUTO", "NcclEP", "NCCL_EP"),
        ("ALLGATHER", "AllGatherReduceScatter", "ALLGATHER"),
        (None, "AllGather", "ALLGATHER"),
        ("AUTO", "NONE", "NONE"),
        ("NONE", None, "NONE"),
        ("AUTO", None, "AUTO"),  # requested AUTO, never built
        ("DEEPEP", None, "DEEPEP"),
        ("AUTO", "AllGatherReduceScatter", "ALLGATHER"),  # factory swapped to all-gather
        ("nvlink_one_sided", None, "NVLINK_ONE_SIDED"),
        (None, None, None),
    ],
)
def test_resolve_comm(requested: str | None, actual: str | None, expected: str | None) -> None:
    canonical, warning = resolve_comm(requested, actual)
    assert canonical == expected and warning is None
    assert canonical is None or canonical in COMM_CANONICAL


def test_unknown_comm_kept_upper_with_warning() -> None:
    canonical, warning = resolve_comm("AUTO", "FancyNewComm")
    assert canonical == "FANCYNEWCOMM"
    assert warning is not None and "FancyNewComm" in warning and "actual_config" in warning
    assert canonical_comm_name("FancyNewComm") is None
