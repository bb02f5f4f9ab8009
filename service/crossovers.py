"""Crossover explorer answers: the one function the API route and the page both call.

:func:`crossover_answer` resolves a :class:`~service.crossover_slice.CrossoverQuery`
(validation, cached configuration index of the slice's frame) and asks
``analysis.crossovers.rank_one_on_index`` for the rank-1 option's segments and switches
per series. :func:`slice_choices` lists the values each filter can take in a slice (the
page's dropdowns; the same lists a 422 names). Answers are computed on every question
(a few array passes over the cached index), not cached, so they never crowd the other
cached results out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.crossovers import CrossoverMap, rank_one_on_index
from service.crossover_slice import (
    FILTER_COLUMNS,
    CrossoverQuery,
    column_value,
    query_filters,
    resolve,
    stored_values,
)
from service.errors import InvalidQuery
from service.frames import DashData
from service.scope import equals, provenance

__all__ = ["CrossoverAnswer", "CrossoverQuery", "crossover_answer", "slice_choices"]


@dataclass(frozen=True)
class CrossoverAnswer:
    """The explorer's answer: the analysis result, the slice it was asked on (canonical
    option and axis, the filters given), a file-name stem naming that slice, and where
    the numbers came from (runs, TensorRT-LLM versions, candidates, synthetic)."""

    result: CrossoverMap
    option: str
    axis: str
    filters: dict[str, Any]
    name: str
    provenance: dict[str, Any]


def slice_name(option: str, axis: str, filters: dict[str, Any]) -> str:
    """``crossovers_<option>_<axis>[_<filter values>]`` with anything but letters, digits,
    dot, dash and underscore replaced by "-" (a safe download name)."""
    parts = [option, axis]
    for param, _ in FILTER_COLUMNS:
        if param in filters:
            value = filters[param]
            parts.append(f"ws{value}" if param == "world_size" else str(value))
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "_".join(["crossovers", *parts]))


def crossover_answer(data: DashData, q: CrossoverQuery) -> CrossoverAnswer:
    """Segments and switches of the rank-1 option for ``q`` (see ``analysis.crossovers``
    for the rules). Unknown option, axis or filter value: InvalidQuery naming the
    parameter and the allowed (stored) values. A valid slice without comparable
    configurations answers empty tables."""

    def compute() -> CrossoverAnswer:
        r = resolve(data, q)
        result = rank_one_on_index(r.index, r.mask, r.option, r.axis)
        return CrossoverAnswer(
            result=result,
            option=r.option,
            axis=r.axis,
            filters=r.filters,
            name=slice_name(r.option, r.axis, r.filters),
            provenance=provenance(r.rows),
        )

    return data.cached(("crossovers", q.model_dump_json()), compute, where=q.filters())


def slice_choices(data: DashData, q: CrossoverQuery) -> dict[str, list[Any]]:
    """Per filter parameter the values stored in the slice its preceding filters define
    (model, hardware, quant, world_size, phase, attention, dispatch), given the filters
    of ``q`` that are valid; a filter whose value is not stored ends the narrowing (the
    later lists are those of the slice so far)."""
    filters = query_filters(q)
    out: dict[str, list[Any]] = {}
    cov = data.coverage()
    mask = np.ones(len(cov), dtype=bool)
    kept: dict[str, Any] = {}
    for param, col in FILTER_COLUMNS[:4]:
        out[param] = stored_values(cov, param, col, mask)
        if param in filters and filters[param] in out[param]:
            kept[param] = filters[param]
            mask = mask & equals(cov[col], filters[param])
    probe = CrossoverQuery(**{k: v for k, v in kept.items()})
    try:
        index = resolve(data, probe).index
    except InvalidQuery:  # pragma: no cover - the kept filters are stored values
        return out
    configs = index.configs
    cmask = np.ones(len(configs), dtype=bool)
    for param, col in FILTER_COLUMNS:
        if param in kept:
            cmask = cmask & equals(configs[col], column_value(param, kept[param]))
    for param, col in FILTER_COLUMNS[4:]:
        out[param] = stored_values(configs, param, col, cmask) if len(configs) else []
        if param in filters and filters[param] in out[param]:
            cmask = cmask & equals(configs[col], column_value(param, filters[param]))
    return out
