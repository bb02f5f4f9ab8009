"""The explorer's question and its slice: parameters, validation, the encoded configurations.

:class:`CrossoverQuery` is what ``GET /api/v1/crossovers`` and the /crossovers page both
ask: a :class:`~service.scope.Scope` (model, hardware, quant, world_size, phase,
attention, run_id, include_synthetic) plus ``dispatch``, ``cuda_graph`` (the phase as a
flag), the ``option`` dimension and the ``axis``. :func:`resolve` checks it and finds the
configurations it covers:

* option and axis must be known names (``backend+comm`` may also be written
  ``backend comm`` -- what ``+`` becomes in a query string -- or ``backend_comm``);
* each filter value must be stored in the slice the filters before it define (order:
  model, hardware, quant, world_size, phase, attention, dispatch, run_id); otherwise an
  :class:`~service.errors.InvalidQuery` names the parameter and the stored values;
* the configurations come from one cell frame when model, hardware and quant are given,
  else from the bounded frame of the runs the run-level filters select
  (``DashData.bounded_frame``), as ``service.scope`` does; each frame's
  :class:`~analysis.crossover_index.ConfigIndex` (repeats collapsed, codes built) is
  cached beside it. Run-level filters (run_id, include_synthetic=false) change which
  repeats count, so they collapse their own rows instead (not cached).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from analysis import columns as C
from analysis.crossover_index import ConfigIndex, build_index
from analysis.crossovers import AXES, OPTION_DIMS, SERIES_COLS
from analysis.frontier import RANKABLE
from analysis.identity import configuration_frame
from analysis.noise import estimate_noise
from service.errors import InvalidQuery
from service.frames import DashData
from service.scope import Scope, equals

OPTION_ALIASES: dict[str, str] = {
    "backend comm": "backend+comm",
    "backend_comm": "backend+comm",
    "parallel mode": "parallel_mode",
}
# filter parameter -> candidate column, in validation order
FILTER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("model", C.MODEL),
    ("hardware", C.HARDWARE),
    ("quant", C.QUANT),
    ("world_size", C.WORLD_SIZE),
    ("phase", C.CUDA_GRAPH),
    ("attention", C.ATTN),
    ("dispatch", C.DISPATCH),
)
_MAX_LISTED = 50  # stored values named in an error message


class CrossoverQuery(Scope):
    """A slice (the :class:`Scope` filters plus ``dispatch`` and ``cuda_graph``), the
    option dimension and the axis. Unlike other answers, an unset dispatch does not
    default to balanced: every stored pattern is a series of its own."""

    dispatch: str | None = Field(
        None,
        max_length=64,
        description="routing/dispatch pattern (e.g. balanced); unset or 'all' = one series "
        "per pattern",
    )
    cuda_graph: bool | None = Field(None, description="the phase as a flag: true = decode")
    option: str = Field(
        "backend", max_length=32, description="backend | comm | backend+comm | parallel_mode"
    )
    axis: str = Field(
        C.NUM_TOKENS,
        max_length=40,
        description="num_tokens | activated_tokens_per_rank | dispatch_kb",
    )


@dataclass(frozen=True)
class Resolved:
    """A checked question: canonical option and axis, the filters as given (phase from
    cuda_graph when only that was given), the encoded configurations, the mask that
    selects the slice among them, and the slice's candidate rows for provenance."""

    option: str
    axis: str
    filters: dict[str, Any]
    index: ConfigIndex
    mask: np.ndarray
    rows: pd.DataFrame


def _listing(values: list[Any]) -> str:
    shown = ", ".join(str(v) for v in values[:_MAX_LISTED])
    more = f" … ({len(values) - _MAX_LISTED} more)" if len(values) > _MAX_LISTED else ""
    return f"[{shown}{more}]" if values else "none"


def canonical_option(option: str) -> str:
    """The option dimension's canonical name; InvalidQuery naming the allowed ones."""
    name = OPTION_ALIASES.get(option.strip().lower(), option.strip().lower())
    if name not in OPTION_DIMS:
        raise InvalidQuery(
            "option",
            f"unknown option dimension {option!r}; allowed: {', '.join(OPTION_DIMS)}",
            "invalid_option",
        )
    return name


def canonical_axis(axis: str) -> str:
    """The axis column; InvalidQuery naming the allowed ones."""
    name = axis.strip().lower()
    if name not in AXES:
        raise InvalidQuery(
            "axis", f"unknown axis {axis!r}; allowed: {', '.join(AXES)}", "invalid_axis"
        )
    return name


def query_filters(q: CrossoverQuery) -> dict[str, Any]:
    """The slice as {parameter: value} (given values only; hardware upper-cased, phase
    from cuda_graph when only that flag was given). A phase and a cuda_graph that
    disagree are an InvalidQuery."""
    phase: str | None = q.phase
    if q.cuda_graph is not None:
        implied = "decode" if q.cuda_graph else "prefill"
        if phase is not None and phase != implied:
            raise InvalidQuery(
                "cuda_graph",
                f"cuda_graph={str(q.cuda_graph).lower()} means phase={implied}, "
                f"but phase={phase} was given",
                "conflict",
            )
        phase = implied
    values = {
        "model": q.model,
        "hardware": q.hardware.upper() if q.hardware else None,
        "quant": q.quant,
        "world_size": q.world_size,
        "phase": phase,
        "attention": q.attention,
        # "all" (the Scope's spelling for every pattern) is no filter: a series each
        "dispatch": None if q.dispatch in (None, "all") else q.dispatch,
    }
    return {k: v for k, v in values.items() if v is not None}


def column_value(param: str, value: Any) -> Any:
    """A filter parameter's value in its column's vocabulary."""
    if param == "phase":
        return value == "decode"
    if param == "attention":
        return "D" if value == "dp" else "T"
    return value


def _param_value(param: str, value: Any) -> Any:
    """A stored column value in the parameter's vocabulary (the inverse of the above)."""
    if param == "phase":
        return "decode" if bool(value) else "prefill"
    if param == "attention":
        return {"D": "dp", "T": "tp"}.get(str(value), str(value))
    if param == "world_size":
        return int(value)
    return str(value)


def stored_values(frame: pd.DataFrame, param: str, col: str, mask: np.ndarray) -> list[Any]:
    """The distinct values of ``col`` on the rows of ``mask``, in the parameter's
    vocabulary, sorted."""
    s = frame[col]
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()[mask]
        present = np.unique(codes[codes >= 0])
        raw = list(s.cat.categories[present])
    else:
        raw = list(pd.unique(s[mask].dropna()))
    return sorted({_param_value(param, v) for v in raw}, key=lambda v: (str(type(v)), v))


def _check_coverage(data: DashData, filters: dict[str, Any]) -> None:
    """model, hardware, quant and world_size against the stored coverage (cheap: no
    candidate frame is loaded to say a model is unknown)."""
    cov = data.coverage()
    mask = np.ones(len(cov), dtype=bool)
    for param, col in FILTER_COLUMNS[:4]:
        if param not in filters:
            continue
        allowed = stored_values(cov, param, col, mask)
        if filters[param] not in allowed:
            raise InvalidQuery(
                param,
                f"{filters[param]!r} is not stored in this slice; stored: {_listing(allowed)}",
                "unknown_value",
            )
        mask = mask & equals(cov[col], filters[param])


def _frame(data: DashData, filters: dict[str, Any]) -> pd.DataFrame:
    if all(k in filters for k in ("model", "hardware", "quant")):
        cell = next(
            (
                c
                for c in data.cells()
                if (c.model, c.hardware, c.quant)
                == (filters["model"], filters["hardware"], filters["quant"])
            ),
            None,
        )
        if cell is not None:
            return data.cell_frame(cell)
    cols = dict(FILTER_COLUMNS[:4])
    return data.bounded_frame({cols[k]: v for k, v in filters.items() if k in cols})


def _index_of(data: DashData, frame: pd.DataFrame) -> ConfigIndex:
    def build() -> tuple[pd.DataFrame, ConfigIndex]:
        # the entry holds the frame so its id is not reused while the entry lives
        noise = estimate_noise(frame)  # run-to-run spreads: the switches' bands
        return frame, build_index(configuration_frame(frame), SERIES_COLS, noise)

    return data.frame_cached("crossover-index", frame, build)[1]


def _row_mask(frame: pd.DataFrame, filters: dict[str, Any], q: CrossoverQuery) -> np.ndarray:
    """Rankable rows of ``frame`` in the slice (run-level filters included)."""
    mask = (
        frame[RANKABLE].to_numpy(dtype=bool)
        if RANKABLE in frame
        else np.ones(len(frame), dtype=bool)
    )
    for param, col in FILTER_COLUMNS:
        if param in filters:
            mask = mask & equals(frame[col], column_value(param, filters[param]))
    if not q.include_synthetic:
        mask = mask & ~frame[C.SYNTHETIC].astype("boolean").fillna(False).to_numpy(dtype=bool)
    if q.run_id is not None:
        mask = mask & frame[C.RUN_ID].isin(q.run_id).to_numpy(dtype=bool, na_value=False)
    return mask


def resolve(data: DashData, q: CrossoverQuery) -> Resolved:
    """Check ``q`` (see the module docstring) and select its configurations."""
    option, axis = canonical_option(q.option), canonical_axis(q.axis)
    filters = query_filters(q)
    _check_coverage(data, filters)
    frame = _frame(data, filters)
    index = _index_of(data, frame)
    configs = index.configs
    mask = np.ones(len(configs), dtype=bool)
    for param, col in FILTER_COLUMNS:
        if param not in filters:
            continue
        value = column_value(param, filters[param])
        if param in ("phase", "attention", "dispatch"):  # the others: coverage above
            allowed = stored_values(configs, param, col, mask)
            if filters[param] not in allowed:
                raise InvalidQuery(
                    param,
                    f"{filters[param]!r} is not stored among the successful candidates of "
                    f"this slice; stored: {_listing(allowed)}",
                    "unknown_value",
                )
        mask = mask & equals(configs[col], value)
    rows_mask = _row_mask(frame, filters, q)
    if q.run_id is not None:
        base = _row_mask(frame, filters, q.model_copy(update={"run_id": None}))
        allowed = sorted(int(r) for r in np.unique(frame[C.RUN_ID].to_numpy()[base]))
        unknown = sorted(set(q.run_id) - set(allowed))
        if unknown:
            raise InvalidQuery(
                "run_id",
                f"runs {unknown} have no successful candidates in this slice; stored: "
                f"{_listing(allowed)}",
                "unknown_value",
            )
    rows = frame.loc[rows_mask, [C.RUN_ID, C.TRTLLM_VERSION, C.SYNTHETIC]]
    if q.run_id is not None or not q.include_synthetic:
        # run-level filters decide which repeats count: collapse this slice's own rows
        rows_in = frame.loc[rows_mask]
        index = build_index(configuration_frame(rows_in), SERIES_COLS, estimate_noise(rows_in))
        mask = np.ones(len(index), dtype=bool)
    return Resolved(option, axis, filters, index, mask, rows)
