"""Communication-method spellings → one canonical name.

The requested side is env-style (``NVLINK_ONE_SIDED``, ``AUTO``, ``NONE``); the actual
side is the Python class name of the strategy bench_moe built (``NVLinkOneSided``,
``AllGatherReduceScatter``, ``NONE``), including classes older TRT-LLM builds used
(``MNNVLLatency`` → NVLINK_TWO_SIDED, ``MNNVLThroughput`` → NVLINK_ONE_SIDED). The
canonical name (``analysis.columns.COMM_CANONICAL``) is the actual one when known, else
the requested one; ``AUTO`` therefore means "requested AUTO, actual unknown".
"""

from __future__ import annotations

from analysis.columns import COMM_CANONICAL

_ALIASES: dict[str, str] = {
    # actual class names (current and legacy)
    "NVLinkOneSided": "NVLINK_ONE_SIDED",
    "MNNVLThroughput": "NVLINK_ONE_SIDED",
    "NVLinkTwoSided": "NVLINK_TWO_SIDED",
    "NVLinkTwoSidedFlashinfer": "NVLINK_TWO_SIDED",
    "MNNVLLatency": "NVLINK_TWO_SIDED",
    "DeepEP": "DEEPEP",
    "DeepEPLowLatency": "DEEPEPLOWLATENCY",
    "NcclEP": "NCCL_EP",
    "AllGatherReduceScatter": "ALLGATHER",
    "AllGather": "ALLGATHER",
    "NONE": "NONE",
    # requested spellings
    **{name: name for name in COMM_CANONICAL},
    "DEEPEP_LOW_LATENCY": "DEEPEPLOWLATENCY",
    "NCCLEP": "NCCL_EP",
    "ALL_GATHER": "ALLGATHER",
    "ALLGATHERREDUCESCATTER": "ALLGATHER",
}
# Case- and separator-insensitive lookup ("nvlink-one-sided", "nvlinkonesided").
_LOOSE: dict[str, str] = {
    key.upper().replace("_", "").replace("-", ""): value for key, value in _ALIASES.items()
}


def canonical_comm_name(spelling: str) -> str | None:
    """The canonical name of one spelling (either side), or None if unknown."""
    exact = _ALIASES.get(spelling)
    if exact is not None:
        return exact
    return _LOOSE.get(spelling.strip().upper().replace("_", "").replace("-", "").replace(" ", ""))


def resolve_comm(requested: str | None, actual: str | None) -> tuple[str | None, str | None]:
    """(canonical comm, warning or None) for one candidate.

    Uses ``actual`` when given, else ``requested``; both None gives (None, None). An
    unknown spelling is kept verbatim, upper-cased, with a warning text.
    """
    spelling = actual if actual is not None else requested
    if spelling is None:
        return None, None
    canonical = canonical_comm_name(spelling)
    if canonical is not None:
        return canonical, None
    side = "actual_config" if actual is not None else "requested_config"
    return spelling.strip().upper(), f"{side}.comm_method: unknown communication '{spelling}'"
