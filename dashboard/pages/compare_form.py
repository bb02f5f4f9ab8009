"""The /compare controls and their URL.

URL: ``/compare?base=&head=&model=&hardware=&quant=&world_size=&phase=decode|prefill
&dispatch=&threshold_pct=&repeats=median|latest`` -- the API's parameter names, so a
page URL's query is also the ``GET /api/v1/compare`` question. ``base`` / ``head`` are
run ids (``"12"``) or TensorRT-LLM versions (``"1.2.0rc27"``); ``all`` (or no value)
means no filter. Model, hardware and quant default to the slice with the most versions
when the URL names none, and are always written back, so a permalink keeps its slice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from dashboard import components as ui

ALL = "all"
PHASES = ("decode", "prefill")
REPEATS = ("median", "latest")
DEFAULT_THRESHOLD = 5.0
MAX_THRESHOLD = 1000.0
FILTERS: tuple[str, ...] = ("model", "hardware", "quant", "world_size", "phase", "dispatch")
# the controls, in callback order (ids are "cmp-<name>")
FIELDS: tuple[str, ...] = ("base", "head", *FILTERS, "threshold_pct", "repeats")


@dataclass(frozen=True)
class Form:
    """The page's state (None: not chosen / all)."""

    base: str | None = None
    head: str | None = None
    model: str | None = None
    hardware: str | None = None
    quant: str | None = None
    world_size: int | None = None
    phase: str | None = None
    dispatch: str | None = None
    threshold_pct: float = DEFAULT_THRESHOLD
    repeats: str = "median"

    def filters(self) -> dict[str, Any]:
        """The slice filters that are set, as the API's query parameters."""
        return {k: getattr(self, k) for k in FILTERS if getattr(self, k) is not None}

    def params(self) -> dict[str, Any]:
        """Every control as URL parameters (defaults left out, the slice always in)."""
        out: dict[str, Any] = {"base": self.base, "head": self.head}
        out.update({k: getattr(self, k) or ALL for k in ("model", "hardware", "quant")})
        out.update({k: v for k, v in self.filters().items() if k not in out})
        if self.threshold_pct != DEFAULT_THRESHOLD:
            out["threshold_pct"] = ui.fmt(self.threshold_pct)
        if self.repeats != "median":
            out["repeats"] = self.repeats
        return out

    def search(self) -> str:
        return ui.search_string(self.params())

    def api_href(self, fmt: str = "json") -> str:
        """The same question to ``GET /api/v1/compare``."""
        params: dict[str, Any] = {"base": self.base or "", "head": self.head or ""}
        params.update(self.filters())
        params["threshold_pct"] = ui.fmt(self.threshold_pct)
        params["repeats"] = self.repeats
        if fmt != "json":
            params["format"] = fmt
        return "/api/v1/compare?" + urlencode(params)

    def filename(self) -> str:
        """``compare-<model>-<gpu>[-<quant>][-ws<N>][-<phase>]-<base>-vs-<head>.csv``."""
        parts = ["compare", self.model or "all-models", self.hardware or "all-gpus"]
        if self.quant:
            parts.append(self.quant)
        if self.world_size:
            parts.append(f"ws{self.world_size}")
        parts += [p for p in (self.phase, self.dispatch) if p]
        parts += [self.base or "base", "vs", self.head or "head"]
        return ui.file_slug("-".join(str(p) for p in parts), "compare") + ".csv"


def threshold(value: Any) -> float:
    """A threshold control or URL value in % (0 .. 1000); anything else: the default."""
    try:
        got = float(str(ui.choice(value)))
    except (TypeError, ValueError):
        return DEFAULT_THRESHOLD
    return got if math.isfinite(got) and 0 <= got <= MAX_THRESHOLD else DEFAULT_THRESHOLD


def make_form(
    base: Any = None,
    head: Any = None,
    model: Any = None,
    hardware: Any = None,
    quant: Any = None,
    world_size: Any = None,
    phase: Any = None,
    dispatch: Any = None,
    threshold_pct: Any = None,
    repeats: Any = None,
) -> Form:
    """A form from raw control values. An unknown phase means all; a world size that is
    not a number means all; unknown repeats fall back to median."""
    hw = ui.choice(hardware)
    return Form(
        base=ui.choice(base),
        head=ui.choice(head),
        model=ui.choice(model),
        hardware=hw.upper() if hw else None,
        quant=ui.choice(quant),
        world_size=ui.as_int(ui.choice(world_size)),
        phase=ui.choice(phase, PHASES),
        dispatch=ui.choice(dispatch),
        threshold_pct=threshold(threshold_pct),
        repeats=ui.choice(repeats, REPEATS) or "median",
    )


def parse_query(query: dict[str, Any]) -> Form:
    """The form of a URL query (the router's ``parse_search`` output)."""
    return make_form(**{k: ui.first(query, k) for k in FIELDS})
