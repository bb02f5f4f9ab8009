"""bench_moe parallel modes → MoE EP/TP sizes and the attention strategy.

Mirrors ``mapping.py``/``test_parallel_mode.py`` of bench_moe (schema doc §2.11, §6.4):

| mode          | moe_ep_size | moe_tp_size | attention DP |
|---------------|-------------|-------------|--------------|
| DEP           | world_size  | 1           | True         |
| TEP           | world_size  | 1           | False        |
| DTP           | 1           | world_size  | True         |
| TTP           | 1           | world_size  | False        |
| DTP<k>EP<m>   | m           | k           | True         |
| TTP<k>EP<m>   | m           | k           | False        |
| CUSTOM        | requested   | requested   | requested (default False) |

Names are case-insensitive; hybrids need both numbers. ``ep * tp`` must equal the world
size.
"""

from __future__ import annotations

import re

_PRESETS: dict[str, tuple[bool, bool]] = {
    # mode: (ep takes the world size, attention DP)
    "DEP": (True, True),
    "TEP": (True, False),
    "DTP": (False, True),
    "TTP": (False, False),
}
_HYBRID = re.compile(r"^([DT])TP([1-9][0-9]*)EP([1-9][0-9]*)$")


class ParallelModeError(ValueError):
    """An unknown mode name or sizes that do not multiply to the world size."""


def normalize_mode(mode: str) -> str:
    """Upper-cased, validated mode name; ParallelModeError("Unknown parallel_mode=...")."""
    name = mode.strip().upper()
    if name in _PRESETS or name == "CUSTOM" or _HYBRID.match(name):
        return name
    raise ParallelModeError(f"Unknown parallel_mode={mode!r}")


def attn_family(mode: str) -> str:
    """ "D" (attention DP), "T" (attention TP) or "?" (CUSTOM / unknown)."""
    name = mode.strip().upper()
    if name in _PRESETS or _HYBRID.match(name):
        return name[0]
    return "?"


def resolve_parallel_mode(
    mode: str,
    world_size: int,
    moe_ep_size: int | None = None,
    moe_tp_size: int | None = None,
    enable_attention_dp: bool | None = None,
) -> tuple[int, int, bool]:
    """(moe_ep_size, moe_tp_size, attention_dp) for a mode at ``world_size``.

    The size arguments are used only by CUSTOM (both required; attention DP defaults
    to False). Raises ParallelModeError for unknown names, a CUSTOM without sizes, or a
    layout whose ``ep * tp`` is not ``world_size``.
    """
    name = normalize_mode(mode)
    if name in _PRESETS:
        ep_is_world, dp = _PRESETS[name]
        ep, tp = (world_size, 1) if ep_is_world else (1, world_size)
    elif name == "CUSTOM":
        if moe_ep_size is None or moe_tp_size is None:
            raise ParallelModeError(
                "parallel_mode=CUSTOM requires explicit moe_ep_size and moe_tp_size"
            )
        ep, tp, dp = moe_ep_size, moe_tp_size, bool(enable_attention_dp)
    else:
        match = _HYBRID.match(name)
        assert match is not None  # normalize_mode accepted it
        dp = match.group(1) == "D"
        tp, ep = int(match.group(2)), int(match.group(3))
    if ep * tp != world_size:
        raise ParallelModeError(
            f"moe_ep_size * moe_tp_size = {ep * tp} must equal world_size={world_size}"
        )
    return ep, tp, dp


def resolve_layout(
    mode: str,
    world_size: int,
    requested: tuple[int | None, int | None, bool | None],
    actual: tuple[int | None, int | None, bool | None],
) -> tuple[int | None, int | None, bool | None]:
    """EP size, TP size and attention DP of one candidate.

    Each value comes from ``actual`` (what bench_moe built) when non-null, else from
    the mode (CUSTOM: the requested sizes). When the mode cannot be resolved (unknown
    name, sizes that do not fit: bench_moe prunes such candidates) the derived values
    are None. Raises nothing.
    """
    a_ep, a_tp, a_dp = actual
    if a_ep is not None and a_tp is not None and a_dp is not None:
        return a_ep, a_tp, a_dp
    try:
        d_ep, d_tp, d_dp = resolve_parallel_mode(mode, world_size, *requested)
    except ParallelModeError:
        d_ep, d_tp, d_dp = None, None, None
        if mode.strip().upper() == "CUSTOM":
            d_ep, d_tp = requested[0], requested[1]
            d_dp = bool(requested[2]) if requested[2] is not None else False
    return (
        a_ep if a_ep is not None else d_ep,
        a_tp if a_tp is not None else d_tp,
        a_dp if a_dp is not None else d_dp,
    )
