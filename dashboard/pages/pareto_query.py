"""The Pareto page's state: :class:`ParetoQuery`, read from and written to the URL.

URL: ``/pareto?model=&hardware=&quant=&world_size=&phase=&attention=dp|tp&dispatch=
&mode=&backend=&comm=&x=&y=&logx=1&logy=1&repeats=median|latest&point=<run_id>:
<candidate_index>`` (``mode``, ``backend``, ``comm`` may repeat; empty means all). The
scope's names are the API's (``dashboard.api_query``: the query string answers
``/api/v1/pareto`` as it is); older permalinks' ``ws`` and ``attn=D|T`` still read.

``dispatch`` is **one** routing pattern (a frontier never mixes two); empty means the
cell's default, balanced where measured (``service.pareto.cell_routing``). ``repeats``:
repeat runs of a configuration drawn as their median, or the latest run only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis import columns as C
from analysis.frontier import AXES, MULTI_COLUMNS, PHASES, FrontierAxes
from analysis.identity import REPEATS
from dashboard import components as ui
from dashboard.api_query import attention_letter, attention_param, scope_values
from service.frames import Cell
from service.pareto import ParetoFilter

MULTI = tuple(MULTI_COLUMNS)  # the filters that take several values


@dataclass(frozen=True)
class ParetoQuery:
    """Everything the Pareto view depends on (the URL holds exactly this)."""

    cell: Cell | None
    ws: int | None = None  # None = all world sizes
    phase: str = "decode"
    attn: str = "all"  # "D", "T" or "all"
    dispatch: tuple[str, ...] = ()
    mode: tuple[str, ...] = ()
    backend: tuple[str, ...] = ()
    comm: tuple[str, ...] = ()
    x: str = C.SCORE_MS
    y: str = C.TOKENS_PER_S_PER_GPU
    logx: bool = True
    logy: bool = True
    point: str | None = None
    repeats: str = "median"

    @property
    def filter(self) -> ParetoFilter:
        """The rows the query selects (``analysis.frontier`` terms: one routing pattern,
        none = the default) and how repeats are combined."""
        return ParetoFilter(
            ws=self.ws,
            phase=self.phase,
            attn=self.attn,
            dispatch=self.dispatch[:1],
            mode=self.mode,
            backend=self.backend,
            comm=self.comm,
            repeats="latest" if self.repeats == "latest" else "median",
        )

    @property
    def axes(self) -> FrontierAxes:
        return FrontierAxes(x=self.x, y=self.y, logx=self.logx, logy=self.logy)

    def search(self) -> str:
        c = self.cell
        return ui.search_string(
            {
                "model": c and c.model,
                "hardware": c and c.hardware,
                "quant": c and c.quant,
                "world_size": self.ws,
                "phase": self.phase,
                "attention": attention_param(self.attn),
                "dispatch": list(self.dispatch),
                "mode": list(self.mode),
                "backend": list(self.backend),
                "comm": list(self.comm),
                "x": self.x,
                "y": self.y,
                "logx": "1" if self.logx else "0",
                "logy": "1" if self.logy else "0",
                "repeats": None if self.repeats == "median" else self.repeats,
                "point": self.point,
            }
        )


def parse_query(
    query: dict[str, Any], cells: list[Cell], default: Cell | None = None
) -> ParetoQuery:
    """Query string values -> ParetoQuery; unknown or invalid values fall back. A cell
    the URL does not name (or that is not stored) is ``default`` when it is one of
    ``cells`` (the pages pass ``service.defaults.default_cell``), else the first."""
    scope = scope_values(query)
    want = Cell(scope.get("model", ""), scope.get("hardware", ""), scope.get("quant", ""))
    fallback = default if default in cells else (cells[0] if cells else None)
    cell = want if want in cells else fallback

    def multi(key: str) -> tuple[str, ...]:
        v = query.get(key, [])
        return tuple(str(x) for x in (v if isinstance(v, list) else [v]) if x)

    x = ui.first(query, "x") or C.SCORE_MS
    y = ui.first(query, "y") or C.TOKENS_PER_S_PER_GPU
    # "all" is the page's own word (the API leaves the phase unset for it)
    phase = scope.get("phase") or (ui.first(query, "phase") == "all" and "all") or "decode"
    attn = attention_letter(scope.get("attention"))
    repeats = ui.first(query, "repeats") or "median"
    return ParetoQuery(
        cell=cell,
        ws=scope.get("world_size"),
        phase=phase if phase in PHASES else "decode",
        attn=attn,
        dispatch=multi("dispatch")[:1],
        mode=multi("mode"),
        backend=multi("backend"),
        comm=multi("comm"),
        x=x if x in AXES else C.SCORE_MS,
        y=y if y in AXES else C.TOKENS_PER_S_PER_GPU,
        logx=ui.first(query, "logx", "1") != "0",
        logy=ui.first(query, "logy", "1") != "0",
        point=ui.first(query, "point"),
        repeats=repeats if repeats in REPEATS else "median",
    )


def _one(value: Any) -> tuple[str, ...]:
    """A single-choice control's value as a 0/1-tuple (a list from a multi-select or a
    reset, a string, or nothing)."""
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    return (str(value),) if value not in (None, "") else ()


def query_from_controls(
    cell_key: str | None,
    ws: Any,
    phase: str | None,
    attn: str | None,
    dispatch: Any,
    mode: list[str] | None,
    backend: list[str] | None,
    comm: list[str] | None,
    x: str | None,
    y: str | None,
    log: list[str] | None,
    repeats: str | None = None,
    point: str | None = None,
) -> ParetoQuery:
    """The controls' values (in :data:`CONTROLS` order, then the clicked point) ->
    ParetoQuery. ``dispatch`` is one pattern (a string; a list's first item; empty =
    the default)."""
    return ParetoQuery(
        cell=Cell.from_key(cell_key),
        ws=None if ws in (None, "all") else ui.as_int(ws),
        phase=phase or "decode",
        attn=attn or "all",
        dispatch=_one(dispatch),
        mode=tuple(mode or ()),
        backend=tuple(backend or ()),
        comm=tuple(comm or ()),
        x=x or C.SCORE_MS,
        y=y or C.TOKENS_PER_S_PER_GPU,
        logx="x" in (log or []),
        logy="y" in (log or []),
        point=point,
        repeats="latest" if repeats == "latest" else "median",
    )


CONTROLS = (
    "cell",
    "ws",
    "phase",
    "attn",
    "dispatch",
    "mode",
    "backend",
    "comm",
    "x",
    "y",
    "log",
    "repeats",
)


def relax_hints(q: ParetoQuery) -> list[str]:
    """What to loosen when the query selects no plottable candidate."""
    hints = []
    if q.ws is not None:
        hints.append("choose “all” world sizes")
    if q.phase != "all":
        hints.append(f"set phase to “all” (now {q.phase})")
    if q.attn != "all":
        hints.append("set attention to “all”")
    for key in MULTI:
        if getattr(q, key):
            what = "routing pattern" if key == "dispatch" else f"{key} filter"
            hints.append(f"clear the {what} ({', '.join(getattr(q, key))})")
    return hints or ["this cell has no successful candidate with finite values on both axes"]
