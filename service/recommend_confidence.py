"""The confidence panel of a recommendation: measured at the asked workload or not, and
how far the pick can be trusted -- in the Best table's words.

The asked workload (world size, num_tokens, phase, attention family, routing pattern)
is looked up in the cell's Best table (``service.best.cell_best``, NVIDIA's dashboard
grouping, repeats pooled to their median): the very row the Best page, ``GET
/api/v1/best`` and ``moedash best`` show. Measured there: its verdict and note. Not
measured: the two measured token counts around it (its neighbours) and their picks; when
they disagree the answer says so, names the crossover bracket between them and gives the
bench_moe command that measures the asked count, and the verdict is *measure first*
(likewise beyond the measured range, where only one neighbour exists); when they agree
the verdict is the weaker of the two neighbours', said to rest on neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis import columns as C
from analysis import confidence as CF
from analysis.crossval_sweeps import bench_command, family_modes
from service.best import cell_best
from service.frames import Cell, DashData

_ORDER = {CF.DEPLOY: 0, CF.TIE: 1, CF.MEASURE_FIRST: 2}


@dataclass(frozen=True)
class Neighbour:
    """A measured workload next to the asked one: its token count, pick (backend ·
    comm · parallel mode), score (ms), verdict and note."""

    num_tokens: int
    pick: str
    score_ms: float
    verdict: str
    note: str


@dataclass(frozen=True)
class RecommendConfidence:
    """``measured``: the asked num_tokens itself was measured; ``verdict`` / ``note``:
    the panel's plain word and line; ``neighbours``: the measured workloads below and
    above (not measured only); ``disagree``: they pick different configurations;
    ``crossover``: (below, above) token counts the switch lies between; ``command``:
    the bench_moe command that measures the asked count (not measured only)."""

    measured: bool
    verdict: str
    note: str
    neighbours: tuple[Neighbour, ...] = ()
    disagree: bool = False
    crossover: tuple[int, int] | None = None
    command: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the API's ``confidence`` object)."""
        return {
            "measured": self.measured,
            "verdict": self.verdict,
            "note": self.note,
            "neighbours": [n.__dict__.copy() for n in self.neighbours],
            "disagree": self.disagree,
            "crossover": list(self.crossover) if self.crossover else None,
            "command": self.command,
        }


def _pick(row: pd.Series) -> str:
    return " · ".join(str(row.get(f"best_{c}")) for c in (C.BACKEND, C.COMM, C.PARALLEL_MODE))


def _neighbour(row: pd.Series) -> Neighbour:
    return Neighbour(
        num_tokens=int(row[C.NUM_TOKENS]),
        pick=_pick(row),
        score_ms=float(row["best_" + C.SCORE_MS]),
        verdict=str(row[CF.CONFIDENCE]),
        note=str(row[CF.CONFIDENCE_NOTE]),
    )


def recommend_confidence(
    data: DashData,
    cell: Cell,
    world_size: int,
    num_tokens: int,
    decode: bool,
    attention_dp: bool,
    dispatch: str | None = None,
) -> RecommendConfidence | None:
    """The panel of the workload (module docstring); None when the cell has no Best row
    of that world size, phase and attention family."""
    table = cell_best(data, cell, "dashboard", int(world_size), dispatch).table
    if table.empty:
        return None
    attn = "D" if attention_dp else "T"
    rows = table[(table[C.CUDA_GRAPH].astype(bool) == bool(decode)) & (table[C.ATTN] == attn)]
    if rows.empty:
        return None
    rows = rows.sort_values(C.NUM_TOKENS, kind="mergesort")
    tokens = rows[C.NUM_TOKENS].astype(int).to_numpy()
    asked = int(num_tokens)
    if asked in set(tokens):
        row = rows[tokens == asked].iloc[0]
        return RecommendConfidence(True, str(row[CF.CONFIDENCE]), str(row[CF.CONFIDENCE_NOTE]))
    below, above = rows[tokens < asked], rows[tokens > asked]
    sides = [_neighbour(p.iloc[-1 if p is below else 0]) for p in (below, above) if len(p)]
    key = {
        C.HARDWARE: cell.hardware,
        C.MODEL: cell.model,
        C.QUANT: cell.quant,
        C.WORLD_SIZE: int(world_size),
        C.CUDA_GRAPH: bool(decode),
        C.ATTENTION_DP: bool(attention_dp),
    }
    command = bench_command(key, [asked], family_modes(int(world_size), bool(attention_dp)))
    if len(sides) == 1:
        (only,) = sides
        side = "below" if only.num_tokens > asked else "above"
        note = (
            f"{CF.MEASURE_FIRST}; not measured at {asked} tokens, {side} every measured "
            f"count: the nearest, {only.num_tokens} tokens, picks {only.pick} ({only.verdict})"
            "; predicted from one side only"
        )
        return RecommendConfidence(False, CF.MEASURE_FIRST, note, tuple(sides), command=command)
    lo, hi = sides
    if lo.pick != hi.pick:
        note = (
            f"{CF.MEASURE_FIRST}; not measured at {asked} tokens and the measured neighbours "
            f"disagree: {lo.pick} at {lo.num_tokens}, {hi.pick} at {hi.num_tokens} tokens -- "
            f"the crossover lies between them; measure {asked} tokens to settle it"
        )
        return RecommendConfidence(
            False,
            CF.MEASURE_FIRST,
            note,
            (lo, hi),
            disagree=True,
            crossover=(lo.num_tokens, hi.num_tokens),
            command=command,
        )
    weaker = max(lo.verdict, hi.verdict, key=lambda v: _ORDER.get(v, 2))
    note = (
        f"{weaker}; not measured at {asked} tokens: both measured neighbours "
        f"({lo.num_tokens} and {hi.num_tokens} tokens) pick {lo.pick} "
        f"({lo.verdict} / {hi.verdict}); resting on neighbours"
    )
    return RecommendConfidence(False, weaker, note, (lo, hi), command=command)
