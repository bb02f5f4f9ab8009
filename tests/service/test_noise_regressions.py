"""The upload regression check with the noise model, through a real store: a re-run of
the base software as a new version reports nothing conclusive (its launch-bound rows
come back inconclusive), an injected +25 % is reported on exactly the injected rows."""

from __future__ import annotations

import pandas as pd

from db.store import Store
from ingest.records import UploadMeta
from service.regressions import regressions_for_runs
from tests.factories import repeat_sweeps as R


def _seed(store: Store, frames: list[pd.DataFrame]) -> list[int]:
    ids = []
    for frame in frames:
        raw = f"noise-{int(frame['run_id'].iat[0])}".encode()  # one upload's bytes per run
        res = store.ingest([R.as_sweep(frame)], raw, UploadMeta(hardware=R.HARDWARE))
        ids.append(res.runs[0].run_id)
    return ids


def test_regressions_use_the_slices_history(store: Store) -> None:
    t = R.truth(2)
    _seed(store, R.history_runs(t, 2))
    repeat, _ = R.head_run(t, 2)
    [head] = _seed(store, [repeat])
    both = ("regression", "inconclusive")
    found = regressions_for_runs(store, [head], verdicts=both)
    assert not [f for f in found if f["verdict"] == "regression"]
    maybe = [f for f in found if f["verdict"] == "inconclusive"]
    # mostly the launch-bound rows (a quiet row may also move just past 5 %)
    bound = [f for f in maybe if f["num_tokens"] in R.LAUNCH_BOUND_TOKENS]
    assert len(bound) >= 0.8 * len(maybe) and all(f["noise_pct"] > 100 for f in bound)
    assert all(f["noise_pct"] > f["baseline_change_pct"] > 5 for f in maybe)
    assert {f["base_version"] for f in found} == {R.BASE}
    assert {f["baseline_runs"] for f in found} >= {float(R.BASE_RUNS + len(R.HISTORY))}
    assert regressions_for_runs(store, [head]) == []  # the default: conclusive only


def test_an_injected_slowdown_is_reported_where_it_is(store: Store) -> None:
    t = R.truth(3)
    _seed(store, R.history_runs(t, 3))
    slow, hit = R.head_run(t, 3, slowdown=1.25, backend="CUTEDSL", tokens=(16, 512, 8192))
    [head] = _seed(store, [slow])
    found = regressions_for_runs(store, [head])
    want = slow.loc[hit, ["num_tokens", "cuda_graph", "comm"]]
    got = {(f["num_tokens"], f["cuda_graph"], f["comm"]) for f in found}
    assert got == {tuple(r) for r in want.itertuples(index=False)}
    assert all(f["backend"] == "CUTEDSL" and f["noise_source"] == "repeats+history" for f in found)
