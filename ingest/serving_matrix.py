"""The InferenceX serving matrix: master YAML → serving points.

The matrix is ``inferencex/configs/nvidia-master.yaml`` and
``inferencex/configs/deprecated/nvidia-*-master.yaml`` (see
``shared/reference/serving_configs.md``; AMD masters carry no TensorRT-LLM lane and no
``CONFIG_FILE``, so they are not read). A *serving point* is one dashboard dot: (master
entry, scenario, ISL/OSL, search-space row, one concurrency). Points of every framework
are parsed; only TensorRT-LLM lanes (``dynamo-trt`` / ``trt``) map to ``bench_moe``
(``analysis.serving_map``). Pure functions over already-read text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import yaml

TRTLLM_FRAMEWORKS = frozenset({"dynamo-trt", "trt"})


@dataclass(frozen=True)
class WorkerLayout:
    """One worker pool of a search-space row (``prefill`` / ``decode``, or single-node)."""

    num_workers: int
    tp: int
    ep: int
    dp_attn: bool
    pp: int = 1
    dcp_size: int = 1
    pcp_size: int = 1


@dataclass(frozen=True)
class ServingPoint:
    """One (entry, scenario, ISL/OSL, search-space row, concurrency) of the matrix."""

    source: str  # master file, relative to the data dir
    entry: str
    model: str  # HF id or alias as the master writes it
    model_prefix: str
    precision: str
    hardware: str  # GB200, GB300, B200, B300, H100, H200, ... (from `runner`)
    runner: str
    framework: str
    image: str
    multinode: bool
    disagg: bool
    scenario: str  # fixed-seq-len | agentic-coding
    isl: int | None  # None for agentic-coding
    osl: int | None
    conc: int
    spec_decoding: str  # "mtp" | "none"
    row_index: int  # index of the search-space row inside its scenario block
    prefill: WorkerLayout | None
    decode: WorkerLayout | None
    single: WorkerLayout | None  # single-node lanes: tp/ep/dp-attn of the one engine
    config_file: str | None
    settings: tuple[tuple[str, str], ...] = ()  # additional-settings other than CONFIG_FILE

    @property
    def point_id(self) -> str:
        """Stable id: hash of every parsed field (re-import gives the same id)."""
        return digest(json.dumps(asdict(self), sort_keys=True, default=str))[:16]

    @property
    def is_trtllm(self) -> bool:
        return self.framework in TRTLLM_FRAMEWORKS

    @property
    def is_current(self) -> bool:
        """From the current master (not ``configs/deprecated/``)."""
        return "/deprecated/" not in f"/{self.source}"


def hardware_from_runner(runner: str) -> str:
    """``cluster:gb300-nv`` -> ``GB300``; ``h200-multinode`` -> ``H200``."""
    return runner.split(":")[-1].split("-")[0].upper()


def expand_concurrency(row: Mapping[str, Any]) -> list[int]:
    """``conc-list`` as given, or ``conc-start`` doubling up to ``conc-end`` (CONFIGS.md)."""
    if "conc-list" in row:
        return [int(c) for c in row["conc-list"]]
    start, end = int(row["conc-start"]), int(row["conc-end"])
    if start <= 0 or end < start:
        raise ValueError(f"conc-start/conc-end: bad range {start}..{end}")
    out, c = [], start
    while c <= end:
        out.append(c)
        c *= 2
    return out


def _layout(block: Mapping[str, Any]) -> WorkerLayout:
    return WorkerLayout(
        num_workers=int(block.get("num-worker", 1)),
        tp=int(block["tp"]),
        ep=int(block.get("ep", 1)),
        dp_attn=bool(block.get("dp-attn", False)),
        pp=int(block.get("pp", 1)),
        dcp_size=int(block.get("dcp-size", 1)),
        pcp_size=int(block.get("pcp-size", 1)),
    )


def _settings(row: Mapping[str, Any]) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    config_file: str | None = None
    other: list[tuple[str, str]] = []
    for role in ("prefill", "decode"):
        block = row.get(role) or {}
        for item in block.get("additional-settings") or []:
            key, _, value = str(item).partition("=")
            if key == "CONFIG_FILE":
                config_file = value
            else:
                other.append((f"{role}.{key}", value))
    return config_file, tuple(other)


def load_matrix(text: str, source: str) -> list[ServingPoint]:
    """Every serving point of one master YAML, in file order.

    ``source`` is recorded on each point (the master's path relative to the data dir).
    Raises ``ValueError`` naming the entry when a required key is missing.
    """
    doc = yaml.safe_load(text) or {}
    points: list[ServingPoint] = []
    for entry, e in doc.items():
        try:
            points.extend(_entry_points(entry, e, source))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{source}: entry {entry!r}: missing or bad key {exc}") from exc
    return points


def _entry_points(entry: str, e: Mapping[str, Any], source: str) -> Iterable[ServingPoint]:
    common = dict(
        source=source,
        entry=entry,
        model=str(e["model"]),
        model_prefix=str(e["model-prefix"]),
        precision=str(e["precision"]),
        hardware=hardware_from_runner(str(e["runner"])),
        runner=str(e["runner"]),
        framework=str(e["framework"]),
        image=str(e.get("image", "")),
        multinode=bool(e.get("multinode", False)),
        disagg=bool(e.get("disagg", False)),
    )
    for scenario, blocks in (e.get("scenarios") or {}).items():
        for block in blocks:
            isl = block.get("isl")
            osl = block.get("osl")
            for i, row in enumerate(block["search-space"]):
                config_file, settings = _settings(row)
                is_pd = "prefill" in row and "decode" in row
                for conc in expand_concurrency(row):
                    yield ServingPoint(
                        **common,  # type: ignore[arg-type]
                        scenario=str(scenario),
                        isl=None if isl is None else int(isl),
                        osl=None if osl is None else int(osl),
                        conc=conc,
                        spec_decoding=str(row.get("spec-decoding", "none")),
                        row_index=i,
                        prefill=_layout(row["prefill"]) if is_pd else None,
                        decode=_layout(row["decode"]) if is_pd else None,
                        single=None if is_pd else _layout(row),
                        config_file=config_file,
                        settings=settings,
                    )


def no_config_reason(point: ServingPoint) -> str:
    if not point.multinode:
        return (
            "single-node lane: launched by benchmarks/single_node/*.sh, whose max-batch and "
            "CUDA-graph settings are not in the shared data"
        )
    if point.settings:
        return (
            "no CONFIG_FILE: legacy env settings (" + ", ".join(k for k, _ in point.settings) + ")"
        )
    return "no CONFIG_FILE in prefill.additional-settings"


def digest(text: str) -> str:
    """Hex SHA-256 of ``text`` (UTF-8): the ids and content hashes of the import."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
