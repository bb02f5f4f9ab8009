"""One measured candidate as a deployable config: the Pareto page's click-through and
``GET /api/v1/runs/{run_id}/candidates/{candidate_index}/export`` both come from here.

The candidate's row is read from the cached cell frame of its run's model x hardware x
quant (the frame the Pareto page draws), and :func:`service.export.candidate_export`
turns it into the trtllm-serve YAML and the TRTLLM_FORCE_COMM_METHOD line, so the page's
download and the API answer are the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import columns as C
from db.errors import NotFound
from service.capabilities import nvlink_ran
from service.errors import InvalidQuery, NoData
from service.export import ExportAnswer, candidate_export
from service.filenames import config_stem
from service.frames import Cell, DashData
from service.pareto import cell_point


@dataclass(frozen=True)
class PointExport:
    """A stored candidate (``row``: its cell-frame row) and its config (``answer``)."""

    row: pd.Series
    answer: ExportAnswer

    @property
    def run_id(self) -> int:
        return int(self.row[C.RUN_ID])

    @property
    def candidate_index(self) -> int:
        return int(self.row[C.CANDIDATE_INDEX])

    @property
    def stem(self) -> str:
        """``moe_config_<model>_<gpu>_<quant>_ws<N>_<tokens>tok_run<R>_cand<I>``: what the
        file holds (the workload) and which measurement it reproduces."""
        r = self.row
        return config_stem(
            r[C.MODEL],
            r[C.HARDWARE],
            r[C.QUANT],
            int(r[C.WORLD_SIZE]),
            int(r[C.NUM_TOKENS]),
            which=f"run{self.run_id}_cand{self.candidate_index}",
        )

    @property
    def deployable(self) -> bool:
        """False when the capability check found an error (e.g. a backend TensorRT-LLM
        does not have): offer ``errors``, not a download."""
        return self.answer.deployable

    @property
    def errors(self) -> tuple[str, ...]:
        return self.answer.errors

    @property
    def warnings(self) -> tuple[str, ...]:
        """Outside the guide's coverage: the export works, with these caveats."""
        return self.answer.warnings

    @property
    def yaml(self) -> str:
        return self.answer.yaml

    @property
    def yaml_filename(self) -> str:
        return f"{self.stem}.yaml"

    @property
    def env(self) -> str:
        """The environment file: the TRTLLM_FORCE_COMM_METHOD line, or a comment saying
        the comm stays AUTO (and which method the candidate ran with)."""
        line = self.answer.env
        if line:
            return line + "\n"
        return (
            "# TRTLLM_FORCE_COMM_METHOD stays unset: comm AUTO "
            f"(measured with {self.answer.recommendation.expected_comm})\n"
        )

    @property
    def env_filename(self) -> str:
        return f"{self.stem}.env"


def cell_point_export(data: DashData, cell: Cell, point: str | None) -> PointExport | None:
    """The export of candidate ``point`` (``"<run_id>:<candidate_index>"``) of ``cell``,
    deployable or not (see :attr:`PointExport.deployable`); None when the point is
    malformed or not in the cell."""
    row = cell_point(data, cell, point)
    if row is None:
        return None
    return PointExport(row, candidate_export(row.to_dict(), nvlink_ran(data, cell.hardware)))


def point_export(
    data: DashData, run_id: int, candidate_index: int, strict: bool = True
) -> PointExport:
    """The export of one stored candidate. Raises :class:`NoData` naming ``run_id`` when
    the run does not exist, ``candidate_index`` when the run has no such candidate, and
    -- unless ``strict`` is False -- :class:`InvalidQuery` (``candidate_index``, type
    ``not_deployable``) with the capability check's reasons when TensorRT-LLM cannot
    run it."""
    try:
        run = data.store.get_run(run_id)
    except NotFound:
        raise NoData("run_id", f"no run {run_id}", "not_found") from None
    cell = Cell(str(run[C.MODEL]), str(run[C.HARDWARE]), str(run[C.QUANT]))
    found = cell_point_export(data, cell, f"{run_id}:{candidate_index}")
    if found is None:
        raise NoData(
            "candidate_index",
            f"run {run_id} has no candidate {candidate_index}",
            "not_found",
        )
    if strict and not found.deployable:
        raise InvalidQuery(
            "candidate_index",
            f"run {run_id} candidate {candidate_index} cannot be exported: "
            + "; ".join(found.errors),
            "not_deployable",
        )
    return found
