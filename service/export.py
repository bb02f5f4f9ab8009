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
    ServingInputs,
    config_dict,
    env_line,
    export_check,
    present_text,
    recommended_config_yaml,
    worker_shape,
)
from analysis.export_launch import serve_command
from analysis.export_options import DEFAULT_RELEASE, RELEASES
from analysis.measured import candidate_recommendation
from analysis.tree import Recommendation
from service.capabilities import nvlink_ran
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
    serving: ServingInputs = ServingInputs()
    model_name: str | None = None

    @property
    def yaml(self) -> str:
        return recommended_config_yaml(
            self.recommendation, self.provenance, self.check, self.serving
        )

    @property
    def options(self) -> dict[str, object]:
        """The ``extra_llm_api_options`` document as a dict (what :attr:`yaml` holds)."""
        return config_dict(self.recommendation, self.serving)

    @property
    def role(self) -> str:
        return self.recommendation.phase

    @property
    def config_path(self) -> str:
        return f"{self.role}.yaml"

    @property
    def command(self) -> str:
        """The trtllm-serve command line of this worker, environment included (a worker
        larger than one node starts under srun with trtllm-llmapi-launch)."""
        dep = self.recommendation.deployment
        return serve_command(
            worker_shape(self.recommendation, self.serving),
            self.model_name or dep.model or "<model>",
            self.config_path,
            dep.hardware,
        )

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


def serving_inputs(
    req: DeploymentRequest, answer: RecommendationAnswer, release: str = DEFAULT_RELEASE
) -> ServingInputs:
    """What the request says about the worker beyond the tree's input: MTP, the padded
    requests per rank its concurrency converts to (decode), the max_batch_size /
    max_num_tokens typed, ISL / OSL. Raises :class:`InvalidQuery` (``release``) for a
    TensorRT-LLM release we hold no option rules for."""
    if release not in RELEASES:
        raise InvalidQuery(
            "release",
            f"unknown TensorRT-LLM release {release!r}; known: {', '.join(RELEASES)}",
            "unknown",
        )
    count = answer.tokens
    decode = req.phase == "decode"
    return ServingInputs(
        mtp=req.mtp,
        requests_per_rank=count.batch_per_rank_padded if decode and count is not None else None,
        max_batch_size=req.max_batch_size,
        max_num_tokens=req.max_num_tokens,
        isl=req.isl,
        osl=req.osl,
        release=release,
    )


def export_config(
    data: DashData,
    req: DeploymentRequest,
    source: ExportSource = "tree",
    strict: bool = True,
    release: str = DEFAULT_RELEASE,
) -> ExportAnswer:
    """The config for ``req`` from the tree or from the measured best, as the whole
    ``extra_llm_api_options`` document of its worker (:func:`serving_inputs`). Raises
    :class:`NoData` (field ``source``) when ``source="measured"`` and nothing
    comparable is stored, :class:`~service.errors.InvalidQuery` for an unknown model and
    -- unless ``strict`` is False -- for a config TensorRT-LLM cannot run (field
    ``source``, type ``not_deployable``, the reasons in the message)."""
    answer = recommendation(data, req, with_measured=source == "measured")
    serving = serving_inputs(req, answer, release)
    if source == "tree":
        prov = Provenance(produced_by=f"moedash decision tree ({req.thresholds} thresholds)")
        out = ExportAnswer(answer.tree, prov, export_check(answer.tree), answer, serving, req.model)
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
        confidence=answer.confidence.note if answer.confidence is not None else None,
    )
    check = export_check(pick.recommendation, nvlink_ran(data, req.hardware))
    out = ExportAnswer(pick.recommendation, prov, check, answer, serving, req.model)
    return out.raise_if_invalid() if strict else out


def candidate_export(
    row: Mapping[str, object], nvlink: dict[str, list[int]] | None = None
) -> ExportAnswer:
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
    return ExportAnswer(rec, prov, export_check(rec, nvlink))


@dataclass(frozen=True)
class LaunchAnswer:
    """Everything a deployment launches: one worker (aggregated) or a prefill and a
    decode worker (disaggregated), each with its YAML document, command line and
    environment, and the shell text that writes the documents and starts the workers."""

    workers: tuple[ExportAnswer, ...]

    @property
    def disaggregated(self) -> bool:
        return len(self.workers) > 1

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(f"{w.role}: {e}" for w in self.workers for e in w.errors)

    @property
    def text(self) -> str:
        """A POSIX shell script: each document written with a here-document, then each
        worker started in the background (run it inside the job allocation)."""
        dep = self.workers[0].recommendation.deployment
        lines = [
            "#!/bin/sh",
            f"# moedash launch: {dep.model or 'model'} {dep.quant} on {dep.hardware}"
            + (" (disaggregated: prefill and decode workers)" if self.disaggregated else ""),
            "set -eu",
        ]
        for w in self.workers:
            lines += ["", f"cat > {w.config_path} <<'YAML'", w.yaml.rstrip("\n"), "YAML"]
        for w in self.workers:
            lines += ["", f"# {w.role} worker", w.command + " &"]
        if self.disaggregated:
            lines += [
                "",
                "# route requests: trtllm-serve disaggregated -c disagg.yaml "
                "(context_servers: the prefill workers' URLs, generation_servers: the "
                "decode workers')",
            ]
        lines += ["wait"]
        return "\n".join(lines) + "\n"


def launch_export(
    data: DashData,
    req: DeploymentRequest,
    source: ExportSource = "tree",
    release: str = DEFAULT_RELEASE,
    prefill_max_num_tokens: int | None = None,
    prefill_world_size: int | None = None,
    prefill_attention: str | None = None,
) -> LaunchAnswer:
    """The launch of ``req``'s worker; with ``prefill_max_num_tokens`` on a decode
    request, a disaggregated deployment: the decode worker of ``req`` and a prefill
    worker (same hardware, quant and model; its own world size and attention when
    given) taking that many tokens per forward per rank, each with its own
    recommendation. Raises as :func:`export_config` (strict), and
    :class:`InvalidQuery` on ``prefill_max_num_tokens`` for a prefill request."""
    decode = export_config(data, req, source, True, release)
    if prefill_max_num_tokens is None:
        return LaunchAnswer((decode,))
    if req.phase != "decode":
        raise InvalidQuery(
            "prefill_max_num_tokens",
            "a disaggregated launch starts from the decode request (phase=decode)",
            "conflicting",
        )
    pre_req = req.model_copy(
        update={
            "phase": "prefill",
            "num_tokens": None,
            "concurrency": None,
            "max_batch_size": None,
            "max_num_tokens": prefill_max_num_tokens,
            "world_size": prefill_world_size or req.world_size,
            "attention": prefill_attention or req.attention,
        }
    )
    return LaunchAnswer((export_config(data, pre_req, source, True, release), decode))
