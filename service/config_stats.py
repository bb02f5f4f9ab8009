"""Per-configuration statistics of one cell, aggregated in the database
(``Store.stats.config_stats``: runs, median, mean, stdev, min, max of the score and the
run-to-run spread per configuration x workload x TensorRT-LLM version), cached on the
cell's version: what a noise model reads instead of the cell's rows."""

from __future__ import annotations

import pandas as pd

from service.frames import Cell, DashData


def cell_config_stats(data: DashData, cell: Cell) -> pd.DataFrame:
    """``Store.stats.config_stats`` of ``cell`` (empty for a cell with no run), computed
    once per cell version; an upload to another cell keeps it."""

    def load() -> pd.DataFrame:
        data.store.stats.ensure_cell(cell.model, cell.hardware, cell.quant)
        return data.store.stats.config_stats(cell.model, cell.hardware, cell.quant)

    return data.cached(("config-stats", cell), load, where=cell, share=True)
