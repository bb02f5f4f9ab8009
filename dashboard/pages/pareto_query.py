"""The Pareto page's state: :class:`ParetoQuery`, read from and written to the URL.

URL: ``/pareto?model=&hardware=&quant=&ws=&phase=&attn=&dispatch=&mode=&backend=&comm=
&x=&y=&logx=1&logy=1&point=<run_id>:<candidate_index>`` (``dispatch``, ``mode``,
``backend``, ``comm`` may repeat; empty means all).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis import columns as C
from analysis.frontier import AXES, MULTI_COLUMNS, PHASES, FrontierAxes, FrontierFilter
from dashboard import components as ui
from service.frames import Cell

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

    @property
    def filter(self) -> FrontierFilter:
        """The rows the query selects (``analysis.frontier`` terms)."""
        return FrontierFilter(
            ws=self.ws,
            phase=self.phase,
            attn=self.attn,
            dispatch=self.dispatch,
            mode=self.mode,
            backend=self.backend,
            comm=self.comm,
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
                "ws": self.ws,
                "phase": self.phase,
                "attn": None if self.attn == "all" else self.attn,
                "dispatch": list(self.dispatch),
                "mode": list(self.mode),
                "backend": list(self.backend),
                "comm": list(self.comm),
                "x": self.x,
                "y": self.y,
                "logx": "1" if self.logx else "0",
                "logy": "1" if self.logy else "0",
                "point": self.point,
            }
        )


def parse_query(query: dict[str, Any], cells: list[Cell]) -> ParetoQuery:
    """Query string values -> ParetoQuery; unknown or invalid values fall back."""
    want = Cell(
        ui.first(query, "model") or "",
        ui.first(query, "hardware") or "",
        ui.first(query, "quant") or "",
    )
    cell = want if want in cells else (cells[0] if cells else None)

    def multi(key: str) -> tuple[str, ...]:
        v = query.get(key, [])
        return tuple(str(x) for x in (v if isinstance(v, list) else [v]) if x)

    x = ui.first(query, "x") or C.SCORE_MS
    y = ui.first(query, "y") or C.TOKENS_PER_S_PER_GPU
    phase = ui.first(query, "phase") or "decode"
    attn = ui.first(query, "attn") or "all"
    return ParetoQuery(
        cell=cell,
        ws=ui.as_int(ui.first(query, "ws")),
        phase=phase if phase in PHASES else "decode",
        attn=attn if attn in ("D", "T") else "all",
        dispatch=multi("dispatch"),
        mode=multi("mode"),
        backend=multi("backend"),
        comm=multi("comm"),
        x=x if x in AXES else C.SCORE_MS,
        y=y if y in AXES else C.TOKENS_PER_S_PER_GPU,
        logx=ui.first(query, "logx", "1") != "0",
        logy=ui.first(query, "logy", "1") != "0",
        point=ui.first(query, "point"),
    )


def query_from_controls(
    cell_key: str | None,
    ws: Any,
    phase: str | None,
    attn: str | None,
    dispatch: list[str] | None,
    mode: list[str] | None,
    backend: list[str] | None,
    comm: list[str] | None,
    x: str | None,
    y: str | None,
    log: list[str] | None,
    point: str | None = None,
) -> ParetoQuery:
    """The controls' values (in :data:`CONTROLS` order) -> ParetoQuery."""
    return ParetoQuery(
        cell=Cell.from_key(cell_key),
        ws=None if ws in (None, "all") else ui.as_int(ws),
        phase=phase or "decode",
        attn=attn or "all",
        dispatch=tuple(dispatch or ()),
        mode=tuple(mode or ()),
        backend=tuple(backend or ()),
        comm=tuple(comm or ()),
        x=x or C.SCORE_MS,
        y=y or C.TOKENS_PER_S_PER_GPU,
        logx="x" in (log or []),
        logy="y" in (log or []),
        point=point,
    )


CONTROLS = ("cell", "ws", "phase", "attn", "dispatch", "mode", "backend", "comm", "x", "y", "log")


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
            hints.append(f"clear the {key} filter ({', '.join(getattr(q, key))})")
    return hints or ["this cell has no successful candidate with finite values on both axes"]
