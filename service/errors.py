"""Errors a service function raises for a question it cannot answer.

They name the input at fault (``field``) so each front end can say so in its own way:
the API maps :class:`InvalidQuery` to 422 and :class:`NoData` to 404, both in the
``{"detail": [{"loc", "msg", "type"}]}`` envelope; a page shows ``msg`` as an empty state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis import columns as C


class ServiceError(Exception):
    """A question the service cannot answer: ``field`` is the input at fault, ``msg``
    says why in words, ``type`` is a short machine-readable reason."""

    def __init__(self, field: str, msg: str, type: str) -> None:
        super().__init__(f"{field}: {msg}")
        self.field = field
        self.msg = msg
        self.type = type


class InvalidQuery(ServiceError):
    """The inputs are well-formed but do not describe something answerable (an unknown
    model, a missing shape)."""


class NoData(ServiceError):
    """The inputs are fine but the store holds nothing to answer from."""


def too_broad(filters: Mapping[str, Any], total: int, runs: pd.DataFrame, cap: int) -> InvalidQuery:
    """The 422 of a question whose runs hold more than ``cap`` candidates: names the
    first of model, hardware, quant that is missing (else world_size) and an example
    cell to ask about."""
    missing = [k for k in (C.MODEL, C.HARDWARE, C.QUANT, C.WORLD_SIZE) if k not in filters]
    field = missing[0] if missing else C.RUN_ID
    sizes = runs.groupby([C.MODEL, C.HARDWARE, C.QUANT], sort=True)["n_candidates"].sum()
    example = sizes.idxmax() if len(sizes) else None
    hint = (
        f" (e.g. model={example[0]}&hardware={example[1]}&quant={example[2]})"
        if example is not None
        else ""
    )
    return InvalidQuery(
        field,
        f"this question spans {total:,} stored candidates in {len(sizes)} cells, more than "
        f"one answer reads ({cap:,}); add {field} -- model, hardware and quant together "
        f"name one cell{hint}",
        "too_broad",
    )
