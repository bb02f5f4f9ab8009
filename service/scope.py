"""The slice of the stored candidates a question is asked on, and where its rows come from.

:class:`Scope` is the set of equality filters the analysis endpoints accept (the API
reads it from the query string; field limits live here, once). :func:`scoped_frame`
answers it from the cached frames of :class:`~service.frames.DashData`: one cell frame
when model, hardware and quant are all given (the frame the pages read), else the
bounded frame of the runs the run-level filters select (read with them in SQL; too
many candidates is a 422 naming the filter to add); then the remaining filters as
masks. Only successful candidates
with a score are kept -- what every analysis ranks.

Routing pattern (``dispatch``): a label filters to that pattern (matched case-
insensitively; a label the slice does not hold is :class:`~service.errors.InvalidQuery`
listing the ones it does); ``"all"`` keeps every pattern. :func:`scoped_frame` leaves an
unset ``dispatch`` unfiltered; :func:`routed_frame` -- what every Pareto, best,
recommendation, export and agreement answer reads -- applies the default instead:
``balanced`` where the slice has it (the guide ranks under perfect routing), else the
slice's most-measured pattern (``analysis.identity.default_dispatch``), and says which
in a :class:`Routing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from analysis import columns as C
from analysis.identity import default_dispatch, known_dispatch
from service.errors import InvalidQuery
from service.frames import CELL_COLUMNS, Cell, DashData
from service.shared_answers import shareable

ALL_DISPATCH = "all"
DEFAULT_DISPATCH_RULE = (
    "balanced routing where measured (the guide ranks under perfect routing), "
    "else the most-measured pattern"
)

Phase = Literal["decode", "prefill"]
Attention = Literal["dp", "tp"]


# At most this many run ids in one scope (a page's selection is a handful; the bound
# keeps an anonymous query string from sending a million-item IN list to the database),
# each within the store's integer range.
MAX_RUN_IDS = 1000
MAX_RUN_ID = 2**62


class Scope(BaseModel):
    """Which stored candidates an analysis looks at (all given filters must match).
    ``hardware`` is compared upper-cased; ``phase`` decode = CUDA graph on;
    ``attention`` dp = attention data parallel."""

    # an endpoint's other query parameters share the query string
    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(None, max_length=100, description="bench_moe model name")
    hardware: str | None = Field(None, max_length=32)
    quant: str | None = Field(None, max_length=64)
    world_size: int | None = Field(None, ge=1, le=100000)
    phase: Phase | None = Field(None, description="decode = CUDA graph on, prefill = off")
    attention: Attention | None = None
    dispatch: str | None = Field(
        None,
        max_length=64,
        description="routing pattern (bench_moe dispatch label, e.g. balanced); 'all' = "
        "every pattern, each ranked on its own; unset = balanced where present",
    )
    run_id: list[Annotated[int, Field(ge=1, le=MAX_RUN_ID)]] | None = Field(
        None, max_length=MAX_RUN_IDS, description="restrict to these runs"
    )
    include_synthetic: bool = Field(True, description="include generated demo data")

    def filters(self) -> dict[str, Any]:
        """The scope as ``{column: value}`` equality filters (the store's vocabulary)."""
        out: dict[str, Any] = {}
        for name, col in (
            ("model", C.MODEL),
            ("hardware", C.HARDWARE),
            ("quant", C.QUANT),
            ("world_size", C.WORLD_SIZE),
        ):
            value = getattr(self, name)
            if value is not None:
                out[col] = value.upper() if name == "hardware" else value
        if self.phase is not None:
            out[C.CUDA_GRAPH] = self.phase == "decode"
        if self.attention is not None:
            out[C.ATTN] = "D" if self.attention == "dp" else "T"
        if not self.include_synthetic:
            out[C.SYNTHETIC] = False
        return out

    def cell(self) -> Cell | None:
        """The one cell this scope lies in, when model, hardware and quant are given."""
        if self.model is None or self.hardware is None or self.quant is None:
            return None
        return Cell(self.model, self.hardware.upper(), self.quant)

    def key(self) -> tuple[Any, ...]:
        """A hashable identity for caching answers per scope."""
        runs = None if self.run_id is None else tuple(sorted(set(self.run_id)))
        return (*sorted(self.filters().items()), ("run_id", runs), ("dispatch", self.dispatch))


@shareable
@dataclass(frozen=True)
class Routing:
    """Which routing pattern(s) an answer covers. ``requested``: what was asked (None =
    the default); ``used``: the pattern(s) in the answer (one unless "all" was asked;
    empty when the slice holds no labelled row); ``known``: every pattern of the slice."""

    requested: str | None
    used: tuple[str, ...]
    known: tuple[str, ...]

    @property
    def is_default(self) -> bool:
        return self.requested is None

    @property
    def label(self) -> str:
        """The answer's pattern in words, e.g. "balanced (default)"."""
        used = ", ".join(self.used) or "not recorded"
        return f"{used} (default)" if self.is_default else used

    def as_dict(self) -> dict[str, Any]:
        """The API's ``dispatch`` block."""
        return {
            "requested": self.requested,
            "used": list(self.used),
            "default": self.is_default,
            "known": list(self.known),
            "rule": DEFAULT_DISPATCH_RULE,
        }


def resolve_dispatch(labels: pd.Series, requested: str | None) -> Routing:
    """The :class:`Routing` of a slice whose routing labels are ``labels`` (see module
    docstring). Raises :class:`InvalidQuery` (field ``dispatch``) for a label the slice
    does not hold, listing those it does; an empty slice accepts any label."""
    known = tuple(known_dispatch(labels))
    if requested is None:
        pick = default_dispatch(labels)
        return Routing(None, () if pick is None else (pick,), known)
    if requested.lower() == ALL_DISPATCH:
        return Routing(ALL_DISPATCH, known, known)
    exact = [k for k in known if k == requested] or [
        k for k in known if k.lower() == requested.lower()
    ]
    if exact:
        return Routing(requested, (exact[0],), known)
    if not known and labels.empty:
        return Routing(requested, (requested,), known)
    raise InvalidQuery(
        "dispatch",
        f"unknown routing pattern {requested!r}; this slice has: "
        f"{', '.join(known) or 'no labelled rows'} (or '{ALL_DISPATCH}')",
        "unknown",
    )


def equals(series: pd.Series, value: Any) -> np.ndarray:
    """``series == value`` as a bool array, with missing values never matching (SQL ``IN``
    semantics); bools compare as nullable booleans and ints as float64."""
    out: np.ndarray
    if isinstance(value, bool):
        out = (series.astype("boolean") == value).to_numpy(dtype=bool, na_value=False)
    elif isinstance(value, int):
        out = series.to_numpy(dtype=np.float64, na_value=np.nan) == value
    else:
        out = (series == value).to_numpy(dtype=bool, na_value=False)
    return out


def scoped_frame(data: DashData, scope: Scope) -> pd.DataFrame:
    """Successful candidates (status success, score_ms present) matching ``scope``, with
    the derived columns, ordered by (run_id, candidate_index), index reset. An empty
    frame (with the cell frames' columns) when nothing matches."""
    frame, mask = _scope_mask(data, scope)
    return _empty() if frame is None else frame.loc[mask].reset_index(drop=True)


def _empty() -> pd.DataFrame:
    return pd.DataFrame(columns=list(dict.fromkeys((*C.RUN_COLUMNS, *CELL_COLUMNS))))


def _scope_mask(data: DashData, scope: Scope) -> tuple[pd.DataFrame | None, np.ndarray]:
    """The frame :func:`scoped_frame` selects from and the mask of its rows (None: no
    rows at all)."""
    cell = scope.cell()
    if cell is not None:
        # an unknown cell would cache an empty frame and push a real one out of the LRU
        frame = data.cell_frame(cell) if cell in data.cells() else None
    else:
        frame = data.bounded_frame(scope.filters(), scope.run_id)
    if frame is None or frame.empty:
        return None, np.zeros(0, dtype=bool)
    # (to_numpy may hand out read-only views: combine into new arrays)
    mask = (frame[C.STATUS] == "success").to_numpy(dtype=bool, na_value=False)
    mask = mask & frame[C.SCORE_MS].notna().to_numpy()
    filters = scope.filters()
    if cell is not None:
        for col in (C.MODEL, C.HARDWARE, C.QUANT):
            filters.pop(col)
    for col, value in filters.items():
        mask = mask & equals(frame[col], value)
    if scope.run_id is not None:
        mask = mask & frame[C.RUN_ID].isin(scope.run_id).to_numpy(dtype=bool, na_value=False)
    if scope.dispatch is not None and scope.dispatch.lower() != ALL_DISPATCH:
        routing = resolve_dispatch(frame[C.DISPATCH][mask], scope.dispatch)
        mask = mask & equals(frame[C.DISPATCH], routing.used[0])
    return frame, mask


def route(df: pd.DataFrame, requested: str | None) -> tuple[pd.DataFrame, Routing]:
    """``df`` kept to the routing pattern(s) of :func:`resolve_dispatch` (every row when
    "all" is asked or no row carries a label), with that :class:`Routing`."""
    labels = df[C.DISPATCH] if C.DISPATCH in df else pd.Series(dtype=object)
    routing = resolve_dispatch(labels, requested)
    if len(routing.used) != 1 or C.DISPATCH not in df or df.empty:
        return df, routing
    keep = equals(df[C.DISPATCH], routing.used[0])
    return (df if keep.all() else df.loc[keep].reset_index(drop=True)), routing


def routed_rows(data: DashData, scope: Scope) -> tuple[pd.DataFrame, np.ndarray, Routing]:
    """:func:`routed_frame` without its copy: (the frame it selects from -- a cached
    cell frame: read only --, the boolean mask of its rows, the routing pattern).
    ``frame.loc[mask]`` is :func:`routed_frame`'s frame; an answer that takes
    ``rows=`` (``analysis.best``, ``analysis.identity.configuration_frame``) reads the
    cell in place (a cell of a year is ~1M rows, its routed rows ~80 MB)."""
    frame, mask = _scope_mask(data, scope)
    if frame is None:
        empty, routing = route(_empty(), scope.dispatch)
        return empty, np.zeros(len(empty), dtype=bool), routing
    labels = frame[C.DISPATCH][mask] if C.DISPATCH in frame else pd.Series(dtype=object)
    routing = resolve_dispatch(labels, scope.dispatch)
    if len(routing.used) == 1 and C.DISPATCH in frame and mask.any():
        mask = mask & equals(frame[C.DISPATCH], routing.used[0])
    return frame, mask, routing


def routed_frame(data: DashData, scope: Scope) -> tuple[pd.DataFrame, Routing]:
    """:func:`scoped_frame` of ``scope`` with its routing pattern applied -- the
    default when ``scope.dispatch`` is unset (module docstring) -- and which it is. The
    same as ``route(scoped_frame(data, scope), scope.dispatch)``, with one copy of the
    rows instead of two; :func:`routed_rows` makes none."""
    frame, mask, routing = routed_rows(data, scope)
    return (frame if frame.empty else frame.loc[mask].reset_index(drop=True)), routing


def provenance(df: pd.DataFrame, rows: np.ndarray | None = None) -> dict[str, Any]:
    """Where an answer came from: sorted run ids and TensorRT-LLM versions, the number of
    candidates and whether any of them is generated demo data. ``rows`` (a boolean mask
    over ``df``): of those rows only, as ``provenance(df[rows])``."""

    def col(name: str) -> pd.Series:
        return df[name] if rows is None else df[name][rows]

    n = len(df) if rows is None else int(np.count_nonzero(rows))
    if n == 0:
        return {"run_ids": [], "trtllm_versions": [], "n_candidates": 0, "synthetic": False}
    return {
        "run_ids": sorted(int(x) for x in col(C.RUN_ID).unique()),
        "trtllm_versions": sorted(str(x) for x in col(C.TRTLLM_VERSION).dropna().unique()),
        "n_candidates": n,
        "synthetic": bool(col(C.SYNTHETIC).fillna(False).astype(bool).any()),
    }
