"""The /crossovers controls and their URL.

URL: ``/crossovers?model=&hardware=&quant=&world_size=&phase=decode|prefill&attention=
dp|tp&dispatch=&option=backend|comm|backend+comm|parallel_mode&axis=num_tokens|
activated_tokens_per_rank|dispatch_kb&series=<series label>`` -- the API's parameter
names, so a page URL's query is also the ``GET /api/v1/crossovers`` question. ``all``
(or no value) means no filter; model, hardware and quant default to the default cell
(``service.defaults.default_cell``: the cell with the most data) when the URL does not
name them (the page then reads one cell frame, not all data)
and are always written back, so a permalink keeps its slice when new cells arrive.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from analysis import columns as C
from analysis.crossovers import AXES, OPTION_DIMS
from dashboard import components as ui
from service.crossover_slice import OPTION_ALIASES
from service.crossovers import CrossoverQuery
from service.frames import Cell

ALL = "all"
PHASES = ("decode", "prefill")
ATTENTIONS = ("dp", "tp")
OPTION_LABELS: dict[str, str] = {
    "backend": "backend",
    "comm": "communication",
    "backend+comm": "backend + communication",
    "parallel_mode": "parallel mode",
}
AXIS_LABELS: dict[str, str] = {
    C.NUM_TOKENS: "num_tokens (tokens)",
    C.ACTIVATED_TOKENS_PER_RANK: "activated tokens per rank (tokens per rank)",
    C.DISPATCH_KB: "dispatch volume (KiB)",
}
FILTERS: tuple[str, ...] = (
    "model",
    "hardware",
    "quant",
    "world_size",
    "phase",
    "attention",
    "dispatch",
)


@dataclass(frozen=True)
class Form:
    """The page's state (None: all)."""

    model: str | None = None
    hardware: str | None = None
    quant: str | None = None
    world_size: int | None = None
    phase: str | None = None
    attention: str | None = None
    dispatch: str | None = None
    option: str = "backend"
    axis: str = C.NUM_TOKENS
    series: str | None = None

    def filters(self) -> dict[str, Any]:
        """The filters that are set, as the API's query parameters."""
        return {k: getattr(self, k) for k in FILTERS if getattr(self, k) is not None}

    def query(self) -> CrossoverQuery:
        """The service question this form asks."""
        return CrossoverQuery(**self.filters(), option=self.option, axis=self.axis)

    def params(self) -> dict[str, Any]:
        """URL parameters: every filter (model/hardware/quant as "all" when unset),
        option, axis and the charted series."""
        out: dict[str, Any] = {k: getattr(self, k) or ALL for k in ("model", "hardware", "quant")}
        out.update({k: v for k, v in self.filters().items() if k not in out})
        out.update(option=self.option, axis=self.axis, series=self.series)
        return out

    def search(self) -> str:
        return ui.search_string(self.params())

    def api_href(self, fmt: str = "json") -> str:
        """The same question to ``GET /api/v1/crossovers``."""
        params = {**self.filters(), "option": self.option, "axis": self.axis}
        if fmt != "json":
            params["format"] = fmt
        return "/api/v1/crossovers?" + urlencode(params)


def make_form(
    model: Any = None,
    hardware: Any = None,
    quant: Any = None,
    world_size: Any = None,
    phase: Any = None,
    attention: Any = None,
    dispatch: Any = None,
    option: Any = None,
    axis: Any = None,
    series: Any = None,
) -> Form:
    """A form from raw control values. Unknown phase/attention mean all; an unknown
    option or axis falls back to backend / num_tokens; a world size that is not a
    number means all."""
    opt = ui.choice(option) or "backend"
    opt = OPTION_ALIASES.get(opt, opt)
    ax = ui.choice(axis) or C.NUM_TOKENS
    hw = ui.choice(hardware)
    return Form(
        model=ui.choice(model),
        hardware=hw.upper() if hw else None,
        quant=ui.choice(quant),
        world_size=ui.as_int(ui.choice(world_size)),
        phase=ui.choice(phase, PHASES),
        attention=ui.choice(attention, ATTENTIONS),
        dispatch=ui.choice(dispatch),
        option=opt if opt in OPTION_DIMS else "backend",
        axis=ax if ax in AXES else C.NUM_TOKENS,
        series=ui.choice(series),
    )


def parse_query(query: dict[str, Any], default_cell: Cell | None) -> Form:
    """The form of a URL query; model/hardware/quant absent -> ``default_cell``'s."""
    raw = {k: ui.first(query, k) for k in (*FILTERS, "option", "axis", "series")}
    form = make_form(**raw)
    if default_cell is not None and all(raw[k] is None for k in ("model", "hardware", "quant")):
        form = replace(
            form,
            model=default_cell.model,
            hardware=default_cell.hardware,
            quant=default_cell.quant,
        )
    return form
