"""Pieces the bench scripts share: model shapes, the synthetic run row, and starting a
``moedash serve`` child to time it from a browser."""

from __future__ import annotations

import socket
import time
from typing import Any

from analysis import columns as C
from ingest.records import RUN_EXTRA_KEYS

# model -> (num_experts, top_k, hidden_size, intermediate_size)
MODELS: dict[str, tuple[int, int, int, int]] = {
    "deepseek_v4_pro": (384, 6, 7168, 3072),
    "kimi_k2": (384, 8, 7168, 2048),
    "glm_5": (256, 8, 6144, 2048),
    "qwen3_8": (512, 10, 8192, 2048),
}


def run_dict(
    model: str, hardware: str, quant: str, ws: int, run_date: str | None = None
) -> dict[str, Any]:
    """One synthetic bench_moe run row for ``model`` (shape from :data:`MODELS`) on
    ``hardware`` x ``quant`` x world size ``ws``; every other run column is None."""
    e, k, h, i = MODELS[model]
    run: dict[str, Any] = {c: None for c in C.RUN_COLUMNS if c != C.RUN_ID}
    run.update({c: None for c in RUN_EXTRA_KEYS})
    run.update(
        {
            C.SOURCE_FORMAT: "bench_moe",
            C.MODEL: model,
            C.NUM_EXPERTS: e,
            C.TOP_K: k,
            C.HIDDEN_SIZE: h,
            C.INTERMEDIATE_SIZE: i,
            C.QUANT: quant,
            C.HARDWARE: hardware,
            C.WORLD_SIZE: ws,
            C.TRTLLM_VERSION: "bench",
            C.RUN_DATE: run_date,
            C.SYNTHETIC: True,
        }
    )
    return run


def free_port() -> int:
    """A TCP port on 127.0.0.1 free at the time of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(base: str, timeout_s: float = 120.0) -> None:
    """Poll ``{base}/api/v1/health`` every 0.3 s until it answers 200; RuntimeError after
    ``timeout_s`` seconds."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(base + "/api/v1/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.3)
