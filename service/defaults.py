"""What a page shows before the user chooses: the default cell, one rule for every page.

The rule: **the cell with the most data** -- the most stored candidates (every status,
summed over world sizes), then the most distinct successful workloads, then the first
in :meth:`DashData.cells` order (model, hardware, quant). So one small upload does not
become the landing chart just because its model name sorts first, and the choice does
not depend on upload order.
"""

from __future__ import annotations

from analysis import columns as C
from service.frames import Cell, DashData


def cells_by_data(data: DashData) -> list[Cell]:
    """Every cell with data, the one with the most data first (the rule above); equal
    cells keep :meth:`DashData.cells` order. Empty database: ``[]``."""
    cov = data.coverage()
    if cov.empty:
        return []
    keys = [C.MODEL, C.HARDWARE, C.QUANT]
    sums = cov.groupby(keys, sort=False, observed=True)[["candidates", "workloads"]].sum()
    size = {
        Cell(str(m), str(h), str(q)): (int(row.candidates), int(row.workloads))
        for (m, h, q), row in sums.iterrows()
    }
    order = data.cells()
    rank = {cell: i for i, cell in enumerate(order)}
    return sorted(order, key=lambda c: (-size[c][0], -size[c][1], rank[c]))


def default_cell(data: DashData, cells: list[Cell] | None = None) -> Cell | None:
    """The cell a page opens on when the URL names none (or names one not stored): the
    first of :func:`cells_by_data`. ``cells`` (when given) restricts the choice to those
    cells, e.g. the ones a page can draw; none of them stored -> the first of ``cells``.
    No data: None."""
    ranked = cells_by_data(data)
    if cells is not None:
        allowed = set(cells)
        ranked = [c for c in ranked if c in allowed] or list(cells[:1])
    return ranked[0] if ranked else None
