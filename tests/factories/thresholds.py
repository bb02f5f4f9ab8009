"""Candidate frames with known threshold answers (our own invented values).

Every frame is attention DP, NVFP4, CUDA graph on (decode) on GB300 unless a builder says
otherwise, with ``top_k == world_size == 8`` so ``activated_tokens_per_rank ==
num_tokens``. A *vote* is a workload whose fastest row is (X) or is not the option the
tree switches to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from analysis import columns as C
from db.store import Store
from ingest.records import Sweep, UploadMeta
from tests.factories import make_candidates
from tests.factories.sweeps import make_run

FUSED = "MEGAMOE_CUTEDSL"
GRID: tuple[int, ...] = tuple(2**i for i in range(4, 16))  # 16 .. 32768 tokens
BASE: dict[str, Any] = {C.TOP_K: 8, C.WORLD_SIZE: 8, C.HARDWARE: "GB300", C.SYNTHETIC: False}


def workload(winner: str, others: Sequence[str], **values: Any) -> list[dict[str, Any]]:
    """One workload: ``winner`` at 1.0 ms, then ``others`` at 1.1, 1.2, ... ms."""
    rows = []
    for i, backend in enumerate((winner, *others)):
        comm = "NONE" if backend.startswith("MEGAMOE_") else values.get(C.COMM, "NVLINK_ONE_SIDED")
        rows.append({**values, C.BACKEND: backend, C.COMM: comm, C.SCORE_MS: 1.0 + 0.1 * i})
    return rows


def decode_frame(
    switches: Mapping[str, float], grid: Iterable[int] = GRID, **values: Any
) -> pd.DataFrame:
    """Decode sweeps: per model, the fused backend is rank 1 where activated tokens per
    rank exceed its switch, TRTLLM (then CUTEDSL) elsewhere."""
    rows: list[dict[str, Any]] = []
    for model, switch in switches.items():
        for n in grid:
            common = {**BASE, C.MODEL: model, C.NUM_TOKENS: n, **values}
            if n > switch:
                rows += workload(FUSED, ("TRTLLM", "CUTEDSL"), **common)
            else:
                rows += workload("TRTLLM", (FUSED, "CUTEDSL"), **common)
    return make_candidates(rows)


def top3_never_both(model: str, switch: float, grid: Iterable[int] = GRID) -> pd.DataFrame:
    """Published-style top 3 per workload where TRTLLM and the fused backend never appear
    together: below the switch TRTLLM, CUTLASS, CUTEDSL; above it the fused backend,
    CUTEDSL and a backend the guide does not know (NEWGEMM_X)."""
    rows: list[dict[str, Any]] = []
    for n in grid:
        common = {**BASE, C.MODEL: model, C.NUM_TOKENS: n}
        if n > switch:
            rows += workload(FUSED, ("CUTEDSL", "NEWGEMM_X"), **common)
        else:
            rows += workload("TRTLLM", ("CUTLASS", "CUTEDSL"), **common)
    return make_candidates(rows)


LOW_C = (
    16,
    24,
    32,
    48,
    64,
    96,
    128,
    160,
    192,
    224,
    256,
    288,
    320,
    352,
    384,
    416,
    448,
    480,
    496,
    512,
)
HIGH = (2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, 20480)
HIGH += (24576, 28672, 32768)


def regression_frame() -> pd.DataFrame:
    """The issue's regression shape: model_a and model_b switch to fused above 2048
    tokens per rank, model_c above 512 (the published value). Pooled, the derived decode
    threshold lands near 2290, which sends model_c's 640-1280 workloads to TRTLLM: its
    agreement falls from 29/40 = 72.5 % (published) to 25/40 = 62.5 % (derived). In 11
    of model_c's low workloads CUTLASS is rank 1 (a miss for every threshold set)."""
    rows: list[dict[str, Any]] = []
    for model in ("model_a", "model_b"):
        for n in (*LOW_C, 640, 768, 1024, 1280, 1536, 2048):
            rows += workload("TRTLLM", (FUSED,), **BASE, model=model, num_tokens=n)
        for n in HIGH:
            rows += workload(FUSED, ("TRTLLM",), **BASE, model=model, num_tokens=n)
    for i, n in enumerate(LOW_C):
        winner = "CUTLASS" if i < 11 else "TRTLLM"
        rows += workload(
            winner, ("TRTLLM", FUSED) if i < 11 else (FUSED,), **BASE, model="model_c", num_tokens=n
        )
    for n in (640, 768, 1024, 1280, *HIGH):
        rows += workload(FUSED, ("TRTLLM",), **BASE, model="model_c", num_tokens=n)
    return make_candidates(rows)


def world_size_frame(models: Sequence[str] = ("m1", "m2", "m3")) -> pd.DataFrame:
    """Decode at small activated tokens per rank on GB300: TRTLLM is rank 1 at world size
    4, 8 and 16, CUTEDSL at 32, in every model. The switch lies in [16, 32): derived
    sqrt(16 * 32) = 22.6 GPUs against the published 8."""
    rows: list[dict[str, Any]] = []
    for model in models:
        for ws in (4, 8, 16, 32):
            for n in (16, 32, 64, 128, 256):
                common = {**BASE, C.MODEL: model, C.WORLD_SIZE: ws, C.NUM_TOKENS: n}
                if ws == 32:
                    rows += workload("CUTEDSL", ("TRTLLM",), **common)
                else:
                    rows += workload("TRTLLM", ("CUTEDSL",), **common)
    return make_candidates(rows)


def attention_tp_frame(switches: Mapping[str, float]) -> pd.DataFrame:
    """Attention TP (TEP) decode sweeps: per model CUTEDSL is rank 1 above its switch,
    TRTLLM at or below it (num_tokens 64 .. 1M)."""
    rows: list[dict[str, Any]] = []
    for model, switch in switches.items():
        for n in (2**i for i in range(6, 21)):
            common = {
                **BASE,
                C.MODEL: model,
                C.NUM_TOKENS: n,
                C.PARALLEL_MODE: "TEP",
                C.COMM: "NONE",
            }
            if n > switch:
                rows += workload("CUTEDSL", ("TRTLLM",), **common)
            else:
                rows += workload("TRTLLM", ("CUTEDSL",), **common)
    return make_candidates(rows)


def store_frame(store: Store, frame: pd.DataFrame, tag: str = "t") -> list[int]:
    """Ingest ``frame`` as one run per (model, hardware, quant, world size, dispatch)
    (bytes unique per run); returns the run ids."""
    ids = []
    keys = [C.MODEL, C.HARDWARE, C.QUANT, C.WORLD_SIZE]
    for i, (key, part) in enumerate(frame.groupby(keys, sort=True)):
        model, hardware, quant, ws = key
        first = part.iloc[0]
        run = make_run(
            model=model,
            hardware=hardware,
            quant=quant,
            world_size=int(ws),
            top_k=int(first[C.TOP_K]),
            num_experts=int(first[C.NUM_EXPERTS]),
            hidden_size=int(first[C.HIDDEN_SIZE]),
            synthetic=bool(first[C.SYNTHETIC]),
        )
        cands = part[list(C.CANDIDATE_COLUMNS)].copy()
        cands[C.CANDIDATE_INDEX] = range(len(cands))
        raw = f"{tag}-{i}-{key}".encode()
        res = store.ingest(
            [Sweep(key="", run=run, candidates=cands.reset_index(drop=True))],
            raw,
            UploadMeta(hardware=str(hardware)),
        )
        ids.append(res.runs[0].run_id)
    return ids


def seed_threshold_store(store: Store) -> list[int]:
    """The regression shape (model_a, model_b, model_c on GB300) plus model_d on B300
    switching at 700 tokens per rank, one run per model; returns the run ids."""
    frame = pd.concat(
        [regression_frame(), decode_frame({"model_d": 700}, hardware="B300")], ignore_index=True
    )
    return store_frame(store, frame, "thresholds")
