"""An AG Grid's sort and filter, kept in the page's URL and restored from it.

URL form: ``sort=<field>:<asc|desc>,<field>:<asc|desc>`` (in priority order) and
``filter=<the grid's filterModel as JSON>``. Only fields the grid shows are kept, a
filter entry must be an object and the filter text is bounded, so a hand-edited URL
cannot inject anything but a sort or filter of the grid's own columns.

The grid reports its state through dash-ag-grid's ``columnState`` (on a sort change:
every column with ``sort`` and ``sortIndex``) and ``filterModel`` (on a filter change)
props; :func:`from_grid` turns those into a :class:`GridState`, which the page keeps in
a ``dcc.Store`` and writes to the URL. A new grid gets it back through its column
definitions (:func:`apply_sort`) and its ``filterModel`` prop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dash
from dash import Input, Output, State

MAX_FILTER_CHARS = 4000
_DIRECTIONS = ("asc", "desc")


@dataclass(frozen=True)
class GridState:
    """Sort ((field, direction) in priority order) and filter model of one grid."""

    sort: tuple[tuple[str, str], ...] = ()
    filter: Mapping[str, Any] = field(default_factory=dict)

    def params(self) -> dict[str, str | None]:
        """The URL parameters (``sort``, ``filter``; None when empty)."""
        return {
            "sort": ",".join(f"{f}:{d}" for f, d in self.sort) or None,
            "filter": json.dumps(dict(self.filter), separators=(",", ":"), sort_keys=True)
            if self.filter
            else None,
        }

    def to_store(self) -> dict[str, Any]:
        """JSON for a ``dcc.Store``."""
        return {"sort": [list(s) for s in self.sort], "filter": dict(self.filter)}


def _clean_sort(pairs: Iterable[Any], fields: set[str]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            continue
        name, direction = str(pair[0]), str(pair[1])
        if name in fields and direction in _DIRECTIONS and name not in (f for f, _ in out):
            out.append((name, direction))
    return tuple(out)


def _clean_filter(model: Any, fields: set[str]) -> dict[str, Any]:
    if not isinstance(model, dict):
        return {}
    kept = {str(k): v for k, v in model.items() if str(k) in fields and isinstance(v, dict)}
    if len(json.dumps(kept, separators=(",", ":"))) > MAX_FILTER_CHARS:
        return {}
    return kept


def parse(query: Mapping[str, Any], fields: Iterable[str]) -> GridState:
    """The state in URL parameters ``sort`` / ``filter`` (strings, or lists of them as
    ``parse_qs`` gives), restricted to ``fields``; anything malformed is dropped."""
    allowed = set(fields)

    def one(key: str) -> str:
        value = query.get(key)
        if isinstance(value, list):
            value = value[0] if value else None
        return str(value) if value is not None else ""

    pairs = [part.rsplit(":", 1) for part in one("sort").split(",") if ":" in part]
    text = one("filter")
    model: Any = {}
    if text and len(text) <= MAX_FILTER_CHARS:
        try:
            model = json.loads(text)
        except ValueError:
            model = {}
    return GridState(_clean_sort(pairs, allowed), _clean_filter(model, allowed))


def from_store(data: Any, fields: Iterable[str]) -> GridState:
    """The state a ``dcc.Store`` holds (:meth:`GridState.to_store`), restricted to
    ``fields``; None or malformed: the empty state."""
    if not isinstance(data, dict):
        return GridState()
    allowed = set(fields)
    sort = data.get("sort")
    return GridState(
        _clean_sort(sort if isinstance(sort, list) else [], allowed),
        _clean_filter(data.get("filter"), allowed),
    )


def from_grid(
    column_state: Any, filter_model: Any, fields: Iterable[str], kept: Any = None
) -> GridState:
    """The state a grid reports: ``columnState`` (a list of ``{colId, sort, sortIndex}``;
    columns without a sort are unsorted) and ``filterModel``.

    A grid that has just mounted may report one of the two before the other (its empty
    ``filterModel`` first, ``columnState`` still None). The part not reported yet is
    taken from ``kept`` (the state the page already holds, :meth:`GridState.to_store`),
    so the sort from the URL is not dropped for a moment and written back afterwards."""
    allowed = set(fields)
    held = from_store(kept, allowed)
    if not isinstance(column_state, list):
        sort = held.sort
    else:
        sorted_cols = [
            c for c in column_state if isinstance(c, dict) and c.get("sort") in _DIRECTIONS
        ]
        sorted_cols.sort(key=lambda c: i if isinstance(i := c.get("sortIndex"), int) else 0)
        pairs = [(str(c.get("colId")), str(c.get("sort"))) for c in sorted_cols]
        sort = _clean_sort(pairs, allowed)
    model = held.filter if filter_model is None else _clean_filter(filter_model, allowed)
    return GridState(sort, model)


def leaf_fields(column_defs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``field`` of every column in ``column_defs`` (column groups included)."""
    out: list[str] = []
    for d in column_defs:
        if "children" in d:
            out += leaf_fields(d["children"])
        elif "field" in d:
            out.append(str(d["field"]))
    return out


def apply_sort(column_defs: list[dict[str, Any]], state: GridState) -> list[dict[str, Any]]:
    """``column_defs`` (groups included) with ``sort``/``sortIndex`` set from ``state``:
    the state's columns sorted in its order, every other column unsorted."""
    order = {name: (i, direction) for i, (name, direction) in enumerate(state.sort)}
    out: list[dict[str, Any]] = []
    for d in column_defs:
        d = dict(d)
        if "children" in d:
            d["children"] = apply_sort(d["children"], state)
        elif state.sort:
            hit = order.get(str(d.get("field")))
            d["sort"] = hit[1] if hit else None
            d["sortIndex"] = hit[0] if hit else None
        out.append(d)
    return out


# (grid's columnState, filterModel, the page's control values, the held state) ->
# (state to hold, URL search)
GridChanged = Callable[[Any, Any, list[Any], Any], tuple[dict[str, Any], str]]


def register_grid_state(
    app: dash.Dash, prefix: str, control_ids: Sequence[str], changed: GridChanged
) -> None:
    """Keep the grid ``<prefix>-grid``'s sort and filter in the page: when the grid
    reports them, ``changed`` gets them with the values of ``control_ids`` and the state
    ``<prefix>-gridstate`` holds, and its answer goes to that store and to the URL of
    ``<prefix>-url``."""

    @app.callback(
        Output(f"{prefix}-gridstate", "data"),
        Output(f"{prefix}-url", "search", allow_duplicate=True),
        Input(f"{prefix}-grid", "columnState"),
        Input(f"{prefix}-grid", "filterModel"),
        *[State(cid, "value") for cid in control_ids],
        State(f"{prefix}-gridstate", "data"),
        prevent_initial_call=True,
    )
    def _grid_changed(column_state: Any, filter_model: Any, *values: Any) -> tuple[Any, str]:
        *controls, kept = values  # the controls, then the held state
        return changed(column_state, filter_model, controls, kept)
