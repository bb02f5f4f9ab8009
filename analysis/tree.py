"""The MoE performance guide's decision tree (STEP 1-3 + AUTO comm flow), executable.

``recommend(deployment, thresholds)`` walks the published tree and returns the
parallelism, backend and comm, plus ``path``: every question asked, the branch taken and
(when a threshold decided it) the threshold's name, value and the observed value.

Generalisations beyond the guide's wording, each recorded in ``Recommendation.notes``:
"EP crosses the NVLink domain" is ``world_size > nvlink_domain`` of the hardware table
(the guide names B300 > 8 and GB300 <= 72); SM100/SM103 systems the guide does not name
(B200, GB200) follow the same branches; quantisations the SM100 tree does not cover fall
back to the first supported backend in ``FALLBACK_ORDER``. STEP 3's forced methods apply
under attention DP only (bench_moe rejects forced comm without attention DP; attention
TP has nothing to dispatch).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analysis import capabilities as cap
from analysis.columns import BYTES_PER_ELEM
from analysis.derived import activated_tokens_per_rank

FALLBACK_ORDER: tuple[str, ...] = ("TRTLLM", "CUTLASS", "DEEPGEMM", "CUTEDSL")


@dataclass(frozen=True)
class Thresholds:
    """Tree thresholds; defaults are the guide's published values (v1.3.0rc26).

    Units: ``*_tokens_per_rank`` in activated tokens per rank; ``cross_domain_dispatch_kb``
    in KiB; ``small_world_size`` in GPUs. ``use_attention_tp_crossover`` (off in the
    published tree, which says "attention TP always uses TRTLLM") switches attention TP
    to CUTEDSL above ``attention_tp_cutedsl_tokens_per_rank``.
    """

    decode_megamoe_tokens_per_rank: float = 512
    prefill_megamoe_tokens_per_rank: float = 16384
    small_world_size: float = 8
    cross_domain_dispatch_kb: float = 8192
    attention_tp_cutedsl_tokens_per_rank: float = 24576
    sm120_cutedsl_tokens_per_rank: float = 64
    use_attention_tp_crossover: bool = False


@dataclass(frozen=True)
class Deployment:
    """What the tree needs. ``num_tokens`` follows bench_moe: global total under
    attention DP, per-rank (= every rank's) count under attention TP. ``cuda_graph``
    True = decode, False = prefill. ``model`` is optional (gpt-oss on Hopper)."""

    hardware: str
    num_experts: int
    top_k: int
    hidden_size: int
    quant: str
    world_size: int
    attention_dp: bool
    cuda_graph: bool
    num_tokens: int
    model: str | None = None
    # MNNVL proven by the stored measurements (an NVLINK_* comm ran on this hardware);
    # None: the hand table (analysis.capabilities.HARDWARE) decides
    mnnvl: bool | None = None


@dataclass(frozen=True)
class PathStep:
    """One decision: ``step`` (STEP1/STEP2/STEP3/AUTO), the question, the answer taken,
    and when a threshold decided it its name, value and the observed value."""

    step: str
    question: str
    answer: str
    threshold_name: str | None = None
    threshold_value: float | None = None
    observed: float | None = None


@dataclass(frozen=True)
class Recommendation:
    """Tree output. ``comm`` is the canonical method; ``force_comm`` True means it must be
    set with TRTLLM_FORCE_COMM_METHOD, False means leave AUTO (``comm == "AUTO"``) and
    ``expected_comm`` is what the AUTO flow is predicted to pick on this platform."""

    deployment: Deployment
    parallel_mode: str
    moe_ep_size: int
    moe_tp_size: int
    backend: str
    comm: str
    force_comm: bool
    expected_comm: str
    activated_tokens_per_rank: float
    dispatch_kb: float
    path: tuple[PathStep, ...]
    notes: tuple[str, ...] = field(default=())
    in_guide_coverage: bool = True
    # moe_config.use_low_precision_moe_combine of a measured candidate (None: not set)
    low_precision_combine: bool | None = None

    @property
    def phase(self) -> str:
        return "decode" if self.deployment.cuda_graph else "prefill"


def recommend(dep: Deployment, th: Thresholds | None = None) -> Recommendation:
    """Walk STEP 1-3 for ``dep`` with thresholds ``th`` (published values by default)."""
    th = th or Thresholds()
    path: list[PathStep] = []
    notes: list[str] = []
    info = cap.hardware_info(dep.hardware)
    covered = info is not None
    if info is None:
        notes.append(
            f"hardware {dep.hardware!r} not in the table; assumed SM100, 8-GPU NVLink domain"
        )
        info = cap.HardwareInfo(100, 8, False)
    if dep.mnnvl is not None and dep.mnnvl != info.mnnvl:
        notes.append(
            f"MNNVL {'present' if dep.mnnvl else 'absent'} per the stored measurements "
            "(the hand table says otherwise)"
        )
    info = cap.with_mnnvl(info, dep.mnnvl)
    # STEP 1: always EP.
    ep, tp = dep.world_size, 1
    mode = "DEP" if dep.attention_dp else "TEP"
    path.append(
        PathStep("STEP1", "MoE parallelism?", f"EP (moe_ep_size={ep}, moe_tp_size=1, {mode})")
    )
    if not dep.attention_dp:
        notes.append(
            "attention TP: TTP<k>EP<m> hybrids can edge out pure EP at small "
            "token counts; measure them when chasing the last few percent"
        )
    atpr = activated_tokens_per_rank(
        dep.num_tokens, dep.top_k, dep.world_size, dep.attention_dp, ep
    )
    bpe = BYTES_PER_ELEM.get(dep.quant)
    dkb = atpr * dep.hidden_size * bpe / 1024 if bpe is not None else float("nan")
    crosses = dep.world_size > info.nvlink_domain
    backend, ok = _step2(dep, th, info, atpr, crosses, path, notes)
    covered &= ok
    # the one coverage answer (JSON, page, agreement and the YAML comment read it): the
    # guide's sweeps ran on GB300 (up to 72 GPUs) and B300 only
    outside = cap.outside_guide_sweeps(dep.hardware, dep.world_size)
    if outside:
        notes.append(outside)
        covered = False
    comm, force = _step3(dep, th, crosses, dkb, backend, path)
    expected = comm if force else _auto_comm(dep, backend, ep, tp, path)
    return Recommendation(
        dep,
        mode,
        ep,
        tp,
        backend,
        comm,
        force,
        expected,
        atpr,
        dkb,
        tuple(path),
        tuple(notes),
        covered,
    )


def _step2(
    dep: Deployment,
    th: Thresholds,
    info: cap.HardwareInfo,
    atpr: float,
    crosses: bool,
    path: list[PathStep],
    notes: list[str],
) -> tuple[str, bool]:
    """Backend choice; returns (backend, inside the guide's coverage)."""
    sm = info.sm
    arch = f"SM{sm}"
    if sm == 90:
        gpt_oss = bool(dep.model) and "gpt" in (dep.model or "").lower()
        path.append(PathStep("STEP2", "GPU arch?", f"{arch} (Hopper)"))
        path.append(
            PathStep(
                "STEP2",
                "gpt-oss?",
                "yes -> CUTLASS (TRITON deprecated)" if gpt_oss else "no -> CUTLASS",
            )
        )
        return "CUTLASS", True
    if sm in (120, 121):
        path.append(PathStep("STEP2", "GPU arch?", f"{arch} (RTX PRO 6000 / DGX Spark)"))
        small = atpr < th.sm120_cutedsl_tokens_per_rank
        cond = dep.quant == "NVFP4" and small and dep.world_size == 1 and not dep.attention_dp
        path.append(
            PathStep(
                "STEP2",
                "NVFP4, tokens per rank < threshold, ep_size == 1, no attention DP?",
                "yes -> CUTEDSL" if cond else "no -> CUTLASS",
                "sm120_cutedsl_tokens_per_rank",
                th.sm120_cutedsl_tokens_per_rank,
                atpr,
            )
        )
        return ("CUTEDSL" if cond else "CUTLASS"), True
    if sm not in (100, 103):
        path.append(PathStep("STEP2", "GPU arch?", f"{arch}: not in the tree"))
        return _fallback(dep, sm, path, notes), False
    path.append(PathStep("STEP2", "GPU arch?", f"{arch} (Blackwell datacenter)"))
    if not dep.attention_dp:
        if (
            th.use_attention_tp_crossover
            and atpr > th.attention_tp_cutedsl_tokens_per_rank
            and cap.backend_supports("CUTEDSL", sm, dep.quant)
        ):
            path.append(
                PathStep(
                    "STEP2",
                    "attention TP: activated_tokens_per_rank <= threshold?",
                    "no -> CUTEDSL",
                    "attention_tp_cutedsl_tokens_per_rank",
                    th.attention_tp_cutedsl_tokens_per_rank,
                    atpr,
                )
            )
            return "CUTEDSL", True
        path.append(
            PathStep(
                "STEP2",
                "attention?",
                "TP -> TRTLLM",
                "attention_tp_cutedsl_tokens_per_rank",
                th.attention_tp_cutedsl_tokens_per_rank,
                atpr,
            )
        )
        if atpr > th.attention_tp_cutedsl_tokens_per_rank:
            notes.append(
                "activated_tokens_per_rank above the attention-TP crossover: "
                "the guide says CUTEDSL overtakes TRTLLM here"
            )
        return _checked("TRTLLM", dep, sm, path, notes)
    path.append(PathStep("STEP2", "attention?", "DP"))
    path.append(
        PathStep(
            "STEP2",
            "EP within one NVLink domain?",
            "no (crosses)" if crosses else "yes",
            "nvlink_domain",
            info.nvlink_domain,
            dep.world_size,
        )
    )
    covered = True
    if crosses:
        if dep.hardware.upper() != "B300":
            notes.append(
                "EP crosses the NVLink domain: the guide benchmarked this only "
                "on B300 (world_size > 8)"
            )
            covered = False
        pick = {"NVFP4": "CUTEDSL", "W4A8_MXFP4_MXFP8": "TRTLLM"}.get(dep.quant)
        if pick is None:
            path.append(PathStep("STEP2", "quant?", f"{dep.quant}: not in the tree"))
            return _fallback(dep, sm, path, notes), False
        path.append(PathStep("STEP2", "quant?", f"{dep.quant} -> {pick}"))
        return _checked(pick, dep, sm, path, notes)[0], covered
    if dep.quant == "W4A8_MXFP4_MXFP8":
        path.append(PathStep("STEP2", "quant?", "W4A8_MXFP4_MXFP8 -> MEGAMOE_DEEPGEMM"))
        return _checked("MEGAMOE_DEEPGEMM", dep, sm, path, notes)
    if dep.quant != "NVFP4":
        path.append(PathStep("STEP2", "quant?", f"{dep.quant}: not in the tree"))
        return _fallback(dep, sm, path, notes), False
    path.append(PathStep("STEP2", "quant?", "NVFP4"))
    if dep.cuda_graph:
        name, limit = "decode_megamoe_tokens_per_rank", th.decode_megamoe_tokens_per_rank
        path.append(PathStep("STEP2", "phase?", "decode (CUDA graph on)"))
    else:
        name, limit = "prefill_megamoe_tokens_per_rank", th.prefill_megamoe_tokens_per_rank
        path.append(PathStep("STEP2", "phase?", "prefill (CUDA graph off)"))
    if atpr > limit:
        path.append(
            PathStep(
                "STEP2",
                "activated_tokens_per_rank <= threshold?",
                "no -> MEGAMOE_CUTEDSL",
                name,
                limit,
                atpr,
            )
        )
        return _checked("MEGAMOE_CUTEDSL", dep, sm, path, notes)
    if not dep.cuda_graph:
        path.append(
            PathStep(
                "STEP2",
                "activated_tokens_per_rank <= threshold?",
                "yes -> TRTLLM",
                name,
                limit,
                atpr,
            )
        )
        return _checked("TRTLLM", dep, sm, path, notes)
    path.append(
        PathStep("STEP2", "activated_tokens_per_rank <= threshold?", "yes", name, limit, atpr)
    )
    pick = "TRTLLM" if dep.world_size <= th.small_world_size else "CUTEDSL"
    path.append(
        PathStep(
            "STEP2",
            "world_size <= threshold?",
            f"{'yes' if pick == 'TRTLLM' else 'no'} -> {pick}",
            "small_world_size",
            th.small_world_size,
            dep.world_size,
        )
    )
    return _checked(pick, dep, sm, path, notes)


def _checked(
    backend: str, dep: Deployment, sm: int, path: list[PathStep], notes: list[str]
) -> tuple[str, bool]:
    if cap.backend_supports(backend, sm, dep.quant):
        return backend, True
    notes.append(f"{backend} does not support SM{sm} x {dep.quant} in the capability matrix")
    return _fallback(dep, sm, path, notes), False


def _fallback(dep: Deployment, sm: int, path: list[PathStep], notes: list[str]) -> str:
    for b in FALLBACK_ORDER:
        if cap.backend_supports(b, sm, dep.quant):
            path.append(PathStep("STEP2", "fallback: first supported backend", b))
            notes.append(f"outside the guide's tree; fell back to {b}")
            return b
    path.append(PathStep("STEP2", "fallback: first supported backend", "none -> CUTLASS"))
    notes.append(f"no backend in the matrix supports SM{sm} x {dep.quant}")
    return "CUTLASS"


def _step3(
    dep: Deployment, th: Thresholds, crosses: bool, dkb: float, backend: str, path: list[PathStep]
) -> tuple[str, bool]:
    """(comm, force) per STEP 3."""
    if not (crosses and dep.attention_dp) or backend in cap.FUSED_COMM_BACKENDS:
        why = "no" if not crosses else "attention TP / fused backend, nothing to force"
        path.append(PathStep("STEP3", "EP crosses the NVLink domain?", f"{why} -> AUTO"))
        return "AUTO", False
    path.append(PathStep("STEP3", "EP crosses the NVLink domain?", "yes"))
    if not dkb <= th.cross_domain_dispatch_kb:  # NaN (unknown quant) takes this branch
        path.append(
            PathStep(
                "STEP3",
                "dispatch_KB <= threshold?",
                "no -> ALLGATHER",
                "cross_domain_dispatch_kb",
                th.cross_domain_dispatch_kb,
                dkb,
            )
        )
        return "ALLGATHER", True
    path.append(
        PathStep(
            "STEP3",
            "dispatch_KB <= threshold?",
            "yes",
            "cross_domain_dispatch_kb",
            th.cross_domain_dispatch_kb,
            dkb,
        )
    )
    if cap.deepep_low_latency_supported(dep.hidden_size, dep.top_k):
        path.append(
            PathStep(
                "STEP3",
                "DEEPEPLOWLATENCY supported (hidden_size, top_k<=16)?",
                "yes -> DEEPEPLOWLATENCY",
            )
        )
        return "DEEPEPLOWLATENCY", True
    path.append(
        PathStep("STEP3", "DEEPEPLOWLATENCY supported (hidden_size, top_k<=16)?", "no -> AUTO")
    )
    return "AUTO", False


# the values TRTLLM_FORCE_COMM_METHOD accepts: one list, in analysis.capabilities
FORCEABLE_COMMS: tuple[str, ...] = cap.COMM_STRATEGIES


def auto_comm(dep: Deployment, backend: str, ep: int, tp: int) -> tuple[str, str, bool]:
    """What the AUTO flow picks for ``backend`` with MoE EP ``ep`` x TP ``tp`` on the
    deployment's platform: (method, why, forceable). ``forceable`` is False when the
    pick comes before the flow reads TRTLLM_FORCE_COMM_METHOD (fused MEGAMOE backend,
    attention TP or dp_size 1, MoE TP), so a forced method would be ignored. Unknown
    hardware counts as an 8-GPU SM100 domain without MNNVL; NCCL-EP is assumed absent."""
    info = cap.with_mnnvl(
        cap.hardware_info(dep.hardware) or cap.HardwareInfo(100, 8, False), dep.mnnvl
    )
    if backend in cap.FUSED_COMM_BACKENDS:
        return "NONE", "MEGAMOE backend owns the exchange", False
    if not dep.attention_dp or dep.world_size == 1:
        return "NONE", "attention TP or dp_size == 1", False
    if tp != 1:
        return "ALLGATHER", "moe_tp_size != 1", False
    if info.mnnvl and ep == dep.world_size:
        return "NVLINK_ONE_SIDED", "MNNVL and moe_ep_size == world_size", True
    if dep.num_experts % ep != 0:
        return "ALLGATHER", "num_experts % moe_ep_size != 0", True
    if info.mnnvl:
        return "NVLINK_TWO_SIDED", "MNNVL", True
    if dep.quant in cap.BF16_ACTIVATION_QUANTS:
        return "DEEPEP", "BF16 activations (NCCL_EP needs NCCL-EP 0.2+; assumed absent)", True
    return "ALLGATHER", "no MNNVL, activations not BF16", True


def _auto_comm(dep: Deployment, backend: str, ep: int, tp: int, path: list[PathStep]) -> str:
    """Predict the AUTO flow's pick (first method that initialises on this platform)."""
    method, why, _ = auto_comm(dep, backend, ep, tp)
    path.append(PathStep("AUTO", "default comm selection", f"{why} -> {method}"))
    return method
