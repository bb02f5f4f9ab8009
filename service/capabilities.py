"""Capabilities proven by the stored measurements, and where they contradict the hand tables.

``GET /api/v1/capabilities``, the Recommend page, the tree's MNNVL (``service.recommend``),
the agreement table and the export check all read :func:`measured` (cached per store
version): what ran (status success) per hardware x world size x quant x backend x comm,
aggregated in the database (``db.capabilities``). The hand tables of
``analysis.capabilities`` answer only for what was never measured; a conflict between
them is listed (:func:`conflicts`), never resolved silently.
"""

from __future__ import annotations

import pandas as pd

from analysis import capabilities as cap
from service.frames import DashData


def measured(data: DashData) -> pd.DataFrame:
    """``analysis.capabilities.CAPABILITY_COLUMNS`` over the whole store."""
    return data.cached(("capabilities",), data.store.capabilities.measured)


def mnnvl_proven(data: DashData) -> dict[str, int]:
    """Hardware -> the largest world size at which an NVLINK_* comm ran."""
    return cap.measured_mnnvl(measured(data))


def nvlink_ran(data: DashData, hardware: str) -> dict[str, list[int]]:
    """NVLINK_* method -> the world sizes where it ran on ``hardware``."""
    return cap.mnnvl_evidence(measured(data), hardware)


def conflicts(data: DashData, hardware: str | None = None) -> pd.DataFrame:
    """The table-vs-data conflicts (``capability_conflicts``), of one hardware when
    given (case-insensitive)."""
    table = cap.capability_conflicts(measured(data))
    if hardware:
        table = table[table["hardware"] == hardware.upper()].reset_index(drop=True)
    return table


def conflict_lines(data: DashData, hardware: str) -> list[str]:
    """One sentence per conflict on ``hardware``: what the table says, what ran, which
    one the answers use."""
    return [
        f"{r['table']}; the stored measurements: {r['data']} (answers use the {r['used']})"
        for r in conflicts(data, hardware).to_dict("records")
    ]
