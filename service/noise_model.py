"""The noise model of one cell (``analysis.noise.estimate_noise`` over every run of the
cell), computed once per cell version and shared by replicas through the database
(``DashData.cached(share=True)``): the run-to-run spreads every comparison of the cell
reads -- Best's ties, Crossovers' robustness -- without estimating them again per
question. A configuration's evidence (its repeats and version history) is the same
whatever slice of the cell a question takes; priors are learned over the whole cell."""

from __future__ import annotations

from analysis.noise import NoiseModel, estimate_noise
from service.frames import Cell, DashData
from service.shared_answers import shareable

shareable(NoiseModel)


def cell_noise(data: DashData, cell: Cell) -> NoiseModel:
    """The cell's noise model (empty tables for a cell without runs)."""
    return data.cached(
        ("noise-model", cell), lambda: estimate_noise(data.cell_frame(cell)), where=cell, share=True
    )
