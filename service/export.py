"""Exportable configs: trtllm-serve YAML and the env line, for the API and the pages.

``source="tree"`` exports the tree's pick (provenance names the thresholds; no run ids:
the tree is not computed from runs); ``source="measured"`` the measured best at the
nearest workload (provenance: its runs and TensorRT-LLM versions). Both come from
:func:`service.recommend.recommendation`, so ``/api/v1/export`` and the Recommend page
give the same text for the same deployment. No date goes into the text: the same
question gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from analysis import columns as C
from analysis.export import Provenance, env_line, recommended_config_yaml
from analysis.measured import candidate_recommendation
from analysis.tree import Recommendation
from service.errors import NoData
from service.frames import DashData
from service.recommend import DeploymentRequest, recommendation

ExportSource = Literal["tree", "measured"]


@dataclass(frozen=True)
class ExportAnswer:
    """A recommendation ready to paste: ``yaml`` (``--extra_llm_api_options``) and
    ``env`` (the TRTLLM_FORCE_COMM_METHOD line, None when comm stays AUTO)."""

    recommendation: Recommendation
    provenance: Provenance

    @property
    def yaml(self) -> str:
        return recommended_config_yaml(self.recommendation, self.provenance)

    @property
    def env(self) -> str | None:
        return env_line(self.recommendation)


def export_config(
    data: DashData, req: DeploymentRequest, source: ExportSource = "tree"
) -> ExportAnswer:
    """The config for ``req`` from the tree or from the measured best. Raises
    :class:`NoData` (field ``source``) when ``source="measured"`` and nothing
    comparable is stored, :class:`~service.errors.InvalidQuery` for an unknown model."""
    answer = recommendation(data, req, with_measured=source == "measured")
    if source == "tree":
        prov = Provenance(produced_by=f"moedash decision tree ({req.thresholds} thresholds)")
        return ExportAnswer(answer.tree, prov)
    pick = answer.measured
    if pick is None:
        raise NoData(
            "source",
            "no measured candidates for this deployment; give model and check "
            "hardware/quant/world_size",
            "no_data",
        )
    prov = Provenance(
        run_ids=pick.run_ids,
        trtllm_version=", ".join(pick.trtllm_versions) or None,
        produced_by="moedash measured best (nearest stored workload)",
    )
    return ExportAnswer(pick.recommendation, prov)


def candidate_export(row: Mapping[str, object]) -> ExportAnswer:
    """The config that reproduces one measured candidate (a cell-frame row), with its
    run, TensorRT-LLM version and run date as provenance."""
    version, date = row.get(C.TRTLLM_VERSION), row.get(C.RUN_DATE)
    prov = Provenance(
        run_ids=(int(row[C.RUN_ID]),),  # type: ignore[call-overload]
        trtllm_version=None if version is None else str(version),
        date=None if date is None else str(date),
        produced_by="moedash Pareto page (measured bench_moe candidate)",
    )
    return ExportAnswer(candidate_recommendation(row), prov)
