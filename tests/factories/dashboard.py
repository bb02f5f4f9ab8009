"""Data for the dashboard tests: a tiny sweep with a known Pareto frontier, a second
cell from ``tests.factories.sweeps``, and hostile strings where uploads can put text.

Known answers (cell deepseek_v4_pro · GB300 · NVFP4, world size 8, decode):
candidates 1 (MEGAMOE_CUTEDSL, 256 tokens, 0.8 ms) and 2 (TRTLLM, 1024 tokens, 2.0 ms)
form the latency / tokens-per-s frontier; 0 and 3 are dominated; 4 is prefill; 5 failed,
6 skipped. With backend=TRTLLM only, the decode frontier is 0 and 2.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd

from analysis import columns as C
from db.store import Store
from ingest.records import Sweep, UploadMeta
from tests import factories
from tests.factories import sweeps

HOSTILE = "<script>alert('x')</script> **bold** [link](javascript:alert(1))"
KNOWN_FRONTIER = {1, 2}
KNOWN_FRONTIER_TRTLLM = {0, 2}


def known_candidates() -> pd.DataFrame:
    per_rank = json.dumps(
        {
            "per_rank": {"rank0": [0.8, 0.81], "rank1": [0.79, 0.9]},
            "status_per_rank": {"rank0": "success", "rank1": "success"},
        }
    )
    rows: list[dict[str, Any]] = [
        {C.NUM_TOKENS: 256, C.BACKEND: "TRTLLM", C.SCORE_MS: 1.0},
        {
            C.NUM_TOKENS: 256,
            C.BACKEND: "MEGAMOE_CUTEDSL",
            C.COMM: "NONE",
            C.SCORE_MS: 0.8,
            C.PER_RANK_JSON: per_rank,
            C.OUTLIER_COUNT: 1,
        },
        {C.NUM_TOKENS: 1024, C.BACKEND: "TRTLLM", C.SCORE_MS: 2.0},
        {C.NUM_TOKENS: 1024, C.BACKEND: "MEGAMOE_CUTEDSL", C.COMM: "NONE", C.SCORE_MS: 3.0},
        {C.NUM_TOKENS: 256, C.BACKEND: "TRTLLM", C.CUDA_GRAPH: False, C.SCORE_MS: 1.5},
        {
            C.NUM_TOKENS: 4096,
            C.BACKEND: "TRTLLM",
            C.STATUS: "failed",
            C.FAILURE_CATEGORY: "timed_phase_error",
            C.SKIP_REASON: HOSTILE,
        },
        {
            C.NUM_TOKENS: 4096,
            C.BACKEND: "CUTEDSL",
            C.STATUS: "skipped",
            C.FAILURE_CATEGORY: "pruned_unsupported",
            C.SKIP_REASON: "not supported",
        },
    ]
    frame = factories.make_candidates([{C.CANDIDATE_INDEX: i, **r} for i, r in enumerate(rows)])
    return frame[list(C.CANDIDATE_COLUMNS)]


def known_sweep() -> Sweep:
    # Parsers copy upload metadata onto the run; these Sweeps are built by hand, so the
    # run carries it directly.
    run = sweeps.make_run(
        world_size=8,
        synthetic=False,
        trtllm_version="v1.3.0rc26",
        run_date="2026-09-13",
        notes=HOSTILE,
        ci_url="javascript:alert(1)",
    )
    return Sweep(key="", run=run, candidates=known_candidates())


def seed_store(store: Store) -> dict[str, int]:
    """Store the known sweep (run "known") and a 40-candidate sweep of another cell
    (run "other", kimi_k2 · B300 · NVFP4, synthetic). Returns their run ids."""
    known = store.ingest(
        [known_sweep()],
        b"known-sweep",
        UploadMeta(hardware="GB300", notes=HOSTILE, filename=HOSTILE, ci_url="javascript:alert(1)"),
    )
    other = store.ingest(
        [
            sweeps.make_sweep(
                40,
                seed=3,
                model="kimi_k2",
                hardware="B300",
                num_experts=384,
                top_k=8,
                synthetic=True,
                ci_url="https://ci.example/run/1",
            )
        ],
        b"other-sweep",
        UploadMeta(hardware="B300", synthetic=True, ci_url="https://ci.example/run/1"),
    )
    return {"known": known.runs[0].run_id, "other": other.runs[0].run_id}


def walk(component: Any) -> Iterator[Any]:
    """Every component and string in a Dash tree, the elements of server-rendered
    markup (``dashboard.static_html``) included."""
    yield component
    for node in getattr(component, "static_tree", None) or ():
        yield from walk(node)
    children = getattr(component, "children", None)
    if isinstance(children, list | tuple):
        for child in children:
            yield from walk(child)
    elif children is not None:
        yield from walk(children)


def by_id(component: Any, cid: str) -> Any:
    """The first component in the tree with ``id == cid``, or None."""
    found = [c for c in walk(component) if getattr(c, "id", None) == cid]
    return found[0] if found else None


def by_testid(component: Any, test_id: str) -> Any:
    """The first component in the tree with ``data-testid == test_id``, or None."""
    found = [c for c in walk(component) if getattr(c, "data-testid", None) == test_id]
    return found[0] if found else None


def text(component: Any) -> str:
    """Every string in the tree, joined by spaces."""
    return " ".join(c for c in walk(component) if isinstance(c, str))


def callback(app: Any, output: str) -> Callable[..., Any]:
    """The undecorated function of the callback registered on ``app`` with ``output``
    (``"component.prop"``) among its outputs."""
    entry = next(v for k, v in app.callback_map.items() if output in k.split(".."))
    fn: Callable[..., Any] = entry["callback"].__wrapped__
    return fn
