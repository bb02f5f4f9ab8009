"""A clicked Pareto point's confidence panel says what the Best table (page and API)
says of its workload: whether it is the pick, how much slower it is otherwise, and the
pick's verdict in the same words."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from analysis import columns as C
from analysis.derived import rankable_mask
from dashboard.pages import pareto_detail
from db.store import Store
from ingest.records import UploadMeta
from service.best import best_table
from service.frames import DashData
from service.point_confidence import point_confidence
from service.scope import Scope
from tests.factories import sweeps
from tests.service.stores import PARITY_CELL, seed_tie_sweep

CELL = PARITY_CELL


@pytest.fixture
def data(store: Store) -> DashData:
    """Generated sweeps (failed candidates among them) and the tie sweep: TRTLLM vs
    MEGAMOE_CUTEDSL at 64 and 256 tokens, world size 8 (two configurations a workload)."""
    for seed in (1, 2):
        sweep = sweeps.make_sweep(
            24, seed=seed, model=CELL.model, hardware=CELL.hardware, quant=CELL.quant
        )
        store.ingest([sweep], f"pc-{seed}".encode(), UploadMeta(hardware=CELL.hardware))
    seed_tie_sweep(store)
    return DashData(store, version_ttl=0.0)


def _words(component: Any) -> str:
    out: list[str] = []

    def walk(c: Any) -> None:
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list | tuple):
            for x in c:
                walk(x)
        elif hasattr(c, "children"):
            walk(c.children)

    walk(component)
    return " ".join(out)


def test_the_pick_and_a_slower_point_against_the_best_api(data: DashData) -> None:
    frame = data.cell_frame(CELL)
    ok = frame[rankable_mask(frame)]
    items = best_table(data, Scope(model=CELL.model, hardware=CELL.hardware, quant=CELL.quant))
    table = items.items
    with_runner = table[table["runner_up_backend"].notna()]
    assert len(with_runner), "the fixture has a workload with a runner-up"
    best = with_runner.iloc[0]
    # the winner's own row (the latest of its repeats) and one of another configuration
    keys = (C.WORLD_SIZE, C.NUM_TOKENS, C.CUDA_GRAPH, C.ATTN)
    same = ok
    for k in keys:
        same = same[same[k] == best[k]]
    winner = same[
        (same[C.BACKEND] == best["best_backend"])
        & (same[C.COMM] == best["best_comm"])
        & (same[C.PARALLEL_MODE] == best["best_parallel_mode"])
    ].iloc[-1]
    other = same[same[C.BACKEND] != best["best_backend"]].iloc[0]

    mine = point_confidence(data, CELL, winner)
    assert mine is not None and mine.is_pick and mine.slower_pct == 0.0
    assert (mine.verdict, mine.note) == (best["confidence"], best["confidence_note"])

    theirs = point_confidence(data, CELL, other)
    assert theirs is not None and not theirs.is_pick
    want = (other[C.SCORE_MS] - best["best_score_ms"]) / best["best_score_ms"] * 100
    assert theirs.slower_pct == pytest.approx(want)
    assert theirs.verdict == best["confidence"]

    # the page's detail shows the same words
    point = f"{int(other[C.RUN_ID])}:{int(other[C.CANDIDATE_INDEX])}"
    shown = _words(pareto_detail.render_detail(data, CELL.key, point))
    assert f"{theirs.slower_pct:.1f} % slower than its workload's pick" in shown
    assert best["confidence_note"] in shown


def test_a_failed_candidate_has_no_verdict(data: DashData) -> None:
    frame = data.cell_frame(CELL)
    failed = frame[~rankable_mask(frame)]
    assert len(failed), "the generator stores failed candidates too"
    assert point_confidence(data, CELL, failed.iloc[0]) is None
    nobody = frame[rankable_mask(frame)].iloc[0].copy()
    nobody[C.NUM_TOKENS] = 10**9  # a workload nobody measured
    assert point_confidence(data, CELL, pd.Series(nobody)) is None
