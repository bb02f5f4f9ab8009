"""Data tables from the TensorRT-LLM MoE performance guide (v1.3.0rc26 sweeps), and the
capabilities the stored measurements prove (the tables are the fallback for what was
never measured; a conflict between them is reported by :func:`capability_conflicts`
and the data is used).

Hardware -> SM and NVLink domain, the backend capability matrix (backend x SM x quant),
the DEEPEPLOWLATENCY support rule and which quantisations keep BF16 activations (the
AUTO comm flow needs them for DeepEP / NCCL-EP). Pure data plus tiny lookups.

Interpretation notes (the guide's wording mapped to bench_moe ``quant_algo`` names):
"unquantized" -> BF16/FP16; "FP8 QDQ" -> FP8; "FP8 block-scale" -> FP8_BLOCK_SCALES;
CUTLASS "MXFP4" -> W4A16_MXFP4 (the only MXFP4 weight-only format; we do not assume
CUTLASS runs the W4A8 MXFP4 variants).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.columns import COMM_CANONICAL


@dataclass(frozen=True)
class HardwareInfo:
    """``sm``: compute capability x10 (100 = SM100). ``nvlink_domain``: GPUs reachable
    over NVLink (EP crosses the domain when moe_ep_size exceeds it). ``mnnvl``: the
    multi-node NVLink workspace the NVLINK_* comm methods need."""

    sm: int
    nvlink_domain: int
    mnnvl: bool


HARDWARE: dict[str, HardwareInfo] = {
    "GB200": HardwareInfo(100, 72, True),
    "GB300": HardwareInfo(103, 72, True),
    "B200": HardwareInfo(100, 8, False),
    "B300": HardwareInfo(103, 8, False),
    "H100": HardwareInfo(90, 8, False),
    "H200": HardwareInfo(90, 8, False),
    "GH200": HardwareInfo(90, 1, False),
    "RTX_PRO_6000": HardwareInfo(120, 1, False),
    "DGX_SPARK": HardwareInfo(121, 1, False),
}

_SM100_103 = frozenset({100, 103})
_SM100_107 = frozenset({100, 103, 107})
_SM80_PLUS = frozenset({80, 86, 87, 89, 90, 100, 103, 107, 110, 120, 121})

# backend -> list of (SMs, quants) entries; a backend supports (sm, quant) when any
# entry contains both.
BACKEND_MATRIX: dict[str, tuple[tuple[frozenset[int], frozenset[str]], ...]] = {
    "CUTLASS": (
        (
            _SM80_PLUS,
            frozenset(
                {
                    "BF16",
                    "FP16",
                    "FP8",
                    "FP8_BLOCK_SCALES",
                    "NVFP4",
                    "W4A16_NVFP4",
                    "W4A8_AWQ",
                    "W8A16",
                    "W4A16_MXFP4",
                    "MXFP8",
                }
            ),
        ),
    ),
    "TRTLLM": (
        (
            _SM100_103,
            frozenset(
                {
                    "NVFP4",
                    "FP8_BLOCK_SCALES",
                    "W4A8_NVFP4_FP8",
                    "W4A16_MXFP4",
                    "W4A8_MXFP4_FP8",
                    "W4A8_MXFP4_MXFP8",
                    "BF16",
                }
            ),
        ),
    ),
    "CUTEDSL": (
        (_SM100_107, frozenset({"NVFP4"})),
        (frozenset({107}), frozenset({"BF16"})),
        (frozenset({120, 121}), frozenset({"NVFP4", "W4A16_NVFP4"})),
    ),
    "CUTEDSL_FC12": ((frozenset({107}), frozenset({"NVFP4"})),),
    "DEEPGEMM": ((_SM100_107, frozenset({"FP8_BLOCK_SCALES"})),),
    "DENSEGEMM": ((_SM100_103, frozenset({"NVFP4"})),),
    "MEGAMOE_CUTEDSL": ((_SM100_107, frozenset({"NVFP4"})),),
    "MEGAMOE_DEEPGEMM": ((_SM100_103, frozenset({"W4A8_MXFP4_MXFP8"})),),
    "MARLIN": ((frozenset(range(89, 100)), frozenset({"NVFP4", "W4A16_NVFP4"})),),
    "TRITON": (
        (frozenset({90}), frozenset({"BF16", "FP8", "W4A16_MXFP4", "W4A8_MXFP4_FP8"})),
    ),  # deprecated
}
FUSED_COMM_BACKENDS = frozenset({"MEGAMOE_CUTEDSL", "MEGAMOE_DEEPGEMM"})

DEEPEPLOWLATENCY_HIDDEN_SIZES = frozenset({2048, 2560, 3584, 4096, 5120, 6144, 7168})
DEEPEPLOWLATENCY_MAX_TOP_K = 16

# Quantisations whose MoE activations stay BF16 (weight-only); DeepEP/NCCL-EP in the
# AUTO flow need BF16 activations.
BF16_ACTIVATION_QUANTS = frozenset({"BF16", "FP16", "W4A16_NVFP4", "W4A16_MXFP4", "W8A16"})


# GPUs in one node (one host / one compute tray): GB200/GB300 NVL72 trays hold 4,
# HGX boards 8. A launcher needs it: ranks per node and how many hosts a job spans.
GPUS_PER_NODE: dict[str, int] = {
    "GB200": 4,
    "GB300": 4,
    "B200": 8,
    "B300": 8,
    "H100": 8,
    "H200": 8,
    "GH200": 1,
    "RTX_PRO_6000": 8,
    "DGX_SPARK": 1,
}


def _key(hardware: str) -> str:
    return hardware.upper().replace(" ", "_").replace("-", "_")


def gpus_per_node(hardware: str) -> int | None:
    """GPUs per node of a hardware label (case-insensitive), None when unknown."""
    return GPUS_PER_NODE.get(_key(hardware))


def hardware_info(hardware: str) -> HardwareInfo | None:
    """Table entry for a hardware label (case-insensitive), None when unknown."""
    return HARDWARE.get(_key(hardware))


def backend_supports(backend: str, sm: int, quant: str) -> bool:
    """True when the guide's matrix lists ``backend`` for (sm, quant)."""
    return any(sm in sms and quant in qs for sms, qs in BACKEND_MATRIX.get(backend, ()))


def supported_backends(sm: int, quant: str) -> list[str]:
    """Backends supporting (sm, quant), in the matrix's order."""
    return [b for b in BACKEND_MATRIX if backend_supports(b, sm, quant)]


def deepep_low_latency_supported(hidden_size: int, top_k: int) -> bool:
    """The guide's DEEPEPLOWLATENCY rule: hidden_size in the supported set, top_k <= 16."""
    return hidden_size in DEEPEPLOWLATENCY_HIDDEN_SIZES and top_k <= DEEPEPLOWLATENCY_MAX_TOP_K


# The values TRTLLM_FORCE_COMM_METHOD accepts (the guide's strategy table); NONE is the
# fused MEGAMOE path and AUTO the default, neither is set by the variable.
COMM_STRATEGIES: tuple[str, ...] = (
    "NVLINK_ONE_SIDED",
    "NVLINK_TWO_SIDED",
    "DEEPEP",
    "DEEPEPLOWLATENCY",
    "NCCL_EP",
    "ALLGATHER",
)
_NVLINK_COMMS = frozenset({"NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED"})
GUIDE_HARDWARE = frozenset({"GB300", "B300"})  # what the guide's sweeps covered


def outside_guide_sweeps(hardware: str, world_size: int) -> str | None:
    """Why a known hardware x world size lies outside the guide's sweeps (GB300 up to
    72 GPUs, B300), None when inside or when the hardware is not in the table (the
    tree says that itself)."""
    hw = _key(hardware)
    if hw not in HARDWARE:
        return None
    if hw not in GUIDE_HARDWARE:
        return f"the guide's sweeps ran on GB300 and B300, not {hw}"
    if hw == "GB300" and world_size > 72:
        return "GB300 beyond world_size 72 was not benchmarked in the guide"
    return None


@dataclass(frozen=True)
class ExportCheck:
    """What stands between a configuration and a deployment. ``errors``: TensorRT-LLM
    cannot run it as written (no download is offered, the API answers 422);
    ``warnings``: it runs, but outside what the guide's capability matrix or sweeps
    cover (the export carries them as comments)."""

    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def check_export(
    backend: str,
    comm: str,
    quant: str,
    hardware: str,
    *,
    forced: bool,
    hidden_size: int | None = None,
    top_k: int | None = None,
    world_size: int | None = None,
    nvlink_ran: dict[str, list[int]] | None = None,
) -> ExportCheck:
    """Check an exported backend x comm x quant x GPU against the guide's tables.

    Errors: a backend not in :data:`BACKEND_MATRIX` (``moe_config.backend`` has no such
    value, e.g. a name from a non-TensorRT-LLM sweep); a forced comm that is not one of
    :data:`COMM_STRATEGIES`. Warnings: hardware not in :data:`HARDWARE` (nothing can be
    checked); the backend not listed for the GPU's SM x quant; a forced NVLINK_* method
    on hardware without MNNVL; a forced DEEPEPLOWLATENCY outside its hidden_size/top_k
    rule. Coverage (hardware or world size outside the guide's sweeps) is the tree's
    ``in_guide_coverage``, one answer everywhere (``analysis.export.export_check``).
    ``nvlink_ran``: the NVLINK_* methods that ran on this hardware in the stored
    measurements and their world sizes (:func:`mnnvl_evidence`): where they contradict
    the hand table's "no MNNVL", the warning names the conflict and the data is used.
    ``comm`` is canonical (``columns.COMM_CANONICAL``); ``forced``: it is set with
    TRTLLM_FORCE_COMM_METHOD."""
    errors: list[str] = []
    warnings: list[str] = []
    b = backend.upper()
    if b not in BACKEND_MATRIX:
        errors.append(
            f"backend {backend} is not a TensorRT-LLM MoE backend: moe_config.backend takes "
            f"{', '.join(BACKEND_MATRIX)} (the guide's capability matrix); this measurement "
            "came from another framework's sweep and cannot be deployed with trtllm-serve"
        )
    if forced and comm not in COMM_STRATEGIES:
        errors.append(
            f"TRTLLM_FORCE_COMM_METHOD={comm} is not a TensorRT-LLM strategy: it takes "
            f"{', '.join(COMM_STRATEGIES)}"
        )
    if comm.upper() not in COMM_CANONICAL:
        warnings.append(
            f"comm {comm} is not a TensorRT-LLM communication strategy "
            f"({', '.join(COMM_CANONICAL)}): the export cannot reproduce it"
        )
    info = hardware_info(hardware)
    if info is None:
        warnings.append(
            f"hardware {hardware} is not in the guide's tables: backend and comm support "
            "could not be checked"
        )
    else:
        if b in BACKEND_MATRIX and not backend_supports(b, info.sm, quant):
            listed = ", ".join(supported_backends(info.sm, quant)) or "none"
            warnings.append(
                f"{b} is not listed for SM{info.sm} x {quant} in the guide's capability "
                f"matrix (listed: {listed}); it was measured, check your TensorRT-LLM version"
            )
        if comm in _NVLINK_COMMS and not info.mnnvl:
            if nvlink_ran:
                ran = "; ".join(
                    f"{c} at world size {', '.join(map(str, ws))}" for c, ws in nvlink_ran.items()
                )
                warnings.append(
                    f"capability conflict: the hand table lists no MNNVL for {hardware}, but "
                    f"{ran} ran successfully in the stored measurements; the data is used"
                )
            elif forced:
                warnings.append(
                    f"{comm} needs MNNVL, which the hand table does not list for {hardware} "
                    "and no stored measurement shows"
                )
    if (
        forced
        and comm == "DEEPEPLOWLATENCY"
        and hidden_size is not None
        and top_k is not None
        and not deepep_low_latency_supported(hidden_size, top_k)
    ):
        warnings.append(
            f"DEEPEPLOWLATENCY supports hidden_size in {sorted(DEEPEPLOWLATENCY_HIDDEN_SIZES)} "
            f"and top_k <= {DEEPEPLOWLATENCY_MAX_TOP_K}; this model has {hidden_size} / {top_k}"
        )
    return ExportCheck(tuple(errors), tuple(warnings))


# --------------------------------------------------------------------------- from the data
# What ran (status success) on which hardware x world size x quant: the facts a stored
# measurement proves. The tables above are the fallback for what was never measured.
CAPABILITY_COLUMNS: tuple[str, ...] = (
    "hardware",
    "world_size",
    "quant",
    "backend",
    "comm",
    "n_success",
    "n_runs",
)
NVLINK_COMMS = frozenset({"NVLINK_ONE_SIDED", "NVLINK_TWO_SIDED"})


def measured_capabilities(frame: pd.DataFrame) -> pd.DataFrame:
    """Successful candidates of a candidate frame counted per hardware (upper case) x
    world_size x quant x backend x comm (the comm that ran; rows that recorded none are
    left out of the comm but keep their backend as comm "AUTO"): ``CAPABILITY_COLUMNS``,
    sorted by the key. The same aggregate ``db.capabilities`` computes in the database."""
    need = ("hardware", "world_size", "quant", "backend", "status")
    if frame.empty or any(c not in frame for c in need):
        return pd.DataFrame(columns=list(CAPABILITY_COLUMNS))
    ok = (frame["status"].astype("string") == "success").to_numpy(dtype=bool, na_value=False)
    keys = list(CAPABILITY_COLUMNS[:5])
    # first the distinct (key, run) pairs on the stored values (a cell has ~1M rows and
    # a few thousand pairs), then the key columns as text -- where that merges two
    # stored spellings, the runs are counted once
    cols = [c for c in (*keys, "run_id") if c in frame]
    raw = frame[cols][ok] if "run_id" in frame else frame[cols][ok].assign(run_id=0)
    if "comm" not in raw:
        raw = raw.assign(comm=pd.Series(pd.NA, index=raw.index, dtype="string"))
    pairs = (
        raw.groupby([*keys, "run_id"], dropna=False, observed=True, sort=False)
        .size()
        .rename("n")
        .reset_index()
    )
    sub = pd.DataFrame(
        {
            "hardware": pairs["hardware"].astype("string").str.upper(),
            "world_size": pairs["world_size"].astype("Int64"),
            "quant": pairs["quant"].astype("string"),
            "backend": pairs["backend"].astype("string").str.upper(),
            "comm": pairs["comm"].astype("string").fillna("AUTO"),
            "run_id": pairs["run_id"],
            "n": pairs["n"],
        }
    )
    out = (
        sub.groupby(keys, dropna=False, observed=True, sort=True)
        .agg(n_success=("n", "sum"), n_runs=("run_id", "nunique"))
        .reset_index()
    )
    return normalise_capabilities(out)


def normalise_capabilities(caps: pd.DataFrame) -> pd.DataFrame:
    """``caps`` with ``CAPABILITY_COLUMNS`` in order and plain dtypes, sorted by the key."""
    if caps.empty:
        return pd.DataFrame(columns=list(CAPABILITY_COLUMNS))
    out = caps[list(CAPABILITY_COLUMNS)].copy()
    for col in ("hardware", "quant", "backend", "comm"):
        out[col] = out[col].astype(str)
    out["hardware"] = out["hardware"].str.upper()
    for col in ("world_size", "n_success", "n_runs"):
        out[col] = out[col].astype("int64")
    return out.sort_values(list(CAPABILITY_COLUMNS[:5]), kind="stable").reset_index(drop=True)


def mnnvl_evidence(caps: pd.DataFrame, hardware: str) -> dict[str, list[int]]:
    """NVLINK_* method -> the world sizes (> 1, ascending) where it ran successfully on
    ``hardware`` in ``caps``; empty when it never did."""
    if caps.empty:
        return {}
    hw = caps[(caps["hardware"] == _key(hardware)) & caps["comm"].isin(NVLINK_COMMS)]
    hw = hw[hw["world_size"] > 1]
    return {
        str(comm): sorted({int(w) for w in g["world_size"]})
        for comm, g in hw.groupby("comm", sort=True)
    }


def measured_mnnvl(caps: pd.DataFrame) -> dict[str, int]:
    """Hardware -> the largest world size at which an NVLINK_* comm ran on it (the
    measurement proves the MNNVL workspace up to that size); hardware never seen with
    one is absent (the hand table decides)."""
    if caps.empty:
        return {}
    hit = caps[caps["comm"].isin(NVLINK_COMMS) & (caps["world_size"] > 1)]
    return {str(h): int(g["world_size"].max()) for h, g in hit.groupby("hardware", sort=True)}


def mnnvl_at(proven: dict[str, int] | None, hardware: str, world_size: int) -> bool | None:
    """True when the data proves MNNVL on ``hardware`` at ``world_size`` (an NVLINK_*
    comm ran there at this size or larger); None: the hand table decides."""
    top = (proven or {}).get(_key(hardware))
    return True if top is not None and world_size <= top else None


def capability_conflicts(caps: pd.DataFrame) -> pd.DataFrame:
    """Where the stored measurements contradict the hand tables, one row each:
    ``hardware``, ``subject`` (``mnnvl`` or ``backend <NAME> x <quant>``), ``table``
    (what the table says), ``data`` (what ran, with world sizes and counts) and
    ``used`` (which one the answers use: always the data). Sorted by hardware, subject."""
    rows: list[dict[str, str]] = []
    for hw in sorted({str(h) for h in caps.get("hardware", pd.Series(dtype=str))}):
        info = hardware_info(hw)
        if info is None:
            continue
        ev = mnnvl_evidence(caps, hw)
        if ev and not info.mnnvl:
            ran = "; ".join(f"{c} at world size {', '.join(map(str, ws))}" for c, ws in ev.items())
            rows.append(
                {
                    "hardware": hw,
                    "subject": "mnnvl",
                    "table": f"the hand table lists no MNNVL for {hw}",
                    "data": f"{ran} ran successfully (status success)",
                    "used": "data",
                }
            )
        sub = caps[caps["hardware"] == hw]
        for (backend, quant), g in sub.groupby(["backend", "quant"], sort=True):
            b = str(backend)
            if b in BACKEND_MATRIX and not backend_supports(b, info.sm, str(quant)):
                rows.append(
                    {
                        "hardware": hw,
                        "subject": f"backend {b} x {quant}",
                        "table": f"the guide's matrix does not list {b} for SM{info.sm} x {quant}",
                        "data": f"{int(g['n_success'].sum())} successful rows at world size "
                        + ", ".join(str(w) for w in sorted({int(w) for w in g["world_size"]})),
                        "used": "data",
                    }
                )
    out = pd.DataFrame(rows, columns=["hardware", "subject", "table", "data", "used"])
    return out.sort_values(["hardware", "subject"], kind="stable").reset_index(drop=True)


def with_mnnvl(info: HardwareInfo, mnnvl: bool | None) -> HardwareInfo:
    """``info`` with MNNVL from the data when known (None: the table's value)."""
    return info if mnnvl is None else HardwareInfo(info.sm, info.nvlink_domain, mnnvl)
