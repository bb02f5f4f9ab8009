"""Exportable configs: trtllm-serve YAML and the env line, for the API and the pages.

``source="tree"`` exports the tree's pick (provenance names the thresholds; no run ids:
the tree is not computed from runs); ``source="measured"`` the measured best at the
nearest workload (provenance: its runs and TensorRT-LLM versions; the comm is the
measured one, forced whenever the guide's AUTO flow would pick another -- see
``analysis.measured.measured_comm``). Both come from
:func:`service.recommend.recommendation`, so ``/api/v1/export`` and the Recommend page
give the same text for the same deployment. No clock time goes into the text (the date
is the measured run's): the same question on the same data gives the same bytes.

Every export is checked against the guide's capability matrix
(``analysis.export.export_check``): a backend TensorRT-LLM does not have, or a comm
``TRTLLM_FORCE_COMM_METHOD`` cannot select, is an error (:func:`export_config` raises
:class:`~service.errors.InvalidQuery` naming it and why -- the API's 422, the page's
reason in place of a download); a combination outside the guide's coverage is a
warning carried in the YAML (``# warning:``), the JSON (``warnings``) and the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from analysis import columns as C
from analysis.capabilities import ExportCheck
from analysis.export import (
    Provenance,
    env_line,
    export_check,
    present_text,
    recommended_config_yaml,
)
from analysis.measured import candidate_recommendation
from analysis.tree import Recommendation
from service.errors import InvalidQuery, NoData
from service.frames import DashData
from service.recommend import DeploymentRequest, RecommendationAnswer, recommendation

ExportSource = Literal["tree", "measured"]


@dataclass(frozen=True)
class ExportAnswer:
    """A recommendation ready to paste: ``yaml`` (``--extra_llm_api_options``) and
    ``env`` (the TRTLLM_FORCE_COMM_METHOD line, None when comm stays AUTO), with the
    capability ``check`` (``errors``: not deployable; ``warnings``: outside the guide's
    coverage)."""

    recommendation: Recommendation
    provenance: Provenance
    check: ExportCheck = ExportCheck()
    answer: RecommendationAnswer | None = None

    @property
    def yaml(self) -> str:
        return recommended_config_yaml(self.recommendation, self.provenance, self.check)

    @property
    def env(self) -> str | None:
        return env_line(self.recommendation)

    @property
    def errors(self) -> tuple[str, ...]:
        return self.check.errors

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.check.warnings

    @property
    def deployable(self) -> bool:
        """False when the check found an error (offer the reason, not a download)."""
        return self.check.ok

    def raise_if_invalid(self) -> ExportAnswer:
        """``self``; :class:`InvalidQuery` (field ``source``) naming the first error."""
        if self.check.errors:
            raise InvalidQuery("source", "; ".join(self.check.errors), "not_deployable")
        return self


def export_config(
    data: DashData, req: DeploymentRequest, source: ExportSource = "tree", strict: bool = True
) -> ExportAnswer:
    """The config for ``req`` from the tree or from the measured best. Raises
    :class:`NoData` (field ``source``) when ``source="measured"`` and nothing
    comparable is stored, :class:`~service.errors.InvalidQuery` for an unknown model and
    -- unless ``strict`` is False -- for a config TensorRT-LLM cannot run (field
    ``source``, type ``not_deployable``, the reasons in the message)."""
    answer = recommendation(data, req, with_measured=source == "measured")
    if source == "tree":
        prov = Provenance(produced_by=f"moedash decision tree ({req.thresholds} thresholds)")
        out = ExportAnswer(answer.tree, prov, export_check(answer.tree), answer)
        return out.raise_if_invalid() if strict else out
    pick = answer.measured
    if pick is None:
        raise NoData(
            "source",
            "no measured candidates for this deployment; give model and check "
            "hardware/quant/world_size/dispatch",
            "no_data",
        )
    routing = answer.routing.label if answer.routing is not None else "not recorded"
    runs = (
        "1 run"
        if pick.n_repeats == 1
        else f"{'median' if req.repeats == 'median' else 'latest'} of {pick.n_repeats} runs"
    )
    prov = Provenance(
        run_ids=pick.run_ids,
        trtllm_version=", ".join(pick.trtllm_versions) or None,
        date=present_text(pick.candidate.get(C.RUN_DATE)),
        produced_by=(f"moedash measured best (nearest stored workload; routing {routing}; {runs})"),
    )
    out = ExportAnswer(pick.recommendation, prov, export_check(pick.recommendation), answer)
    return out.raise_if_invalid() if strict else out


def candidate_export(row: Mapping[str, object]) -> ExportAnswer:
    """The config that reproduces one measured candidate (a cell-frame row), with its
    run, TensorRT-LLM version and run date as provenance (missing ones left out) and
    the capability check (a non-TensorRT-LLM backend is an error: check
    ``deployable`` before offering a download)."""
    prov = Provenance(
        run_ids=(int(row[C.RUN_ID]),),  # type: ignore[call-overload]
        trtllm_version=present_text(row.get(C.TRTLLM_VERSION)),
        date=present_text(row.get(C.RUN_DATE)),
        produced_by="moedash Pareto page (measured bench_moe candidate)",
    )
    rec = candidate_recommendation(row)
    return ExportAnswer(rec, prov, export_check(rec))
