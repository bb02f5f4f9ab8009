"""The /history controls and their URL.

URL: ``/history?model=&hardware=&quant=&world_size=&phase=decode|prefill&dispatch=
&num_tokens=&config=best|<configuration>&base=&head=&repeats=median|latest&by=version|run``.
``num_tokens`` picks one workload (absent or ``all``: every workload); ``config`` is
``best`` (the best configuration of each workload, per version) or one configuration's
label; ``base`` / ``head`` are the two versions whose frontiers the change compares;
``by=run`` draws one point per run (its version, date and commit) instead of one per
version.
Model, hardware, quant, world size and phase default to the slice with the most
versions and are always written back, so a permalink keeps its slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dashboard import components as ui
from service.scope import Scope

ALL = "all"
BEST = "best"
PHASES = ("decode", "prefill")
REPEATS = ("median", "latest")
SLICE: tuple[str, ...] = ("model", "hardware", "quant", "world_size", "phase")
# the controls, in callback order (ids are "hist-<name>")
BY = ("version", "run")
FIELDS: tuple[str, ...] = (
    *SLICE,
    "dispatch",
    "num_tokens",
    "config",
    "base",
    "head",
    "repeats",
    "by",
)
DROPDOWNS: tuple[str, ...] = FIELDS[:-2]


@dataclass(frozen=True)
class Form:
    """The page's state (None: not chosen / all)."""

    model: str | None = None
    hardware: str | None = None
    quant: str | None = None
    world_size: int | None = None
    phase: str | None = None
    dispatch: str | None = None
    num_tokens: int | None = None
    config: str = BEST
    base: str | None = None
    head: str | None = None
    repeats: str = "median"
    by: str = "version"

    def slice(self) -> dict[str, Any]:
        """The slice filters that are set (the API's parameter names)."""
        return {k: getattr(self, k) for k in (*SLICE, "dispatch") if getattr(self, k) is not None}

    def complete(self) -> bool:
        """Whether the slice is one (model, GPU, quant, world size, phase)."""
        return all(getattr(self, k) is not None for k in SLICE)

    def params(self) -> dict[str, Any]:
        """Every control as URL parameters (defaults left out)."""
        out = self.slice()
        out.update(
            num_tokens=self.num_tokens,
            config=None if self.config == BEST else self.config,
            base=self.base,
            head=self.head,
            repeats=None if self.repeats == "median" else self.repeats,
            by=None if self.by == "version" else self.by,
        )
        return out

    def search(self) -> str:
        return ui.search_string(self.params())

    def filename(self, what: str) -> str:
        """A file name stem naming the slice: ``history-<what>-<model>-<gpu>-...``."""
        parts = [
            "history",
            what,
            *(str(v) for v in (self.model, self.hardware, self.quant) if v),
            *([f"ws{self.world_size}"] if self.world_size else []),
            *(v for v in (self.phase, self.dispatch) if v),
        ]
        return ui.file_slug("-".join(parts), "history")


def scope_of(form: Form) -> Scope:
    """The service scope of the form's slice (and routing pattern)."""
    return Scope(**form.slice())


def make_form(
    model: Any = None,
    hardware: Any = None,
    quant: Any = None,
    world_size: Any = None,
    phase: Any = None,
    dispatch: Any = None,
    num_tokens: Any = None,
    config: Any = None,
    base: Any = None,
    head: Any = None,
    repeats: Any = None,
    by: Any = None,
) -> Form:
    """A form from raw control values; odd values fall back to "all" / best / median."""
    hw = ui.choice(hardware)
    return Form(
        model=ui.choice(model),
        hardware=hw.upper() if hw else None,
        quant=ui.choice(quant),
        world_size=ui.as_int(ui.choice(world_size)),
        phase=ui.choice(phase, PHASES),
        dispatch=ui.choice(dispatch),
        num_tokens=ui.as_int(ui.choice(num_tokens)),
        config=ui.choice(config) or BEST,
        base=ui.choice(base),
        head=ui.choice(head),
        repeats=ui.choice(repeats, REPEATS) or "median",
        by=ui.choice(by, BY) or "version",
    )


def parse_query(query: dict[str, Any]) -> Form:
    """The form of a URL query (the router's ``parse_search`` output)."""
    return make_form(**{k: ui.first(query, k) for k in FIELDS})
